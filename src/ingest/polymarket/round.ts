import { createIngest } from "../ingest";
import { createPolymarketApi } from "./api";
import {
  emptySummary,
  IngestFailure,
  type PolymarketDeps,
  type PolymarketOptions,
  type RoundContext,
  type RoundSummary,
  resolveOptions,
} from "./context";
import { POLYMARKET_LABELS } from "./contracts";
import { createHttpClient, type HttpStats } from "./http";
import { createLedger, type StageName } from "./ledger";
import { realSleep } from "./limiter";
import { createMarketBook } from "./markets";
import { createRpcClient } from "./rpc";
import { ingestChainFills, ingestChainTransfers } from "./stage-chain";
import { readFunding } from "./stage-funding";
import { discoverMarkets, refreshResolutions } from "./stage-markets";
import { ingestTradesFeed } from "./stage-trades";
import { refreshLeaderboard } from "./stage-wallets";

/**
 * One ingest round over every Polymarket source: labels, then the stages, each on its own.
 * A stage that fails (an API that keeps failing, a node that refuses) is recorded in
 * `ingest_stages` and skipped for a backoff that doubles per consecutive failure; the other
 * stages run regardless, so one source never stops another. A record that does not validate is
 * quarantined (stored with its reason) and skipped; it never blocks its page again. Every row
 * goes through the one ingest path (src/ingest/ingest.ts), so new trades reach its hooks; every
 * page commits with its cursor.
 */

export type RoundResult =
  | { ok: true; summary: RoundSummary }
  | { ok: false; reason: string; summary: RoundSummary };

/** The context stages work in; the stream builds one too and keeps it. */
export function createContext(
  deps: PolymarketDeps,
  options: PolymarketOptions,
  summary: RoundSummary,
): RoundContext {
  const opts = resolveOptions(options, deps.clock.now());
  const http = createHttpClient({
    fetch: deps.fetch,
    clock: deps.clock,
    sleep: deps.sleep ?? realSleep,
    random: deps.random ?? Math.random,
    log: deps.log,
  });
  const ledger = createLedger(deps.db);
  return {
    db: deps.db,
    clock: deps.clock,
    log: deps.log,
    ingest: createIngest(deps.db, deps.clock, {
      ...deps.hooks,
      onRefusedTrades(trades, reason) {
        deps.hooks?.onRefusedTrades?.(trades, reason);
        summary.trades_refused += trades.length;
        deps.log.warn({ fills: trades.length, reason }, "polymarket fills refused");
      },
    }),
    http,
    api: createPolymarketApi(http, {
      dataUrl: opts.dataUrl,
      gammaUrl: opts.gammaUrl,
      tradesPath: opts.tradesPath,
    }),
    rpc: opts.rpcUrl ? createRpcClient(http, opts.rpcUrl) : null,
    options: opts,
    sinceGiven: options.since !== undefined && options.since !== null,
    summary,
    ledger,
    quarantine(stage, location, reason, raw) {
      if (ledger.quarantine(stage, location, reason, raw, deps.clock.now())) {
        deps.log.warn({ stage, location, reason }, "polymarket record quarantined");
      }
      summary.quarantined++;
    },
    transaction: (work) => deps.db.writer.transaction(work).immediate(),
    pageDone(stage, page, records, stored) {
      summary.requests = http.stats.requests;
      summary.retries = http.stats.retries;
      opts.onPage?.({ stage, page, records, stored, summary });
    },
  };
}

