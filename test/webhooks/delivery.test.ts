import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Channel } from "../../src/webhooks/endpoints";
import { verifySignature } from "../../src/webhooks/signer";
import { createTestApp, type TestApp } from "../helpers/app";
import {
  accountWithKey,
  answer,
  type Behaviour,
  type Received,
  type Receiver,
  seedMarkets,
  sequence,
  signalOn,
  slow,
  startReceiver,
  WALLET_A,
} from "./world";

// Long enough for a loopback answer on a loaded machine (300 ms missed it under a load of 12);
// the slow receivers below wait far longer.
const TIMEOUT_MS = 1_500;
const LEASE_MS = TIMEOUT_MS + 30_000;

let t: TestApp;
const receivers: Receiver[] = [];

beforeEach(() => {
  t = createTestApp({
    env: {
      SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
      SMARTMONEY_WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms`,
      SMARTMONEY_PUBLIC_URL: "https://smartmoney.example.com",
    },
  });
  seedMarkets(t);
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  t.close();
});

async function receiver(behaviour?: Behaviour): Promise<Receiver> {
  const r = await startReceiver(behaviour);
  receivers.push(r);
  return r;
}

/** An endpoint on a fresh account (or the named one); dashboard endpoints follow WALLET_A directly. */
function endpoint(url: string, channel: Channel = "api", accountName?: string) {
  const name = accountName ?? `acct-${Math.random().toString(16).slice(2, 10)}`;
  const account = t.app.accounts.get(name)
    ? { id: t.app.accounts.get(name)!.id, key: "" }
    : accountWithKey(t, name);
  if (channel === "dashboard") t.app.webhooks.follows.followWallet(account.id, WALLET_A);
  const created = t.app.webhooks.endpoints.create({
    accountId: account.id,
    tier: "terminal",
    channel,
    callbackUrl: url,
  });
  if (!created.ok) throw new Error(created.reason);
  return { ...created.value.endpoint, secret: created.value.secret, key: account.key };
}

function deliveryOf(endpointId: string) {
  return t.db.writer
    .prepare(
      "SELECT id, status, attempts, next_attempt_at, last_status_code, last_error, delivered_at FROM deliveries WHERE endpoint_id = ?",
    )
    .get(endpointId) as {
    id: string;
    status: string;
    attempts: number;
    next_attempt_at: number | null;
    last_status_code: number | null;
    last_error: string | null;
    delivered_at: number | null;
  };
}

function verified(request: Received, secret: string): boolean {
  return verifySignature(
    secret,
    request.headers["x-service-timestamp"] as string,
    request.raw,
    request.headers["x-service-signature"] as string,
    t.clock.now(),
  );
}

const drain = () => t.app.webhooks.drainer.drainOnce();

describe("delivering a signal", () => {
  it("POSTs the documented payload, signed, with the service headers; one attempt, delivered", async () => {
    const r = await receiver(answer(204));
    const e = endpoint(r.url());
    const { signalId } = t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    expect(await drain()).toEqual({ claimed: 1, delivered: 1, retrying: 0, dead: 0 });

    expect(r.received).toHaveLength(1);
    const [request] = r.received;
    expect(request!.path).toBe("/hook");
    expect(request!.headers["content-type"]).toMatch(/^application\/json/);
    expect(request!.headers["user-agent"]).toBe("Service-Webhooks/1");
    expect(request!.headers["x-service-timestamp"]).toBe(String(t.clock.now()));
    expect(request!.headers["x-service-delivery-id"]).toBe(deliveryOf(e.id).id);
    expect(verified(request!, e.secret)).toBe(true);
    expect(verified(request!, `${e.secret}x`)).toBe(false);
    expect(JSON.parse(request!.raw)).toStrictEqual({
      event: "signal.whale",
      signal: {
        type: "whale",
        id: signalId,
        score: 72,
        betValue: 15000,
        side: "BUY",
        outcome: "YES",
        price: 0.3,
        explanation: "A 15,000 USD buy of YES at 0.30 by a wallet scoring 72.",
        createdAt: new Date(t.clock.now()).toISOString(),
      },
      wallet: {
        address: WALLET_A,
        type: "whale",
        profileUrl: `https://smartmoney.example.com/v1/wallets/${WALLET_A}`,
      },
      market: { title: "Who wins in 2028?", category: "politics", slug: "election-2028" },
    });
    expect(deliveryOf(e.id)).toMatchObject({
      status: "delivered",
      attempts: 1,
      next_attempt_at: null,
      last_status_code: 204,
      last_error: null,
      delivered_at: t.clock.now(),
    });
    // Nothing is due any more.
    expect(await drain()).toEqual({ claimed: 0, delivered: 0, retrying: 0, dead: 0 });
    expect(r.received).toHaveLength(1);
  });

  it("sends followed-wallet alerts to dashboard endpoints with followedVia", async () => {
    const r = await receiver();
    const e = endpoint(r.url(), "dashboard");
    t.app.webhooks.outbox.enqueueSignal(signalOn(t, { type: "insider", score: 91 }));
    await drain();
    const body = JSON.parse(r.received[0]!.raw);
    expect(body.event).toBe("alert.followed_wallet");
    expect(body.followedVia).toBe("wallet");
    expect(body.alert).toMatchObject({ type: "insider", score: 91 });
    expect(body.signal).toBeUndefined();
    expect(verified(r.received[0]!, e.secret)).toBe(true);
  });
});

