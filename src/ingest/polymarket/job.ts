import type { Config } from "../../config";
import type { Core } from "../../core";
import type { ScheduledJob } from "../../jobs/scheduler";
import type { PolymarketDeps, PolymarketOptions, RoundSummary } from "./context";
import { type RoundResult, runPolymarketRound } from "./round";

export const DEFAULT_DATA_URL = "https://data-api.polymarket.com";
export const DEFAULT_GAMMA_URL = "https://gamma-api.polymarket.com";

/** Where the ingester reads from. */
export interface PolymarketSettings {
  dataUrl: string;
  gammaUrl: string;
  /** No default: without one, fills come from the data API. */
  rpcUrl: string | null;
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

/** The server's ingest job, scheduled only when SMARTMONEY_INGEST_CRON is set. */
export function ingestJob(app: Core, pattern: string): ScheduledJob {
  return {
    name: "ingest",
    pattern,
    async run(): Promise<RoundSummary & { error: string | null }> {
      const result = await ingestOnce(app, {
        signal: AbortSignal.timeout(SCHEDULED_ROUND_BUDGET_MS),
      });
      if (!result.ok) {
        app.deps.log.error({ reason: result.reason }, "polymarket ingest round failed");
      }
      return { ...result.summary, error: result.ok ? null : result.reason };
    },
    idle: (summary) => {
      const s = summary as RoundSummary;
      return s.trades_new === 0 && s.markets_new === 0 && s.transfers_new === 0;
    },
  };
}
