import { betsFromFills, type MarketFacts, walletBetStats } from "../analytics/bets";
import type { Fill, Outcome } from "../analytics/fill";
import type { Db } from "../db/open";
import type { TradeSide } from "../domain";
import type { WalletStats } from "./wallet-stats";

/**
 * A wallet that traded since the last refresh has no read-model row yet; its bets are folded from
 * its fills on request, up to this many. Past it (only before a first refresh of a large import)
 * the stats are null rather than a figure from part of the record.
 */
export const FALLBACK_FILL_LIMIT = 10_000;

export interface WalletFallback {
  platformName: string | null;
  stats: WalletStats | null;
  /** The Bayesian fallback score's inputs. */
  wins: number;
  resolvedBets: number;
}

interface FillRow {
  market_id: number;
  outcome: Outcome;
  side: TradeSide;
  price: number;
  size: number;
  usd_value: number;
  ts: number;
  category: string | null;
  resolved_outcome: Outcome | null;
  resolved_at: number | null;
}

/**
 * The stats of a wallet not refreshed yet, from its own fills (one range of the trades' wallet
 * index, bounded); undefined when it never traded. Bets, resolutions and wins are exact; PnL
 * needs the refresh's ledger and marks, so only a platform figure is served before then
 * (pnl_source `none` otherwise), and the wallet type waits for the refresh (null).
 */
export function createWalletFallback(db: Db): (address: string) => WalletFallback | undefined {
  const r = db.reader;
  const fills = r.prepare<[string, number], FillRow>(
    `SELECT t.market_id, t.outcome, t.side, t.price, t.size, t.usd_value, t.ts,
            m.category, m.resolved_outcome, m.resolved_at
       FROM trades t JOIN markets m ON m.id = t.market_id
      WHERE t.wallet = ? ORDER BY t.ts, t.id LIMIT +?`,
  );
  const platform = r.prepare<
    [string],
    { name: string | null; pnl: number | null; as_of: number | null }
  >(
    "SELECT platform_name AS name, platform_pnl AS pnl, platform_pnl_as_of AS as_of FROM wallets WHERE address = ?",
  );

  return (address) => {
    const rows = fills.all(address, FALLBACK_FILL_LIMIT + 1);
    if (rows.length === 0) return undefined;
    const facts = platform.get(address);
    const platformName = facts?.name ?? null;
    if (rows.length > FALLBACK_FILL_LIMIT) {
      return { platformName, stats: null, wins: 0, resolvedBets: 0 };
    }
    const markets = new Map<number, MarketFacts>();
    const asFills = rows.map((row): Fill => {
      markets.set(row.market_id, {
        category: row.category,
        resolvedOutcome: row.resolved_outcome,
        resolvedAt: row.resolved_at,
      });
      return {
        wallet: address,
        marketId: row.market_id,
        outcome: row.outcome,
        side: row.side,
        price: row.price,
        size: row.size,
        usd: row.usd_value,
        ts: row.ts,
      };
    });
    const totals = walletBetStats(betsFromFills(asFills, (id) => markets.get(id)));
    const platformPnl = facts?.pnl ?? null;
    const asOf = platformPnl === null ? null : (facts?.as_of ?? null);
    return {
      platformName,
      wins: totals.wins,
      resolvedBets: totals.resolvedBets,
      stats: {
        total_bets: totals.totalBets,
        resolved_bets: totals.resolvedBets,
        win_rate: totals.winRate,
        bayesian_win_rate: totals.bayesianWinRate,
        total_volume: totals.totalVolume,
        total_pnl: platformPnl,
        pnl_source: platformPnl === null ? "none" : "platform_api",
        pnl_as_of: asOf === null ? null : new Date(asOf).toISOString(),
        markets_traded: totals.marketsTraded,
      },
    };
  };
}