describe("failures and retries", () => {
  it("retries a 500 after the first backoff and delivers on the second attempt", async () => {
    const r = await receiver(sequence([500], 200));
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    const start = t.clock.now();
    expect(await drain()).toMatchObject({ claimed: 1, retrying: 1 });
    expect(deliveryOf(e.id)).toMatchObject({
      status: "pending",
      attempts: 1,
      next_attempt_at: start + 5_000,
      last_status_code: 500,
      last_error: "HTTP 500",
    });
    // Not due before the backoff has passed.
    t.clock.advance(4_999);
    expect(await drain()).toMatchObject({ claimed: 0 });
    t.clock.advance(1);
    expect(await drain()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(deliveryOf(e.id)).toMatchObject({
      status: "delivered",
      attempts: 2,
      last_status_code: 200,
    });

    const [first, second] = r.received;
    expect(first!.headers["x-service-delivery-id"]).toBe(second!.headers["x-service-delivery-id"]);
    expect(first!.raw).toBe(second!.raw);
    // A fresh timestamp, and so a fresh signature, on every attempt.
    expect(Number(second!.headers["x-service-timestamp"])).toBe(start + 5_000);
    expect(first!.headers["x-service-signature"]).not.toBe(second!.headers["x-service-signature"]);
    expect(verified(second!, e.secret)).toBe(true);

    const shown = t.app.webhooks.deliveries.get(deliveryOf(e.id).id)!;
    expect(shown.attemptLog.map((a) => [a.attempt, a.statusCode, a.error])).toEqual([
      [1, 500, "HTTP 500"],
      [2, 200, null],
    ]);
    expect(shown.attemptLog[0]!.responseExcerpt).toBe("status 500");
  });

  it("counts a redirect as a failure and does not follow it", async () => {
    const elsewhere = await receiver();
    const r = await receiver(answer(302, { location: elsewhere.url("/stolen") }));
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    expect(await drain()).toMatchObject({ retrying: 1 });
    expect(deliveryOf(e.id)).toMatchObject({ status: "pending", last_status_code: 302 });
    expect(deliveryOf(e.id).last_error).toMatch(/redirect/);
    expect(elsewhere.received).toHaveLength(0);
  });

  it("counts no answer within the timeout as a failure", async () => {
    const r = await receiver(slow(10_000));
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    expect(await drain()).toMatchObject({ retrying: 1 });
    expect(deliveryOf(e.id)).toMatchObject({
      status: "pending",
      attempts: 1,
      last_status_code: null,
      last_error: "timeout",
    });
  });

  it("marks a delivery dead after the 4th failure, never retries it, and replays it on demand", async () => {
    const r = await receiver(sequence([500, 503, 404, 500], 200));
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    const results = [];
    for (const wait of [0, 5_000, 30_000, 300_000]) {
      t.clock.advance(wait);
      results.push(await drain());
    }
    expect(results.map((s) => [s.claimed, s.retrying, s.dead])).toEqual([
      [1, 1, 0],
      [1, 1, 0],
      [1, 1, 0],
      [1, 0, 1],
    ]);
    const dead = deliveryOf(e.id);
    expect(dead).toMatchObject({
      status: "dead",
      attempts: 4,
      next_attempt_at: null,
      last_status_code: 500,
    });
    t.clock.advance(3_600_000);
    expect(await drain()).toMatchObject({ claimed: 0 });
    expect(r.received).toHaveLength(4);

    // Listed among the customer's recent deliveries as dead.
    const listed = await t.get(`/v1/webhooks/${e.id}/deliveries?status=dead`, e.key);
    const page = (await listed.json()) as { data: { id: string; attempts: number }[] };
    expect(page.data).toEqual([expect.objectContaining({ id: dead.id, attempts: 4 })]);

    expect(t.app.webhooks.deliveries.replay([dead.id])).toEqual({ ok: true, value: [dead.id] });
    expect(deliveryOf(e.id)).toMatchObject({
      status: "pending",
      attempts: 0,
      next_attempt_at: t.clock.now(),
    });
    expect(await drain()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(deliveryOf(e.id)).toMatchObject({ status: "delivered", attempts: 1 });
    const replayed = r.received[4]!;
    expect(replayed.headers["x-service-delivery-id"]).toBe(dead.id);
    expect(replayed.headers["x-service-timestamp"]).toBe(String(t.clock.now()));
    expect(verified(replayed, e.secret)).toBe(true);
    expect(t.app.webhooks.deliveries.get(dead.id)!.attemptLog).toHaveLength(5);
    // A delivered one can be replayed too; a pending one cannot.
    expect(t.app.webhooks.deliveries.replay([dead.id, "dlv_nope"])).toMatchObject({ ok: false });
    expect(deliveryOf(e.id).status).toBe("delivered");
  });

  it("sends nothing more once the endpoint is removed", async () => {
    const r = await receiver(answer(500));
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    await drain();
    expect(t.app.webhooks.endpoints.remove(e.id)).toBe(true);
    t.clock.advance(5_000);
    expect(await drain()).toMatchObject({ claimed: 0 });
    expect(r.received).toHaveLength(1);
    expect(deliveryOf(e.id)).toMatchObject({ status: "dead", last_error: "endpoint removed" });
    expect(t.app.webhooks.deliveries.replay([deliveryOf(e.id).id])).toMatchObject({ ok: false });
  });
});

describe("the drainer's leases and limits", () => {
  it("retakes a delivery claimed by a process that died once its lease has lapsed", async () => {
    const r = await receiver();
    const e = endpoint(r.url());
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    // Another process claims it and dies before recording anything.
    const taken = t.app.webhooks.deliveries.claim({ limit: 10, perEndpoint: 2, leaseMs: LEASE_MS });
    expect(taken.map((c) => c.endpointId)).toEqual([e.id]);

    expect(await drain()).toMatchObject({ claimed: 0 });
    t.clock.advance(LEASE_MS);
    expect(await drain()).toMatchObject({ claimed: 0 });
    t.clock.advance(1);
    expect(await drain()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers["x-service-delivery-id"]).toBe(taken[0]!.id);

    // The dead process's late result cannot overwrite the state the living one recorded.
    const status = t.app.webhooks.deliveries.record(taken[0]!, {
      ok: false,
      retryable: true,
      statusCode: 500,
      error: "HTTP 500",
      responseExcerpt: null,
      startedAt: t.clock.now(),
      durationMs: 1,
    });
    expect(status).toBeNull();
    expect(deliveryOf(e.id)).toMatchObject({ status: "delivered", attempts: 1 });
  });

  it("keeps at most 2 requests in flight per endpoint, so a slow endpoint does not hold up others", async () => {
    const slowOne = await receiver(slow(150));
    const fastOne = await receiver();
    const a = endpoint(slowOne.url());
    const b = endpoint(fastOne.url());
    for (let i = 0; i < 6; i++) t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    expect(await drain()).toEqual({ claimed: 12, delivered: 12, retrying: 0, dead: 0 });
    expect(slowOne.received).toHaveLength(6);
    expect(fastOne.received).toHaveLength(6);
    expect(slowOne.maxConcurrent).toBe(2);
    expect(fastOne.maxConcurrent).toBeLessThanOrEqual(2);
    for (const id of [a.id, b.id]) {
      const rows = t.db.writer
        .prepare("SELECT DISTINCT status FROM deliveries WHERE endpoint_id = ?")
        .all(id);
      expect(rows).toEqual([{ status: "delivered" }]);
    }
  });
});

describe("fairness between tenants", () => {
  it("deals the sender's slots round-robin between accounts, each capped, so hogs cannot starve another", () => {
    // Two tenants with ten endpoints each, all with older due work than a third tenant's one.
    const hogs = ["hog-a", "hog-b"];
    for (const hog of hogs) {
      for (let i = 0; i < 10; i++) endpoint(`http://127.0.0.1:9/${hog}/${i}`, "api", hog);
    }
    for (let i = 0; i < 2; i++) t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    t.clock.advance(1_000);
    const fast = endpoint("http://127.0.0.1:9/fast", "api", "fast-tenant");
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));

    const limits = { limit: 32, perEndpoint: 2, perAccount: 8, leaseMs: LEASE_MS };
    const taken = t.app.webhooks.deliveries.claim(limits);
    const accountOf = (endpointId: string) => t.app.webhooks.endpoints.get(endpointId)!.accountId;
    const byAccount = new Map<number, number>();
    for (const c of taken) {
      byAccount.set(accountOf(c.endpointId), (byAccount.get(accountOf(c.endpointId)) ?? 0) + 1);
    }
    expect(byAccount.get(t.app.accounts.get("fast-tenant")!.id)).toBe(1);
    for (const hog of hogs) expect(byAccount.get(t.app.accounts.get(hog)!.id)).toBe(8);
    expect(taken.some((c) => c.endpointId === fast.id)).toBe(true);
    // Within a tenant the endpoints take turns: eight different endpoints, not four twice.
    const hogA = t.app.accounts.get("hog-a")!.id;
    const endpointsOfA = new Set(
      taken.filter((c) => accountOf(c.endpointId) === hogA).map((c) => c.endpointId),
    );
    expect(endpointsOfA.size).toBe(8);
    // The caps count leases already out, in this process or another.
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    const more = t.app.webhooks.deliveries.claim(limits);
    expect(more.map((c) => accountOf(c.endpointId))).toEqual([
      t.app.accounts.get("fast-tenant")!.id,
    ]);
  });
});

