import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRequestListener } from "../../src/http/listener";
import { type Served, servedWorld } from "./lane-servers";
import { A, B, F, fill, HOUR, MARKETS, NOW, type World } from "./wallet-world";

// The answer lane (src/http/answer-lane.ts) sends kept answers before the router. Served over
// real sockets, as `smartmoney serve` serves: every answer it gives must be the router's, headers
// included, and everything else must reach the router (the router alone answers on `routed`).

let servers: Served;
let world: World;
let laned: string;
let routed: string;

beforeEach(async () => {
  servers = await servedWorld();
  ({ world, laned, routed } = servers);
});
afterEach(() => servers.close());

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function get(base: string, path: string, key?: string, method = "GET"): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: res.status, headers, body: await res.text() };
}

/** What must match between two answers: all but the per-request values. */
function comparable(answer: Answer) {
  const { date, "x-request-id": id, "x-ratelimit-remaining": remaining, ...rest } = answer.headers;
  expect(id).toMatch(/^req_[0-9a-f]{20}$/);
  return { status: answer.status, headers: rest, body: withoutRequestId(answer.body) };
}

/** An error envelope repeats its request id; an answer's body is compared without it. */
function withoutRequestId(body: string): unknown {
  if (body === "") return null;
  const parsed = JSON.parse(body);
  if (parsed?.error) delete parsed.error.request_id;
  return parsed;
}

const served = () => world.t.app.lane.served();

