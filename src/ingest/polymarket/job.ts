import type { Config } from "../../config";
import type { Core } from "../../core";
import type { ScheduledJob } from "../../jobs/scheduler";
import type { PolymarketDeps, PolymarketOptions, RoundSummary } from "./context";
import { type RoundResult, runPolymarketRound } from "./round";
import { INGEST_WRITER, type LiveStream, startLiveStream } from "./stream";

export const DEFAULT_DATA_URL = "https://data-api.polymarket.com";
export const DEFAULT_GAMMA_URL = "https://gamma-api.polymarket.com";

/** Where the ingester reads from. */
export interface PolymarketSettings {
  dataUrl: string;
  gammaUrl: string;
  /** No default: without one, fills come from the data API. */
  rpcUrl: string | null;
  /** The Real-Time Data Socket; null leaves it off. */
  streamUrl: string | null;
  /** How far before a new wallet's first fill its funding is read (chain source). */
  fundingHorizonMs: number;
}

/**
 * The settings from the configuration: SMARTMONEY_POLYMARKET_DATA_URL, _GAMMA_URL and
 * SMARTMONEY_POLYGON_RPC_URL, once src/config.ts parses them into these fields; the defaults
 * until then and whenever they are unset.
 */
export function polymarketSettings(config: Config): PolymarketSettings {
  return {
    dataUrl: config.polymarketDataUrl || DEFAULT_DATA_URL,
    gammaUrl: config.polymarketGammaUrl || DEFAULT_GAMMA_URL,
    rpcUrl: config.polygonRpcUrl,
    streamUrl: config.polymarketStreamUrl,
    fundingHorizonMs: config.fundingHorizonMs,
  };
}

/**
 * The app's dependencies for the ingester, with the app's ingest hooks: new trades fire
 * whale and insider signals (and their webhooks) exactly as imported ones do.
 */
export function polymarketDeps(app: Core): PolymarketDeps {
  const { db, clock, log, fetch } = app.deps;
  return { db, clock, log, fetch, hooks: app.ingestHooks };
}

/** A scheduled round stops paging after this long, so it neither overlaps nor holds a shutdown. */
export const SCHEDULED_ROUND_BUDGET_MS = 50_000;

/** One round as `jobs run ingest` runs it. */
export function ingestOnce(
  app: Core,
  options: Partial<PolymarketOptions> = {},
): Promise<RoundResult> {
  return runPolymarketRound(polymarketDeps(app), {
    ...polymarketSettings(app.deps.config),
    ...options,
  });
}

/**
 * The server's ingest job, scheduled only when SMARTMONEY_INGEST_CRON is set. Rounds never
 * overlap: one asked for while another runs (a tick, or the stream's reconnect) runs right after.
 */
export function ingestJob(app: Core, pattern: string): ScheduledJob & { runNow(): void } {
  type Outcome = RoundSummary & { error: string | null };
  let running: Promise<Outcome> | null = null;
  let queued: Promise<Outcome> | null = null;
  const round = async (): Promise<Outcome> => {
    const result = await ingestOnce(app, {
      signal: AbortSignal.timeout(SCHEDULED_ROUND_BUDGET_MS),
    });
    if (!result.ok) {
      app.deps.log.error({ reason: result.reason }, "polymarket ingest round failed");
    }
    return { ...result.summary, error: result.ok ? null : result.reason };
  };
  const gated = (): Promise<Outcome> => {
    if (!running) {
      running = round().finally(() => {
        running = null;
      });
      return running;
    }
    // At most one round waits behind the running one, whoever asks.
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = null;
        return gated();
      });
    return queued;
  };
  return {
    name: "ingest",
    // The live socket reports to the storage watch under the same name: one ingest.
    writer: INGEST_WRITER,
    pattern,
    run: gated,
    runNow() {
      gated().catch((error) =>
        app.deps.log.error({ err: error }, "polymarket ingest round failed"),
      );
    },
    idle: (summary) => {
      const s = summary as RoundSummary;
      return s.trades_new === 0 && s.markets_new === 0 && s.transfers_new === 0;
    },
  };
}

/**
 * The live socket inside `serve` (ingest on and a stream URL set): trades are stored within a
 * second; after a drop, `onReconnect` asks for a round so the tail fills the gap at once.
 */
export function serveStream(app: Core, onReconnect: () => void): LiveStream | null {
  const settings = polymarketSettings(app.deps.config);
  if (!settings.streamUrl) return null;
  return startLiveStream(polymarketDeps(app), settings, { url: settings.streamUrl, onReconnect });
}
