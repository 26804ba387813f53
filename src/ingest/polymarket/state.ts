import type { Ingest } from "../ingest";
import type { FeedCursor } from "./api";
import { fail } from "./context";

/**
 * The cursors in `ingest_state`, one JSON value per key. Each is written in the same
 * transaction as the rows of the page it follows, so after a crash the cursor and the rows
 * agree: a restart resumes exactly after the last committed page.
 */

export const STATE_KEYS = {
  markets: "polymarket:markets",
  newMarkets: "polymarket:markets:new",
  marketWaits: "polymarket:markets:waits",
  newestMarket: "polymarket:markets:newest",
  resolutions: "polymarket:resolutions",
  trades: "polymarket:trades",
  fills: "polymarket:chain:fills",
  parkedFills: "polymarket:chain:parked",
  transfers: "polymarket:chain:transfers",
  leaderboard: "polymarket:leaderboard",
  stream: "polymarket:stream",
} as const;

export interface StreamState {
  /** The newest fill time (ms) the socket delivered and the ingester stored. */
  newest_fill: number | null;
  /** When the socket last delivered a message (ms). */
  last_message_at: number | null;
  connected: boolean;
}

/** Outcome token → market, for on-chain fills: "<condition_id>:<0|1>". */
export const tokenKey = (tokenId: string) => `polymarket:token:${tokenId}`;

export interface MarketsState {
  /** Gamma's keyset cursor for the next page of the pass under way; null between passes. */
  after_cursor: string | null;
  /** The pass's end_date_min filter (ms), sent again with every page: the cursor is bound to it. */
  end_date_min: number | null;
  /** When the last pass reached the end of the list. */
  completed_at: number | null;
  /** The pass's latest cursors, to notice one that comes back. */
  seen: string[];
}

/**
 * Discovery of new markets: Gamma's keyset event list newest first, walked each round from its
 * head down to the newest event an earlier walk had seen.
 */
export interface NewMarketsState {
  /** The highest event id a completed walk reached; null before the first walk. */
  newest_event: number | null;
  /** A walk under way: its next cursor, the event id it stops at, the highest id it saw. */
  walk: { after_cursor: string | null; stop_at: number | null; top: number | null } | null;
}

/** The newest market (by Gamma's createdAt) stored so far, whichever path found it, and when. */
export interface NewestMarketState {
  slug: string;
  created_at: number;
  discovered_at: number;
}

/**
 * Fills that arrived before their market was stored. A market waited for is keyed by the
 * condition id or outcome token the fill named; the wait ends when Gamma's market is stored.
 */
export interface MarketWaitsState {
  /** Fills that arrived for a market not stored yet, in all. */
  fills: number;
  /** The longest finished wait (ms) from a fill's arrival to its market being stored. */
  longest_ms: number;
  /** Markets still awaited (Gamma did not answer for them yet): since when, and fills. */
  pending: Record<string, { since: number; fills: number }>;
}

export interface ResolutionsState {
  /** The round robin's position: markets with a higher id are checked next. */
  after_id: number;
}

export interface TradesState {
  /** Every fill of the feed from `floor` up to this time (ms) is stored. */
  covered_to: number | null;
  floor: number;
  /** A walk from the head of the feed back to `stop_at`, under way. */
  walk: {
    next: FeedCursor | null;
    stop_at: number;
    /** The newest fill time the walk saw (its first page): covered_to once it completes. */
    newest: number | null;
    oldest: number | null;
  } | null;
}

export interface BlockState {
  /** The first block the source was started at. */
  start_block: number;
  /** The first block not read yet. */
  next_block: number;
  /** The time of the newest block read with fills in it (ms): fills are stored up to here. */
  covered_to?: number;
}

export interface LeaderboardState {
  /** When the last complete read finished (ms). */
  completed_at: number | null;
  /** A read under way: the next offset. */
  next_offset: number | null;
}

export function loadState<T extends object>(ingest: Ingest, key: string): T | null {
  const text = ingest.getState(key);
  if (text === undefined) return null;
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === "object" && value !== null) return value as T;
  } catch {
    // fall through
  }
  return fail(
    `ingest_state ${key} is unreadable (${text.slice(0, 80)}); delete that row to start this source over`,
  );
}

export function saveState(ingest: Ingest, key: string, value: object): void {
  ingest.setState(key, JSON.stringify(value));
}
