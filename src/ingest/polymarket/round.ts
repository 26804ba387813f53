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
import { createHttpClient } from "./http";
import { realSleep } from "./limiter";
import { createMarketBook } from "./markets";
import { createRpcClient } from "./rpc";
import { ingestChainFills, ingestChainTransfers } from "./stage-chain";
import { listMarkets, refreshResolutions } from "./stage-markets";
import { ingestTradesFeed } from "./stage-trades";
import { refreshLeaderboard } from "./stage-wallets";

/**
 * One ingest round over every Polymarket source, in order: labels, Gamma markets, fills (the
 * chain when an RPC URL is set, else the data API feed), transfers (chain only), resolutions,
 * the leaderboard. Every row goes through the one ingest path (src/ingest/ingest.ts), so new
 * trades reach its hooks; every page commits with its cursor.
 *
 * Fills come from ONE source: the data API has no log index, so the same fill read from both
 * would be stored twice under different keys.
 */

export type RoundResult =
  | { ok: true; summary: RoundSummary }
  | { ok: false; reason: string; summary: RoundSummary };

export async function runPolymarketRound(
  deps: PolymarketDeps,
  options: PolymarketOptions,
): Promise<RoundResult> {
  const opts = resolveOptions(options, deps.clock.now());
  const summary = emptySummary(opts.rpcUrl ? "chain" : "data-api");
  const http = createHttpClient({
    fetch: deps.fetch,
    clock: deps.clock,
    sleep: deps.sleep ?? realSleep,
    random: deps.random ?? Math.random,
    log: deps.log,
  });
  const writer = deps.db.writer;
  const ctx: RoundContext = {
    db: deps.db,
    clock: deps.clock,
    log: deps.log,
    ingest: createIngest(deps.db, deps.clock, deps.hooks),
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
    transaction: (work) => writer.transaction(work).immediate(),
    pageDone(stage, page, records, stored) {
      summary.requests = http.stats.requests;
      summary.retries = http.stats.retries;
      opts.onPage?.({ stage, page, records, stored, summary });
    },
  };
  const book = createMarketBook(ctx, ctx.rpc !== null);

  try {
    ctx.transaction(() => {
      for (const label of POLYMARKET_LABELS) ctx.ingest.upsertLabel(label);
    });
    if (opts.listMarkets) await listMarkets(ctx, book);
    if (ctx.rpc) {
      await ingestChainFills(ctx, book);
      await ingestChainTransfers(ctx);
    } else {
      await ingestTradesFeed(ctx, book);
    }
    await refreshResolutions(ctx, book);
    await refreshLeaderboard(ctx);
    summary.stopped = opts.signal?.aborted ?? false;
    return { ok: true, summary: finish(summary, http.stats) };
  } catch (error) {
    if (!(error instanceof IngestFailure)) throw error;
    // A request cut short by the stop signal is a stop, not a failure: its page never began.
    if (opts.signal?.aborted) {
      summary.stopped = true;
      return { ok: true, summary: finish(summary, http.stats) };
    }
    return { ok: false, reason: error.message, summary: finish(summary, http.stats) };
  }
}

function finish(summary: RoundSummary, stats: { requests: number; retries: number }): RoundSummary {
  summary.requests = stats.requests;
  summary.retries = stats.retries;
  return summary;
}

export interface LoopOptions extends PolymarketOptions {
  /** Pause between rounds. */
  intervalMs: number;
  /** After each round, with its outcome. */
  onRound?(result: RoundResult, round: number): void;
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
    await sleep(options.intervalMs, options.signal);
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
  "maker_fills_skipped",
  "unknown_tokens",
  "transfers_new",
  "wallets_new",
  "wallets_updated",
] as const satisfies readonly (keyof RoundSummary)[];

function addUp(total: RoundSummary, round: RoundSummary): RoundSummary {
  const next = { ...round };
  for (const key of COUNTS) next[key] = total[key] + round[key];
  next.gap = round.gap ?? total.gap;
  // --since only matters to the first round: later ones find the cursors it created.
  next.since_ignored = total.since_ignored;
  return next;
}
