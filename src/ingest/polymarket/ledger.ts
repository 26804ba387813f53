import { createHash } from "node:crypto";
import type { Db, Statement } from "../../db/open";

/**
 * The ingester's own bookkeeping (sql/0009_live_ingest.sql): each stage's health and backoff,
 * quarantined records, known gaps, outcome names and void closes. Writes run inside the
 * caller's transaction where they belong to a page (quarantine, outcomes, voids); stage health
 * is written on its own, after the stage ran.
 */

export const STAGES = [
  "markets",
  "stream",
  "tail",
  "fills",
  "transfers",
  "funding",
  "resolutions",
  "leaderboard",
] as const;
export type StageName = (typeof STAGES)[number];

export interface StageHealth {
  stage: string;
  last_run_at: number | null;
  last_success_at: number | null;
  last_error: string | null;
  last_error_at: number | null;
  consecutive_failures: number;
  errors_total: number;
  next_attempt_at: number | null;
}

export interface Gap {
  id: number;
  source: string;
  from_ts: number;
  to_ts: number;
  reason: string;
  detected_at: number;
  filled_at: number | null;
}

/** A quarantined record is stored at most this long (characters of its JSON). */
const RECORD_CHARS = 4_000;

export interface Ledger {
  health(stage: string): StageHealth | undefined;
  allHealth(): StageHealth[];
  succeeded(stage: string, at: number): void;
  failed(stage: string, at: number, reason: string, retryAt: number): void;
  /** Inside the page's transaction. Returns false when the record was quarantined before. */
  quarantine(stage: string, location: string, reason: string, raw: unknown, at: number): boolean;
  quarantined(): { stage: string; count: number; last_reason: string | null }[];
  recordGap(source: string, from: number, to: number, reason: string, at: number): void;
  /** Marks open gaps lying wholly before `coveredTo` as filled. Returns how many. */
  fillGaps(coveredTo: number, at: number): number;
  openGaps(): Gap[];
  setOutcomeNames(marketId: number, yes: string, no: string): void;
  /** True when the market was not known as void before. */
  setVoid(marketId: number, reason: "split" | "cancelled", closedAt: number | null): boolean;
}

export function createLedger(db: Db): Ledger {
  const w = db.writer;
  const r = db.reader;
  const get = r.prepare("SELECT * FROM ingest_stages WHERE stage = ?") as Statement<
    [string],
    StageHealth
  >;
  const all = r.prepare("SELECT * FROM ingest_stages ORDER BY stage") as Statement<[], StageHealth>;
  const ok = w.prepare(
    `INSERT INTO ingest_stages (stage, last_run_at, last_success_at, consecutive_failures, next_attempt_at)
     VALUES (@stage, @at, @at, 0, NULL)
     ON CONFLICT (stage) DO UPDATE SET last_run_at = @at, last_success_at = @at,
       consecutive_failures = 0, next_attempt_at = NULL`,
  ) as Statement<[{ stage: string; at: number }]>;
  const bad = w.prepare(
    `INSERT INTO ingest_stages (stage, last_run_at, last_error, last_error_at, consecutive_failures, errors_total, next_attempt_at)
     VALUES (@stage, @at, @reason, @at, 1, 1, @retry)
     ON CONFLICT (stage) DO UPDATE SET last_run_at = @at, last_error = @reason, last_error_at = @at,
       consecutive_failures = consecutive_failures + 1, errors_total = errors_total + 1,
       next_attempt_at = @retry`,
  ) as Statement<[{ stage: string; at: number; reason: string; retry: number }]>;
  const putQuarantine = w.prepare(
    `INSERT INTO ingest_quarantine (stage, location, reason, record, record_key, at)
     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (stage, record_key) DO NOTHING`,
  ) as Statement<[string, string, string, string, string, number]>;
  const countQuarantine = r.prepare(
    `SELECT stage, count(*) AS count,
       (SELECT reason FROM ingest_quarantine q2 WHERE q2.stage = q.stage ORDER BY id DESC LIMIT 1) AS last_reason
     FROM ingest_quarantine q GROUP BY stage ORDER BY stage`,
  ) as Statement<[], { stage: string; count: number; last_reason: string | null }>;
  const putGap = w.prepare(
    "INSERT INTO ingest_gaps (source, from_ts, to_ts, reason, detected_at) VALUES (?, ?, ?, ?, ?)",
  ) as Statement<[string, number, number, string, number]>;
  const closeGaps = w.prepare(
    "UPDATE ingest_gaps SET filled_at = ? WHERE filled_at IS NULL AND to_ts <= ?",
  ) as Statement<[number, number]>;
  const gaps = r.prepare(
    "SELECT * FROM ingest_gaps WHERE filled_at IS NULL ORDER BY from_ts",
  ) as Statement<[], Gap>;
  const putOutcomes = w.prepare(
    `INSERT INTO market_outcomes (market_id, yes_name, no_name) VALUES (@id, @yes, @no)
     ON CONFLICT (market_id) DO UPDATE SET yes_name = @yes, no_name = @no
     WHERE yes_name IS NOT @yes OR no_name IS NOT @no`,
  ) as Statement<[{ id: number; yes: string; no: string }]>;
  const putVoid = w.prepare(
    `INSERT INTO market_voids (market_id, reason, closed_at) VALUES (?, ?, ?)
     ON CONFLICT (market_id) DO NOTHING`,
  ) as Statement<[number, string, number | null]>;

  return {
    health: (stage) => get.get(stage),
    allHealth: () => all.all(),
    succeeded: (stage, at) => void ok.run({ stage, at }),
    failed: (stage, at, reason, retryAt) =>
      void bad.run({ stage, at, reason: reason.slice(0, 500), retry: retryAt }),
    quarantine(stage, location, reason, raw, at) {
      const text = (JSON.stringify(raw) ?? String(raw)).slice(0, RECORD_CHARS);
      const key = createHash("sha256").update(text).digest("hex").slice(0, 32);
      return putQuarantine.run(stage, location, reason, text, key, at).changes > 0;
    },
    quarantined: () => countQuarantine.all(),
    recordGap: (source, from, to, reason, at) => void putGap.run(source, from, to, reason, at),
    fillGaps: (coveredTo, at) => closeGaps.run(at, coveredTo).changes,
    openGaps: () => gaps.all(),
    setOutcomeNames: (marketId, yes, no) => void putOutcomes.run({ id: marketId, yes, no }),
    setVoid: (marketId, reason, closedAt) => putVoid.run(marketId, reason, closedAt).changes > 0,
  };
}
