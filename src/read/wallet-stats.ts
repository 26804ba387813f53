import type * as v from "valibot";
import { WHALE_VOLUME_USD } from "../analytics/fill";
import type { PnlSource } from "../analytics/pnl-source";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import type { WalletStatsSchema } from "../schemas/wallets";
import { latestRefreshRun } from "./freshness";

/**
 * WalletStats as the API serves it from a wallet_stats row, and the routing of its PnL as-of
 * (docs/methodology.md, Profit and loss): shared by the wallet endpoints and the leaderboards.
 */
export type WalletStats = NonNullable<v.InferOutput<typeof WalletStatsSchema>>;

export const STATS_COLUMNS = `total_bets, resolved_bets, win_rate, bayesian_win_rate, total_volume,
  total_pnl, pnl_source, pnl_as_of, markets_traded`;

export interface StatsRow {
  total_bets: number;
  resolved_bets: number;
  win_rate: number | null;
  bayesian_win_rate: number | null;
  total_volume: number;
  total_pnl: number | null;
  pnl_source: PnlSource;
  pnl_as_of: number | null;
  markets_traded: number;
}

/**
 * The freshness of a served PnL figure. A platform figure carries its own date. A ledger figure is
 * exact as of the latest refresh (the table stores it without a date, so that an incremental
 * refresh need not rewrite every unchanged wallet). No figure, no date.
 */
export function pnlAsOf(
  source: PnlSource,
  storedAsOf: number | null,
  latestRefreshAt: () => number | null,
): string | null {
  if (source === "platform_api") return iso(storedAsOf);
  // A ledger figure is as of when the wallet's positions were marked (wallet_stats.pnl_as_of);
  // rows written before that was stored fall back to the latest refresh, read only for them.
  if (source === "ledger") return iso(storedAsOf ?? latestRefreshAt());
  return null;
}

export function toWalletStats(row: StatsRow, latestRefreshAt: () => number | null): WalletStats {
  return {
    total_bets: row.total_bets,
    resolved_bets: row.resolved_bets,
    win_rate: row.win_rate,
    bayesian_win_rate: row.bayesian_win_rate,
    total_volume: row.total_volume,
    total_pnl: row.pnl_source === "none" ? null : row.total_pnl,
    pnl_source: row.pnl_source,
    pnl_as_of: pnlAsOf(row.pnl_source, row.pnl_as_of, latestRefreshAt),
    markets_traded: row.markets_traded,
  };
}

/**
 * Per-category PnL is always the ledger's (the platform reports no per-category figure). The
 * ledger misses the splits, merges and conversions of market makers and whales, which is why
 * their overall PnL is routed to `none` (or to the platform's figure): their category figures are
 * withheld for the same reason. The SQL twin of this rule is CATEGORY_PNL_TRUSTED_SQL.
 */
export function categoryPnlTrusted(walletType: string, totalVolume: number): boolean {
  return walletType !== "market_maker" && totalVolume <= WHALE_VOLUME_USD;
}

/** categoryPnlTrusted over wallet_stats aliased `s`. */
export const CATEGORY_PNL_TRUSTED_SQL = `(s.wallet_type <> 'market_maker' AND s.total_volume <= ${WHALE_VOLUME_USD})`;

/**
 * When the read models were last refreshed (epoch ms), or null before the first refresh. A read
 * of its own, so callers ask only when a row needs it (pnlAsOf): most rows carry their date.
 */
export function createLatestRefresh(db: Db): () => number | null {
  const latest = latestRefreshRun(db);
  return () => latest()?.as_of ?? null;
}

/** `get` read at most once, on first call: one latest-refresh read for a page of rows. */
export function once<T>(get: () => T): () => T {
  let read = false;
  let value: T;
  return () => {
    if (!read) {
      value = get();
      read = true;
    }
    return value;
  };
}
