import type { Clock } from "../../clock";
import type { Db, Statement } from "../../db/open";
import { iso, isoOrNull } from "../../domain";
import { CATEGORIES } from "./gamma";
import { createLedger, STAGES } from "./ledger";
import type {
  BlockState,
  MarketWaitsState,
  NewestMarketState,
  StreamState,
  TradesState,
} from "./state";
import { STATE_KEYS } from "./state";

/**
 * What `smartmoney ingest status` prints and /metrics serves: per source (stage), when it last
 * succeeded, how far its fills trail now, its errors and whether it is backing off; then the
 * records quarantined, the known gaps and the markets whose category is unknown. Read-only.
 */

export interface SourceStatus {
  stage: string;
  last_success: string | null;
  /** Now minus the newest fill this source has stored up to (sources that store fills). */
  lag_seconds: number | null;
  consecutive_failures: number;
  errors_total: number;
  last_error: string | null;
  last_error_at: string | null;
  /** Set while the stage backs off after failures. */
  next_attempt_at: string | null;
}

export interface IngestStatus {
  now: string;
  /** Now minus the newest stored fill, whatever its source. */
  lag_seconds: number | null;
  newest_fill: string | null;
  sources: SourceStatus[];
  quarantined_total: number;
  quarantined: { stage: string; count: number; last_reason: string | null }[];
  gaps: { source: string; from: string; to: string; reason: string; detected_at: string }[];
  markets: number;
  /** Markets whose event carries no tag that maps onto one of the six categories. */
  categories_unknown: number;
  /** The newest market (by Gamma's creation time) stored, and when it was discovered. */
  newest_market: { slug: string; created_at: string; discovered_at: string } | null;
  /** Fills that arrived before their market was stored (each looked it up at once). */
  fills_waited_for_market: number;
  /** The longest such wait, from the fill's arrival to its market stored (ongoing ones too). */
  longest_market_wait_seconds: number | null;
  /** Markets fills are still waiting for: Gamma has not answered for them yet. */
  markets_awaited: number;
  stream_connected: boolean | null;
}

export function ingestStatus(db: Db, clock: Clock): IngestStatus {
  const now = clock.now();
  const ledger = createLedger(db);
  const state = db.reader
    .prepare("SELECT value FROM ingest_state WHERE key = ?")
    .pluck() as Statement<[string], string>;
  const read = <T>(key: string): T | null => {
    const text = state.get(key);
    if (text === undefined) return null;
    try {
      return JSON.parse(text) as T;
    } catch {
      return null;
    }
  };
  const lag = (ms: number | null | undefined) =>
    ms === null || ms === undefined ? null : Math.max(0, Math.round((now - ms) / 1000));

  const tail = read<TradesState>(STATE_KEYS.trades);
  const fills = read<BlockState>(STATE_KEYS.fills);
  const stream = read<StreamState>(STATE_KEYS.stream);
  const newestMarket = read<NewestMarketState>(STATE_KEYS.newestMarket);
  const waits = read<MarketWaitsState>(STATE_KEYS.marketWaits);
  const awaited = Object.values(waits?.pending ?? {});
  const longestWait = Math.max(waits?.longest_ms ?? 0, ...awaited.map((w) => now - w.since));
  const covered: Record<string, number | null | undefined> = {
    tail: tail?.covered_to,
    fills: fills?.covered_to,
    stream: stream?.newest_fill,
  };
  const health = new Map(ledger.allHealth().map((h) => [h.stage, h]));
  const sources: SourceStatus[] = STAGES.filter((s) => health.has(s) || covered[s] != null).map(
    (stage) => {
      const h = health.get(stage);
      return {
        stage,
        last_success: isoOrNull(h?.last_success_at ?? null),
        lag_seconds: stage in covered ? lag(covered[stage]) : null,
        consecutive_failures: h?.consecutive_failures ?? 0,
        errors_total: h?.errors_total ?? 0,
        last_error: h?.last_error ?? null,
        last_error_at: isoOrNull(h?.last_error_at ?? null),
        next_attempt_at:
          h?.next_attempt_at && h.next_attempt_at > now ? iso(h.next_attempt_at) : null,
      };
    },
  );

  const newest = db.reader.prepare("SELECT max(ts) FROM trades").pluck().get() as number | null;
  const markets = db.reader.prepare("SELECT count(*) FROM markets").pluck().get() as number;
  const known = CATEGORIES.map(() => "?").join(", ");
  const unknown = db.reader
    .prepare(`SELECT count(*) FROM markets WHERE category IS NULL OR category NOT IN (${known})`)
    .pluck()
    .get(...CATEGORIES) as number;
  const quarantined = ledger.quarantined();
  return {
    now: new Date(now).toISOString(),
    lag_seconds: lag(newest),
    newest_fill: isoOrNull(newest ?? null),
    sources,
    quarantined_total: quarantined.reduce((sum, q) => sum + q.count, 0),
    quarantined,
    gaps: ledger.openGaps().map((g) => ({
      source: g.source,
      from: iso(g.from_ts),
      to: iso(g.to_ts),
      reason: g.reason,
      detected_at: iso(g.detected_at),
    })),
    markets,
    categories_unknown: unknown,
    newest_market: newestMarket
      ? {
          slug: newestMarket.slug,
          created_at: iso(newestMarket.created_at),
          discovered_at: iso(newestMarket.discovered_at),
        }
      : null,
    fills_waited_for_market: waits?.fills ?? 0,
    longest_market_wait_seconds: waits ? Math.round(longestWait / 100) / 10 : null,
    markets_awaited: awaited.length,
    stream_connected: stream ? stream.connected : null,
  };
}

/** The status as lines for a terminal. */
export function formatStatus(s: IngestStatus): string {
  const lines = [
    `ingest status at ${s.now}`,
    `  newest fill        ${s.newest_fill ?? "none"}${s.lag_seconds === null ? "" : ` (lag ${s.lag_seconds}s)`}`,
    `  stream             ${s.stream_connected === null ? "never ran" : s.stream_connected ? "connected" : "disconnected"}`,
    `  markets            ${s.markets} (${s.categories_unknown} with category unknown)`,
    `  newest market      ${s.newest_market ? `${s.newest_market.slug}, created ${s.newest_market.created_at}, discovered ${s.newest_market.discovered_at}` : "none"}`,
    `  fills waited       ${s.fills_waited_for_market} for their market (longest ${s.longest_market_wait_seconds === null ? "-" : `${s.longest_market_wait_seconds}s`}; ${s.markets_awaited} markets awaited now)`,
    `  quarantined        ${s.quarantined_total}`,
    `  known gaps         ${s.gaps.length}`,
    "",
    "  source       last success              lag      failures  errors  state",
  ];
  for (const src of s.sources) {
    const state = src.next_attempt_at
      ? `backing off until ${src.next_attempt_at}: ${src.last_error}`
      : src.consecutive_failures > 0
        ? `failing: ${src.last_error}`
        : "ok";
    lines.push(
      `  ${src.stage.padEnd(12)} ${(src.last_success ?? "never").padEnd(25)} ${(src.lag_seconds === null ? "-" : `${src.lag_seconds}s`).padEnd(8)} ${String(src.consecutive_failures).padEnd(9)} ${String(src.errors_total).padEnd(7)} ${state}`,
    );
  }
  for (const q of s.quarantined) {
    lines.push(`  quarantined in ${q.stage}: ${q.count} (latest: ${q.last_reason ?? "?"})`);
  }
  for (const g of s.gaps) lines.push(`  gap in ${g.source}: ${g.from} to ${g.to} (${g.reason})`);
  return lines.join("\n");
}
