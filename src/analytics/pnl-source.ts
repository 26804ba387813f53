/** Which PnL figure a wallet is served with, and how fresh it is (docs/methodology.md, "Which figure is served"). */

export type PnlSource = "platform_api" | "ledger" | "none";

export interface PnlRoutingFacts {
  /** The platform's own figure from an import, if any. */
  platformPnl: number | null;
  platformPnlAsOf: number | null;
  /** isMarketMaker(...) for the wallet: the predicate, not the first-match type. */
  isMarketMaker: boolean;
  /** isWhale(totalVolume) for the wallet. */
  isWhale: boolean;
  /** Ledger total (realised + settlement + mark) from the refresh. */
  ledgerPnl: number;
  /** Epoch ms of the refresh that computed ledgerPnl. */
  refreshedAt: number;
}

export interface RoutedPnl {
  totalPnl: number | null;
  pnlSource: PnlSource;
  /** Epoch ms; null when the source is `none`, or a platform figure came without a date. */
  pnlAsOf: number | null;
}

/**
 * A platform figure wins whenever one was imported. Without one, market makers and whales get no
 * figure at all: their fills miss the splits, merges and conversions that carry much of their
 * PnL, so a ledger figure would be confidently wrong. Everyone else gets the ledger.
 */
export function routePnl(facts: PnlRoutingFacts): RoutedPnl {
  if (facts.platformPnl !== null) {
    return {
      totalPnl: facts.platformPnl,
      pnlSource: "platform_api",
      pnlAsOf: facts.platformPnlAsOf,
    };
  }
  if (facts.isMarketMaker || facts.isWhale) {
    return { totalPnl: null, pnlSource: "none", pnlAsOf: null };
  }
  return { totalPnl: facts.ledgerPnl, pnlSource: "ledger", pnlAsOf: facts.refreshedAt };
}

/** The PnL leaderboard ranks only wallets with a figure. */
export function ranksOnPnlLeaderboard(pnl: RoutedPnl): boolean {
  return pnl.pnlSource !== "none";
}