describe("server mode", () => {
  it("sends a retry when it comes due, without waiting for a scheduler tick", async () => {
    t.close();
    t = createTestApp({
      env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", SMARTMONEY_WEBHOOK_BACKOFF: "150ms" },
    });
    seedMarkets(t);
    const r = await receiver(sequence([500], 200));
    const e = endpoint(r.url());
    const drainer = t.app.webhooks.drainer;
    drainer.start();
    try {
      t.app.webhooks.outbox.enqueueSignal(signalOn(t));
      while (deliveryOf(e.id).attempts === 0) await new Promise((ok) => setTimeout(ok, 5));
      expect(deliveryOf(e.id)).toMatchObject({ status: "pending", attempts: 1 });
      // Let the refill that follows the finished attempt run first, with the retry not yet due.
      await new Promise((ok) => setTimeout(ok, 50));
      expect(r.received).toHaveLength(1);
      // The retry is due 150 ms after the failure on the app's clock: move the clock there; the
      // drainer's own timer (no pump, no tick from here on) must then send it.
      t.clock.advance(150);
      while (deliveryOf(e.id).status === "pending") {
        await new Promise((ok) => setTimeout(ok, 5));
      }
      expect(deliveryOf(e.id)).toMatchObject({ status: "delivered", attempts: 2 });
    } finally {
      await drainer.stop();
    }
  });

  it("sends a new signal's deliveries right after the enqueue commits, with no tick", async () => {
    const r = await receiver();
    const e = endpoint(r.url());
    const drainer = t.app.webhooks.drainer;
    drainer.start();
    try {
      t.app.webhooks.outbox.enqueueSignal(signalOn(t));
      expect(r.received).toHaveLength(0);
      while (deliveryOf(e.id).status === "pending") await new Promise((ok) => setTimeout(ok, 10));
      expect(deliveryOf(e.id)).toMatchObject({ status: "delivered", attempts: 1 });
      expect(r.received).toHaveLength(1);
      // The scheduled tick finds nothing left and does not wait for sends.
      expect(drainer.pump()).toEqual({ claimed: 0, in_flight: 0 });
    } finally {
      await drainer.stop();
    }
  });
});

