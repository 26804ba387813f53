import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quotaOf } from "../../src/auth/admission";
import type { Tier } from "../../src/auth/tiers";
import { type Served, servedWorld } from "./lane-servers";
import { A, type World } from "./wallet-world";

// Admission (src/auth/admission.ts) is one rule with two ways in: the router's middleware and
// the answer lane (src/http/answer-lane.ts). Every case below is played twice, the same requests
// in the same order from twin accounts: once on a server with the lane in front of the router,
// as `smartmoney serve` listens, and once on the router alone. Both must admit, count and refuse
// alike: the same status, error code and quota headers, and the same counts in the ledger.

let servers: Served;
let world: World;
let laned: string;
let routed: string;

beforeAll(async () => {
  servers = await servedWorld();
  ({ world, laned, routed } = servers);
});
afterAll(() => servers.close());

/** One endpoint the answer cache keeps (so the lane may send it) per minimum tier. */
const ENDPOINTS: Record<Tier, string> = {
  free: `/v1/signals/wallet/${A}`,
  terminal: "/v1/leaderboards/whales?limit=50",
  terminal_pro: "/v1/clusters/sybil",
};
const TIERS = Object.keys(ENDPOINTS) as Tier[];

interface Outcome {
  status: number;
  code: string | null;
  /** Every header but the per-request ones (Date, X-Request-Id). */
  headers: Record<string, string>;
  body: unknown;
}

async function get(base: string, path: string, authorization?: string): Promise<Outcome> {
  const res = await fetch(`${base}${path}`, {
    headers: authorization === undefined ? {} : { authorization },
  });
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== "date" && name !== "x-request-id") headers[name] = value;
  });
  const body = JSON.parse(await res.text());
  const code: string | null = body?.error?.code ?? null;
  if (body?.error) delete body.error.request_id;
  return { status: res.status, code, headers, body };
}

const served = () => world.t.app.lane.served();

/** Twin accounts, one per way in, each with an API key of the tier. */
function twins(name: string, tier: Tier) {
  return {
    lane: { account: `${name}-lane`, key: world.t.key(tier, { account: `${name}-lane` }) },
    router: { account: `${name}-router`, key: world.t.key(tier, { account: `${name}-router` }) },
  };
}

/** What the ledger holds for an account: its quota as it stands, nothing counted. */
function ledger(name: string) {
  const account = world.t.app.accounts.list().find((a) => a.name === name);
  if (account === undefined) throw new Error(`no account ${name}`);
  const { admitted, ...quota } = quotaOf(world.t.app.limiter, account);
  return quota;
}

