import { afterEach, describe, expect, it } from "vitest";
import { createPolymarketApi, feedPage } from "../../src/ingest/polymarket/api";
import {
  backoffMs,
  createHttpClient,
  DEFAULT_RETRY,
  redact,
  retryAfterMs,
} from "../../src/ingest/polymarket/http";
import { acquire, rateBucket } from "../../src/ingest/polymarket/limiter";
import { realLeaderboard, realTrades } from "../fixtures-polymarket/payloads";
import { type ApiServer, startApiServer } from "../fixtures-polymarket/servers";
import { FakeClock } from "../helpers/clock";
import { fakeSleep } from "./harness";

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(clock: FakeClock, random = () => 0.5) {
  const sleep = fakeSleep(clock);
  const http = createHttpClient({ fetch: globalThis.fetch, clock, sleep, random });
  return { http, sleep };
}

describe("retries", () => {
  it("waits out a 429's Retry-After (seconds), backs off on a 5xx, then succeeds", async () => {
    server = await startApiServer({ markets: [], trades: realTrades(), leaderboard: [] });
    server.faults.set("/trades", [
      { status: 429, headers: { "retry-after": "7" } },
      { status: 503 },
      { status: 502 },
    ]);
    const clock = new FakeClock();
    const { http, sleep } = client(clock);
    const api = createPolymarketApi(http, {
      dataUrl: server.url,
      gammaUrl: server.url,
      tradesPath: "/trades",
    });
    const page = await api.tradesPage(null, 500);
    expect(page.ok).toBe(true);
    if (page.ok) expect(page.value.items).toHaveLength(5);
    // 7 s as asked; then the backoff of failures 2 and 3 (steps of 1 s and 2 s) with equal
    // jitter at random 0.5: half the step plus a quarter.
    expect(sleep.waits).toEqual([7000, 750, 1500]);
    expect(http.stats).toMatchObject({ requests: 4, retries: 3 });
    expect(server.requests.filter((r) => r.startsWith("/trades"))).toHaveLength(4);
  });

  it("honours Retry-After given as an HTTP date, against the injected clock", async () => {
    server = await startApiServer({ markets: [], trades: [], leaderboard: realLeaderboard() });
    const clock = new FakeClock(Date.parse("2026-07-18T00:00:00Z"));
    server.faults.set("/v1/leaderboard", [
      { status: 429, headers: { "retry-after": "Sat, 18 Jul 2026 00:00:42 GMT" } },
    ]);
    const { http, sleep } = client(clock);
    const api = createPolymarketApi(http, {
      dataUrl: server.url,
      gammaUrl: server.url,
      tradesPath: "/trades",
    });
    const rows = await api.leaderboardPage(0, 50);
    expect(rows.ok && rows.value.length).toBe(50);
    expect(sleep.waits).toEqual([42_000]);
  });

  it("caps every wait, Retry-After included, and gives up after the last attempt", async () => {
    server = await startApiServer({ markets: [], trades: [], leaderboard: [] });
    server.faults.set(
      "/trades",
      Array.from({ length: DEFAULT_RETRY.attempts }, () => ({
        status: 429,
        headers: { "retry-after": "3600" },
      })),
    );
    const clock = new FakeClock();
    const { http, sleep } = client(clock);
    const answer = await http.getJson(`${server.url}/trades`, []);
    expect(answer.ok).toBe(false);
    if (!answer.ok) {
      expect(answer.status).toBe(429);
      expect(answer.reason).toMatch(/HTTP 429.*gave up after 8 attempts/);
    }
    expect(sleep.waits).toEqual(Array(DEFAULT_RETRY.attempts - 1).fill(DEFAULT_RETRY.capMs));
  });

  it("does not retry a 4xx other than 429", async () => {
    server = await startApiServer({ markets: [], trades: [], leaderboard: [] });
    server.faults.set("/trades", [{ status: 404, body: "no such route" }]);
    const { http, sleep } = client(new FakeClock());
    const answer = await http.getJson(`${server.url}/trades`, []);
    expect(answer).toMatchObject({ ok: false, status: 404 });
    expect(sleep.waits).toEqual([]);
  });

  it("retries a refused connection", async () => {
    const down = await startApiServer({ markets: [], trades: [], leaderboard: [] });
    const url = down.url;
    await down.close();
    const { http, sleep } = client(new FakeClock());
    const answer = await http.getJson(`${url}/trades`, []);
    expect(answer.ok).toBe(false);
    expect(sleep.waits).toHaveLength(DEFAULT_RETRY.attempts - 1);
  });

  it("reads Retry-After and computes jittered, capped backoffs", () => {
    const now = Date.parse("2026-07-18T00:00:00Z");
    expect(retryAfterMs("12", now)).toBe(12_000);
    expect(retryAfterMs("Sat, 18 Jul 2026 00:01:00 GMT", now)).toBe(60_000);
    expect(retryAfterMs("Fri, 17 Jul 2026 00:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(backoffMs(1, DEFAULT_RETRY, () => 0)).toBe(250);
    expect(backoffMs(1, DEFAULT_RETRY, () => 0.999999)).toBe(500);
    expect(backoffMs(4, DEFAULT_RETRY, () => 0)).toBe(2000);
    expect(backoffMs(30, DEFAULT_RETRY, () => 1)).toBe(DEFAULT_RETRY.capMs);
  });

  it("keeps API keys in RPC URLs out of messages", () => {
    expect(redact("https://polygon-mainnet.g.alchemy.com/v2/abcdefABCDEF0123456789xyzXYZ")).toBe(
      "https://polygon-mainnet.g.alchemy.com/…",
    );
    expect(redact("https://rpc.example/?apikey=secret")).toBe("https://rpc.example/?…");
    expect(redact("https://gamma-api.polymarket.com/markets?limit=5")).toBe(
      "https://gamma-api.polymarket.com/markets?limit=5",
    );
  });
});

describe("client-side limits", () => {
  it("admits the published 200 /trades requests per 10 s, then waits for the window", async () => {
    const clock = new FakeClock(0);
    const sleep = fakeSleep(clock);
    const overall = rateBucket("data", 1000, 10_000);
    const trades = rateBucket("trades", 200, 10_000);
    for (let i = 0; i < 200; i++) {
      await acquire([overall, trades], clock, sleep);
      clock.advance(10);
    }
    expect(sleep.waits).toEqual([]);
    // The first request went out at t=0; the 201st may go when it leaves the window.
    await acquire([overall, trades], clock, sleep);
    expect(sleep.waits).toEqual([10_000 - 2000]);
    expect(clock.now()).toBe(10_000);
    expect(trades.starts).toHaveLength(200);
  });

  it("counts a request against every bucket it belongs to", async () => {
    const clock = new FakeClock(0);
    const sleep = fakeSleep(clock);
    const overall = rateBucket("data", 3, 10_000);
    const trades = rateBucket("trades", 200, 10_000);
    const leaderboard: (typeof overall)[] = [overall];
    await acquire([overall, trades], clock, sleep);
    await acquire(leaderboard, clock, sleep);
    await acquire(leaderboard, clock, sleep);
    expect(sleep.waits).toEqual([]);
    await acquire([overall, trades], clock, sleep);
    expect(sleep.waits).toEqual([10_000]);
  });
});

describe("feed paging", () => {
  it("reads an offset feed (v1) and a cursor feed (v2)", () => {
    const rows = [{}, {}];
    expect(feedPage(rows, 10, 2, "u")).toEqual({
      ok: true,
      value: { items: rows, next: { offset: 12 } },
    });
    expect(feedPage(rows, 10, 5, "u")).toEqual({ ok: true, value: { items: rows, next: null } });
    expect(
      feedPage({ data: rows, pagination: { has_more: true, next_cursor: "abc" } }, 0, 5, "u"),
    ).toEqual({ ok: true, value: { items: rows, next: { cursor: "abc" } } });
    expect(
      feedPage({ data: rows, pagination: { has_more: false, next_cursor: null } }, 0, 5, "u"),
    ).toEqual({ ok: true, value: { items: rows, next: null } });
    expect(feedPage({ error: "x" }, 0, 5, "u").ok).toBe(false);
  });
});
