import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ingestJobSummary } from "../../cli/commands/ingest";
import {
  DEFAULT_DATA_URL,
  DEFAULT_GAMMA_URL,
  ingestJob,
  polymarketSettings,
} from "../../src/ingest/polymarket/job";
import { DEFAULT_STREAM_URL } from "../../src/ingest/polymarket/stream";
import {
  feedMarkets,
  realGammaMarkets,
  realLeaderboard,
  replayFeed,
} from "../fixtures-polymarket/payloads";
import { type ApiServer, startApiServer } from "../fixtures-polymarket/servers";
import { createTestApp, type TestApp } from "../helpers/app";

/**
 * The scheduler's job and `jobs run ingest`, on the app as the server builds it. The base URLs
 * come from the configuration fields the ingester reads (set here on the loaded config, as
 * src/config.ts will once it parses the SMARTMONEY_POLYMARKET_* settings).
 */

let server: ApiServer;
let t: TestApp;

beforeEach(async () => {
  server = await startApiServer({
    markets: [...feedMarkets(), ...realGammaMarkets()],
    trades: replayFeed(),
    leaderboard: realLeaderboard(),
  });
  t = createTestApp();
  t.clock.set("2026-07-18T00:00:00Z");
  Object.assign(t.config, { polymarketDataUrl: server.url, polymarketGammaUrl: server.url });
});
afterEach(async () => {
  t.close();
  await server.close();
});

describe("ingest job", () => {
  it("defaults to Polymarket's public hosts and no RPC", () => {
    const other = createTestApp();
    const settings = polymarketSettings(other.config);
    other.close();
    expect(settings).toEqual({
      dataUrl: DEFAULT_DATA_URL,
      gammaUrl: DEFAULT_GAMMA_URL,
      rpcUrl: null,
      streamUrl: DEFAULT_STREAM_URL,
      fundingHorizonMs: 30 * 24 * 3_600_000,
    });
    expect(DEFAULT_STREAM_URL).toBe("wss://ws-live-data.polymarket.com");
    expect(DEFAULT_DATA_URL).toBe("https://data-api.polymarket.com");
    expect(DEFAULT_GAMMA_URL).toBe("https://gamma-api.polymarket.com");
  });

  it("runs a scheduled round from 24 hours back, and is idle when nothing is new", async () => {
    const job = ingestJob(t.app, "*/5 * * * *");
    expect(job).toMatchObject({ name: "ingest", pattern: "*/5 * * * *" });
    const first = (await job.run()) as Record<string, unknown>;
    // The five /trades rows of 17 July; /activity's fills of 14 July are older than 24 hours.
    expect(first).toMatchObject({ error: null, trades_new: 5, stopped: false });
    expect(job.idle?.(first)).toBe(false);
    const second = await job.run();
    expect(job.idle?.(second)).toBe(true);
  });

  it("never overlaps rounds: asks while one runs share one round after it", async () => {
    const job = ingestJob(t.app, "*/5 * * * *");
    const rounds = () => server.requests.filter((r) => r === "/trades?limit=500").length;
    const first = job.run();
    const second = job.run();
    job.runNow();
    const third = job.run();
    const [a, b, c] = (await Promise.all([first, second, third])) as Record<string, unknown>[];
    expect(rounds()).toBe(2);
    // The queued round ran after the first had stored everything.
    expect(a).toMatchObject({ trades_new: 5 });
    expect(b).toMatchObject({ trades_new: 0 });
    expect(c).toBe(b);
  });

  it("`jobs run ingest` returns the round's summary with its lag", async () => {
    const summary = await ingestJobSummary(t.app);
    expect(summary.trades_new).toBe(5);
    expect(summary.lag_seconds).toBe(
      Math.round((Date.parse("2026-07-18T00:00:00Z") - 1_784_327_295_000) / 1000),
    );
  });

  it("`jobs run ingest` fails with the round's reason", async () => {
    server.faults.set("/v1/leaderboard", [{ status: 403, body: "forbidden" }]);
    await expect(ingestJobSummary(t.app)).rejects.toThrow(/v1\/leaderboard.*HTTP 403 forbidden/);
  });
});