describe("admission, through the answer lane and through the router", () => {
  it("admits and counts every tier at endpoints of every minimum tier alike, and refuses a lower tier", async () => {
    for (const tier of TIERS) {
      const { lane, router } = twins(`tier-${tier}`, tier);
      for (const minTier of TIERS) {
        const path = ENDPOINTS[minTier];
        const label = `${tier} key on a ${minTier} endpoint`;
        const before = served();
        // Twice each: the lane keeps the first answer and sends the second itself.
        for (let i = 0; i < 2; i++) {
          const byLane = await get(laned, path, `Bearer ${lane.key}`);
          const byRouter = await get(routed, path, `Bearer ${router.key}`);
          expect(byLane, label).toEqual(byRouter);
          expect(byLane.headers["x-ratelimit-limit"], label).toBeDefined();
          const allowed = TIERS.indexOf(tier) >= TIERS.indexOf(minTier);
          expect([byLane.status, byLane.code], label).toEqual(
            allowed ? [200, null] : [403, "forbidden"],
          );
        }
        const allowed = TIERS.indexOf(tier) >= TIERS.indexOf(minTier);
        // The lane sent the second answer (or both, if another account of the tier kept it),
        // and never a refusal.
        if (allowed) expect(served() - before, label).toBeGreaterThanOrEqual(1);
        else expect(served(), label).toBe(before);
        expect(ledger(lane.account), label).toEqual(ledger(router.account));
      }
      // Two calls counted for each endpoint the tier may call, none for a refusal.
      const calls = 2 * (TIERS.indexOf(tier) + 1);
      const { limit, remaining } = ledger(lane.account);
      expect(limit - remaining, tier).toBe(calls);
    }
  });

  it("refuses every bad key state alike, with 401 and nothing counted", async () => {
    const world_ = world.t;
    const path = ENDPOINTS.free;
    const good = twins("keys", "terminal");
    const mcp = {
      lane: world_.key("terminal", { account: "keys-lane", kind: "mcp" }),
      router: world_.key("terminal", { account: "keys-router", kind: "mcp" }),
    };
    const revoked = twins("revoked", "terminal");
    // Each way in has an answer kept for the tier, so a lane that skipped a check would send it.
    for (const key of [good.lane.key, good.lane.key, revoked.lane.key, revoked.lane.key]) {
      expect((await get(laned, path, `Bearer ${key}`)).status).toBe(200);
    }
    for (const key of [good.router.key, good.router.key, revoked.router.key, revoked.router.key]) {
      expect((await get(routed, path, `Bearer ${key}`)).status).toBe(200);
    }
    for (const name of ["revoked-lane", "revoked-router"]) {
      const keyId = world_.app.accounts.listKeys().find((k) => k.account === name)!.id;
      expect(world_.app.accounts.revokeKey(keyId).ok).toBe(true);
    }
    // Another process's revocation is seen once the key's lookup is no longer trusted.
    world_.clock.advance(1_000);

    const unknown = `svc_api_${"0".repeat(48)}`;
    const states: [string, string | undefined, string | undefined][] = [
      ["missing", undefined, undefined],
      ["empty", "", ""],
      ["not bearer", `Basic ${good.lane.key}`, `Basic ${good.router.key}`],
      ["no key", "Bearer", "Bearer"],
      ["two words", `Bearer ${good.lane.key} x`, `Bearer ${good.router.key} x`],
      ["unknown", `Bearer ${unknown}`, `Bearer ${unknown}`],
      ["malformed key", "Bearer svc_api_not-a-key", "Bearer svc_api_not-a-key"],
      ["revoked", `Bearer ${revoked.lane.key}`, `Bearer ${revoked.router.key}`],
      ["an MCP key", `Bearer ${mcp.lane}`, `Bearer ${mcp.router}`],
    ];
    const before = served();
    for (const [state, laneHeader, routerHeader] of states) {
      const byLane = await get(laned, path, laneHeader);
      const byRouter = await get(routed, path, routerHeader);
      expect(byLane, state).toEqual(byRouter);
      expect([byLane.status, byLane.code], state).toEqual([401, "unauthorized"]);
      expect(byLane.headers["x-ratelimit-remaining"], state).toBeUndefined();
    }
    expect(served()).toBe(before);
    for (const name of ["keys", "revoked"]) {
      expect(ledger(`${name}-lane`), name).toEqual(ledger(`${name}-router`));
      const { limit, remaining } = ledger(`${name}-lane`);
      expect(limit - remaining, name).toBe(2);
    }
    // A well-formed header in another spelling is the same key to both.
    const spelled = `bearer   ${good.lane.key}  `;
    const byLane = await get(laned, path, spelled);
    const byRouter = await get(routed, path, `bearer   ${good.router.key}  `);
    expect(byLane).toEqual(byRouter);
    expect(byLane.status).toBe(200);
  });

  it("admits up to the hourly cap and refuses past it alike, 429 with Retry-After", async () => {
    const { lane, router } = twins("cap", "terminal");
    for (const name of [lane.account, router.account]) {
      expect(world.t.app.accounts.setLimits(name, { hourly: 3, monthly: 100 }).ok).toBe(true);
    }
    const path = ENDPOINTS.terminal;
    const before = served();
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 5; i++) {
      const byLane = await get(laned, path, `Bearer ${lane.key}`);
      const byRouter = await get(routed, path, `Bearer ${router.key}`);
      expect(byLane, `call ${i + 1}`).toEqual(byRouter);
      expect(ledger(lane.account), `call ${i + 1}`).toEqual(ledger(router.account));
      outcomes.push(byLane);
    }
    // The lane sent admitted calls and left each refusal to the router.
    expect(served() - before).toBeGreaterThanOrEqual(2);
    expect(outcomes.map((o) => [o.status, o.code, o.headers["x-ratelimit-remaining"]])).toEqual([
      [200, null, "2"],
      [200, null, "1"],
      [200, null, "0"],
      [429, "rate_limited", "0"],
      [429, "rate_limited", "0"],
    ]);
    for (const refused of outcomes.slice(3)) {
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      expect(refused.headers["x-ratelimit-limit"]).toBe("3");
    }
    expect(outcomes[2]!.headers["retry-after"]).toBeUndefined();
    // Refusals are not counted: the ledger holds the three admitted calls.
    expect(ledger(lane.account).remaining).toBe(0);
  });
});
