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
  resolutions: "polymarket:resolutions",
  trades: "polymarket:trades",
  fills: "polymarket:chain:fills",
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
