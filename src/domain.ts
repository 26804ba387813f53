/**
 * The domain's shared vocabulary, each word stated once: what a whale is, the market
 * categories, a trade's outcome and side, and how an instant is written in an answer.
 * Everything else (analytics, ingest, refresh, read models, REST, MCP, fixtures) imports it.
 */

/**
 * A whale: a wallet with more than this many USD of total volume (flow, sentiment, PnL routing,
 * wallet typing, the whales leaderboard). Migration 0006's partial indexes repeat it as a SQL
 * literal, because SQLite uses a partial index only for a query whose WHERE states the same
 * literal; test/analytics/domain.test.ts holds the migration and this constant equal.
 */
export const WHALE_VOLUME_USD = 50_000;

/** The threshold as the API's descriptions print it. */
export const WHALE_VOLUME_TEXT = `${WHALE_VOLUME_USD.toLocaleString("en-US")} USD`;

/** The six market categories; a source's other category text is kept as given (lowercased). */
export const CATEGORIES = [
  "politics",
  "crypto",
  "sports",
  "culture",
  "economics",
  "breaking-news",
] as const;
export type Category = (typeof CATEGORIES)[number];

/** A wallet address as callers may write it: 0x and 40 hex digits, either case. */
export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export const OUTCOMES = ["YES", "NO"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const TRADE_SIDES = ["BUY", "SELL"] as const;
export type TradeSide = (typeof TRADE_SIDES)[number];

/** An instant as every answer writes it: ISO 8601 in UTC, with milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** iso() for a nullable instant. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : iso(ms);
}

/**
 * The shortest fill retention (SMARTMONEY_FILL_RETENTION): 30 days, the market sentiment's
 * window, so a compacted market has no fill that any windowed read model or signal fact reads.
 */
export const MIN_FILL_RETENTION_MS = 30 * 24 * 3_600_000;

/** What trade pages say about fill retention (docs/operations.md, "Fill retention"). */
export const FILL_RETENTION_NOTE =
  "Fills sealed into the fill history (SMARTMONEY_FILL_RETENTION) are served as the others are.";