describe("the answer lane", () => {
  const paths = [
    "/v1/_ping",
    `/v1/signals/wallet/${A}`,
    `/v1/wallets/${A}`,
    `/v1/wallets/${B}`,
    "/v1/leaderboards/whales?limit=50",
    "/v1/leaderboards/whales?limit=2&sort=winRate",
    `/v1/wallets/${A}/trades?limit=2`,
    `/v1/trades?wallet=${A}&limit=3`,
    `/v1/markets/${MARKETS.m3.slug}`,
  ];

  it("sends the router's answers, headers included, and counts every call once", async () => {
    for (const tier of ["free", "terminal", "terminal_pro"] as const) {
      const key = world.t.key(tier);
      let expectedRemaining: number | undefined;
      for (const path of paths) {
        const router = await get(routed, path, key);
        // The first request through the lane's server reaches the router and keeps the answer,
        // the second is sent by the lane.
        const first = await get(laned, path, key);
        const before = served();
        const second = await get(laned, path, key);
        expect(comparable(first), `${tier} ${path}`).toEqual(comparable(router));
        expect(comparable(second), `${tier} ${path}`).toEqual(comparable(router));
        if (router.status !== 200) {
          // A refused call (a free key on a leaderboard) is never sent by the lane.
          expect(router.status).toBe(403);
          expect(served()).toBe(before);
          continue;
        }
        expect(served(), `${tier} ${path}`).toBe(before + 1);
        // Each of the three calls counted exactly once, whichever path answered it.
        const remaining = [router, first, second].map((a) =>
          Number(a.headers["x-ratelimit-remaining"]),
        );
        expectedRemaining ??= remaining[0]! + 1;
        expect(remaining).toEqual([
          expectedRemaining - 1,
          expectedRemaining - 2,
          expectedRemaining - 3,
        ]);
        expectedRemaining -= 3;
      }
    }
  });

  it("writes the router's request line for an answer it sends", async () => {
    const key = world.t.key("terminal");
    const path = `/v1/signals/wallet/${A}`;
    await get(laned, path, key);
    await get(laned, path, key);
    const lines = world.t.logs.filter((line) => line.msg === "request" && line.path !== undefined);
    const [byRouter, byLane] = lines.slice(-2).map(({ request_id, duration_ms, time, ...rest }) => {
      expect(typeof duration_ms).toBe("number");
      return rest;
    });
    expect(byLane).toEqual(byRouter);
    expect(byLane).toMatchObject({ route: "/v1/signals/wallet/:address", status: 200 });
  });

  it("never sends an answer that a commit or a refresh has made stale", async () => {
    const key = world.t.key("terminal");
    // F traded after the refresh: its signal is scored from its own fills.
    const path = `/v1/signals/wallet/${F}`;
    const before = await get(laned, path, key);
    await get(laned, path, key);
    const sent = served();
    world.trade([fill(F, world.ids.m3, "YES", "BUY", 0.5, 10, NOW + 2 * HOUR)]);
    const after = await get(laned, path, key);
    expect(served()).toBe(sent);
    expect(after.body).not.toEqual(before.body);
    expect(JSON.parse(after.body)).toEqual(JSON.parse((await get(routed, path, key)).body));
    // A page of fills and a market's detail likewise: after a commit, the router answers again
    // (the new fill is in the page; the detail changes with the next refresh).
    const kept = [`/v1/wallets/${F}/trades?limit=5`, `/v1/markets/${MARKETS.m3.slug}`];
    for (const [i, path] of kept.entries()) {
      const first = await get(laned, path, key);
      await get(laned, path, key);
      const keptSent = served();
      world.trade([fill(F, world.ids.m3, "NO", "BUY", 0.4, 7 + i, NOW + 3 * HOUR)]);
      const fresh = await get(laned, path, key);
      expect(served(), path).toBe(keptSent);
      if (i === 0) expect(fresh.body, path).not.toEqual(first.body);
      expect(JSON.parse(fresh.body)).toEqual(JSON.parse((await get(routed, path, key)).body));
    }

    const board = "/v1/leaderboards/whales?limit=50";
    await get(laned, board, key);
    await get(laned, board, key);
    const boardSent = served();
    world.refresh();
    world.t.app.readModelsChanged();
    await get(laned, board, key);
    expect(served()).toBe(boardSent);
  });

  it("tracks only the router's requests for the drain, and sends everything to it while draining", async () => {
    let draining = false;
    let tracked = 0;
    const base = await servers.listen(
      createRequestListener(world.t.app, {
        track: (handler) => (req, res) => {
          tracked += 1;
          if (draining) res.setHeader("Connection", "close");
          handler(req, res);
        },
        draining: () => draining,
      }),
    );
    const key = world.t.key("terminal");
    const path = `/v1/signals/wallet/${A}`;
    await get(base, path, key);
    expect(tracked).toBe(1);
    const sent = served();
    const byLane = await get(base, path, key);
    expect(served()).toBe(sent + 1);
    // Written whole before the handler returned: nothing in flight for a drain to wait for.
    expect(tracked).toBe(1);
    draining = true;
    const whileDraining = await get(base, path, key);
    expect(served()).toBe(sent + 1);
    expect(tracked).toBe(2);
    expect(whileDraining.headers.connection).toBe("close");
    expect(JSON.parse(whileDraining.body)).toEqual(JSON.parse(byLane.body));
  });

  it("leaves every other request to the router", async () => {
    const terminal = world.t.key("terminal", { account: "lane-acct" });
    const mcp = world.t.key("terminal", { account: "lane-acct", kind: "mcp" });
    const path = "/v1/leaderboards/whales?limit=50";
    await get(laned, path, terminal);
    await get(laned, path, terminal);
    const sent = served();
    const cases: [string | undefined, string, number][] = [
      [undefined, "GET", 401],
      ["svc_api_not-a-key", "GET", 401],
      [mcp, "GET", 401],
      [terminal, "HEAD", 200],
    ];
    for (const [key, method, status] of cases) {
      const router = await get(routed, path, key, method);
      const lane = await get(laned, path, key, method);
      expect(lane.status, `${method} ${key}`).toBe(status);
      expect(withoutRequestId(lane.body)).toEqual(withoutRequestId(router.body));
    }
    // Another spelling of the same query is kept apart, first answered by the router.
    await get(laned, "/v1/leaderboards/whales?limit=50&", terminal);
    expect(served()).toBe(sent);

    // A revoked key is refused once its lookup is no longer trusted (accounts.ts KEY_CACHE_MS).
    const keyId = world.t.app.accounts
      .listKeys()
      .find((k) => k.account === "lane-acct" && k.kind === "api")!.id;
    expect(world.t.app.accounts.revokeKey(keyId).ok).toBe(true);
    world.t.clock.advance(1_000);
    expect((await get(laned, path, terminal)).status).toBe(401);
    expect(served()).toBe(sent);
  });

  it("leaves a call it could not count to the router, which counts it once", async () => {
    const key = world.t.key("terminal");
    const path = `/v1/signals/wallet/${A}`;
    const first = await get(laned, path, key);
    const { limiter } = world.t.app;
    const admit = limiter.admit;
    let failures = 0;
    // The ledger's write fails once (a full disk, say), then works again.
    limiter.admit = () => {
      limiter.admit = admit;
      failures += 1;
      throw new Error("disk I/O error");
    };
    const sent = served();
    const second = await get(laned, path, key);
    expect(failures).toBe(1);
    expect(served()).toBe(sent);
    expect(second.status).toBe(200);
    expect(Number(second.headers["x-ratelimit-remaining"])).toBe(
      Number(first.headers["x-ratelimit-remaining"]) - 1,
    );
  });

  it("refuses past the quota as the router does, with nothing counted twice", async () => {
    const key = world.t.key("terminal", { account: "lane-quota" });
    expect(world.t.app.accounts.setLimits("lane-quota", { hourly: 5, monthly: 100 }).ok).toBe(true);
    const path = `/v1/signals/wallet/${A}`;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await get(laned, path, key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const refused = await get(laned, path, key);
    expect(refused.headers["x-ratelimit-remaining"]).toBe("0");
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(JSON.parse(refused.body).error.code).toBe("rate_limited");
  });
});