export async function runPolymarketRound(
  deps: PolymarketDeps,
  options: PolymarketOptions,
): Promise<RoundResult> {
  const summary = emptySummary(options.rpcUrl ? "chain" : "data-api");
  const ctx = createContext(deps, options, summary);
  const opts = ctx.options;
  const book = createMarketBook(ctx, ctx.rpc !== null);
  const failures: string[] = [];
  const skipped: string[] = [];

  const stage = async (name: StageName, work: () => Promise<void>) => {
    if (opts.signal?.aborted) return;
    const health = ctx.ledger.health(name);
    if (health?.next_attempt_at && health.next_attempt_at > deps.clock.now()) {
      skipped.push(name);
      return;
    }
    try {
      await work();
      if (!opts.signal?.aborted) ctx.ledger.succeeded(name, deps.clock.now());
    } catch (error) {
      // Upstream failures are the stage's own; anything else is a bug (or the caller's crash
      // simulation) and unwinds the round, its open page rolled back.
      if (!(error instanceof IngestFailure)) throw error;
      // A request cut short by the stop signal is a stop, not a failure: its page never began.
      if (opts.signal?.aborted) return;
      const reason = error.message;
      const failed = (health?.consecutive_failures ?? 0) + 1;
      const wait = opts.stageBackoffMs * 2 ** Math.min(4, failed - 1);
      ctx.ledger.failed(name, deps.clock.now(), reason, deps.clock.now() + wait);
      deps.log.error({ stage: name, reason, retry_in_ms: wait }, "polymarket ingest stage failed");
      failures.push(`${name}: ${reason}`);
    }
  };

  ctx.transaction(() => {
    for (const label of POLYMARKET_LABELS) ctx.ingest.upsertLabel(label);
  });
  await stage("markets", () => discoverMarkets(ctx, book));
  if (opts.tail) await stage("tail", () => ingestTradesFeed(ctx, book));
  if (ctx.rpc) {
    await stage("fills", () => ingestChainFills(ctx, book));
    await stage("transfers", () => ingestChainTransfers(ctx));
    await stage("funding", () => readFunding(ctx));
  }
  await stage("resolutions", () => refreshResolutions(ctx, book));
  await stage("leaderboard", () => refreshLeaderboard(ctx));
  summary.stopped = opts.signal?.aborted ?? false;
  summary.failed_stages = failures.length > 0 ? failures.join("; ") : null;
  summary.backing_off = skipped.length > 0 ? skipped.join(", ") : null;
  finish(summary, ctx.http.stats);
  return failures.length > 0
    ? { ok: false, reason: failures.join("; "), summary }
    : { ok: true, summary };
}

function finish(summary: RoundSummary, stats: HttpStats): RoundSummary {
  summary.requests = stats.requests;
  summary.retries = stats.retries;
  const deprecated = Object.entries(stats.deprecated).map(([path, note]) => `${path} (${note})`);
  if (deprecated.length > 0) summary.deprecated = deprecated.join("; ");
  return summary;
}

export interface LoopOptions extends PolymarketOptions {
  /** Pause between rounds. */
  intervalMs: number;
  /** After each round, with its outcome. */
  onRound?(result: RoundResult, round: number): void;
  /** A signal that cuts the pause short (the stream reconnected: fill its gap now). */
  wake?(): AbortSignal;
}

export interface LoopResult {
  rounds: number;
  failures: number;
  /** The rounds' counts added up (the last round's cursors and lag). */
  totals: RoundSummary;
  lastError: string | null;
}

/**
 * Rounds until the signal aborts (SIGINT/SIGTERM in the CLI). A failed round is logged and
 * retried after the pause: its committed pages stay, and the next round resumes after them.
 */
export async function runPolymarketLoop(
  deps: PolymarketDeps,
  options: LoopOptions,
): Promise<LoopResult> {
  const sleep = deps.sleep ?? realSleep;
  let totals: RoundSummary | null = null;
  let rounds = 0;
  let failures = 0;
  let lastError: string | null = null;
  while (!options.signal?.aborted) {
    const result = await runPolymarketRound(deps, options);
    rounds++;
    if (!result.ok) {
      failures++;
      lastError = result.reason;
      deps.log.error({ reason: result.reason, round: rounds }, "polymarket ingest round failed");
    }
    totals = totals ? addUp(totals, result.summary) : { ...result.summary };
    options.onRound?.(result, rounds);
    if (options.signal?.aborted) break;
    const wake = options.wake?.();
    const pause =
      wake && options.signal ? AbortSignal.any([options.signal, wake]) : (wake ?? options.signal);
    await sleep(options.intervalMs, pause);
  }
  return {
    rounds,
    failures,
    totals: totals ?? emptySummary(options.rpcUrl ? "chain" : "data-api"),
    lastError,
  };
}

const COUNTS = [
  "requests",
  "retries",
  "markets_pages",
  "markets_new",
  "markets_updated",
  "resolutions_checked",
  "markets_resolved",
  "trades_pages",
  "trades_new",
  "trades_present",
  "trades_refused",
  "maker_fills_skipped",
  "unknown_tokens",
  "transfers_new",
  "wallets_new",
  "wallets_updated",
  "quarantined",
  "markets_voided",
] as const satisfies readonly (keyof RoundSummary)[];

function addUp(total: RoundSummary, round: RoundSummary): RoundSummary {
  const next = { ...round };
  for (const key of COUNTS) next[key] = total[key] + round[key];
  next.gap = round.gap ?? total.gap;
  next.deprecated = round.deprecated ?? total.deprecated;
  // --since only matters to the first round: later ones find the cursors it created.
  next.since_ignored = total.since_ignored;
  return next;
}
