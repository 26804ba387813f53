/**
 * Every limit the Polymarket simulator applies, in one place. The figures are Polymarket's as
 * reported by API users in mid 2026 (see docs/ingest.md, "Polymarket's limits"); tests and the
 * live bench may override any of them per run.
 */
export interface SimLimits {
  /** Gamma list `limit` is silently clamped to this. */
  gammaMaxLimit: number;
  /** Gamma offset lists answer 422 past this offset. */
  gammaMaxOffset: number;
  /** The offset lists' Sunset header (an HTTP date) and Deprecation header. */
  gammaSunset: string;
  gammaDeprecation: string;
  /** Data API /trades: `limit` clamp, and 400 past this offset. */
  tradesMaxLimit: number;
  tradesMaxOffset: number;
  /** Data API leaderboard: `limit` at most, `offset` at most (400 past it). */
  leaderboardMaxLimit: number;
  leaderboardMaxOffset: number;
  /** eth_getLogs over more blocks than this answers "range too large" (-32005). */
  rpcMaxBlockRange: number;
  /** Seconds per Polygon block. */
  blockSeconds: number;
  /** Blocks between the newest fill and the head the node reports (the ingester's confirmations sit below). */
  headLeadBlocks: number;
}

export const POLYMARKET_LIMITS: SimLimits = {
  gammaMaxLimit: 100,
  gammaMaxOffset: 2_000,
  gammaSunset: "Fri, 01 May 2026 00:00:00 GMT",
  gammaDeprecation: "true",
  tradesMaxLimit: 500,
  tradesMaxOffset: 10_000,
  leaderboardMaxLimit: 50,
  leaderboardMaxOffset: 1_000,
  rpcMaxBlockRange: 1_000,
  blockSeconds: 2,
  headLeadBlocks: 0,
};

/** Faults the simulator can be told to answer with, once each, per route. */
export type SimFault =
  | { kind: "429"; retryAfterSeconds?: number }
  | { kind: "502-html" }
  | { kind: "hang"; ms: number }
  | { kind: "malformed" }
  | { kind: "partial" };