describe("the Test action", () => {
  it("sends a signed sample of the endpoint's event at once and answers the outcome", async () => {
    const r = await receiver(sequence([200], 500));
    const key = t.key("free");
    const create = await t.get("/v1/webhooks", key, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ callback_url: r.url("/test"), score_type: "insider" }),
    });
    const { id, secret } = (await create.json()) as { id: string; secret: string };

    const ok = await t.get(`/v1/webhooks/${id}/test`, key, { method: "POST" });
    expect(ok.status).toBe(200);
    const outcome = (await ok.json()) as Record<string, unknown>;
    expect(outcome).toMatchObject({
      ok: true,
      status_code: 200,
      error: null,
      event: "signal.insider",
    });
    expect(outcome.delivery_id).toMatch(/^dlv_[0-9a-f]{24}$/);
    const sample = JSON.parse(r.received[0]!.raw);
    expect(sample).toMatchObject({ event: "signal.insider", signal: { type: "insider", id: 0 } });
    expect(r.received[0]!.headers["x-service-delivery-id"]).toBe(outcome.delivery_id);
    expect(verified(r.received[0]!, secret)).toBe(true);

    const failed = await t.get(`/v1/webhooks/${id}/test`, key, { method: "POST" });
    expect(await failed.json()).toMatchObject({ ok: false, status_code: 500, error: "HTTP 500" });
    // Tests are not deliveries.
    const listed = await t.get(`/v1/webhooks/${id}/deliveries`, key);
    expect(await listed.json()).toEqual({ data: [], next_cursor: null });
    // Another account cannot fire it.
    expect((await t.get(`/v1/webhooks/${id}/test`, t.key("free"), { method: "POST" })).status).toBe(
      404,
    );
  });
});

describe("secrets", () => {
  it("never reach the logs, whatever happens to the deliveries", async () => {
    const r = await receiver(sequence([500], 200));
    const viaApiKey = t.key("terminal");
    const created = await t.get("/v1/webhooks", viaApiKey, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ callback_url: r.url() }),
    });
    const { id, secret } = (await created.json()) as { id: string; secret: string };
    const dashboard = endpoint(r.url(), "dashboard");
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    await drain();
    t.clock.advance(5_000);
    await drain();
    await t.get(`/v1/webhooks/${id}/test`, viaApiKey, { method: "POST" });
    await t.get("/v1/webhooks", viaApiKey);

    const text = t.logText();
    expect(t.logs.filter((l) => l.msg === "webhook attempt").length).toBeGreaterThanOrEqual(3);
    for (const s of [secret, dashboard.secret]) {
      expect(text).not.toContain(s);
      expect(text).not.toContain(s.slice("whsec_".length));
    }
    expect(text).not.toContain("whsec_");
  });
});
