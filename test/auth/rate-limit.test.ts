import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { createRateLimiter, LEASE_MAX, LEASE_START } from "../../src/auth/rate-limit";
import { createTestApp, type TestApp } from "../helpers/app";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.parse("2026-11-01T00:00:30.000Z"); // 30 s into a minute

let t: TestApp;
afterEach(() => {
  vi.useRealTimers();
  t?.close();
});

function limiterApp(limits = { hourly: 50, monthly: 500 }) {
  t = createTestApp();
  t.clock.set(T0);
  const account = t.app.accounts.create(`acct-${Math.random()}`, "free");
  if (!account.ok) throw new Error(account.reason);
  const id = account.value.id;
  return {
    admit: () => t.app.limiter.admit(id, limits),
    peek: () => t.app.limiter.peek(id, limits),
    id,
  };
}

describe("hourly window", () => {
  it("names the same reset second on a 429 as on the 200s before it, mid-second too", () => {
    const l = limiterApp();
    t.clock.advance(400); // T0 + 0.4 s: now and the wait would each round up
    let last = l.admit();
    for (let i = 1; i < 50; i++) last = l.admit();
    const refused = l.admit();
    expect(refused.admitted).toBe(false);
    expect(refused.resetAt).toBe(last.resetAt);
    // Retry-After still rounds the wait up: retrying then is never early.
    expect(refused.retryAfter).toBe(Math.ceil(refused.resetAt - (T0 + 400) / 1000));
  });

  it("admits exactly the cap, then refuses with an exact Retry-After", () => {
    const l = limiterApp();
    for (let i = 0; i < 50; i++) {
      const d = l.admit();
      expect(d.admitted).toBe(true);
      expect(d.remaining).toBe(49 - i);
      expect(d.limit).toBe(50);
    }
    const refused = l.admit();
    expect(refused).toMatchObject({ admitted: false, window: "hour", limit: 50, remaining: 0 });
    // All 50 calls sit in minute M0; a call is admitted again once minute M0 leaves the
    // (M - 60 .. M) window, i.e. at the start of minute M0 + 61: 61 min minus the 30 s elapsed.
    expect(refused.retryAfter).toBe(61 * 60 - 30);
    expect(refused.resetAt).toBe(Math.ceil(T0 / 1000) + refused.retryAfter!);
    expect(refused.resetAt).toBe(l.peek().resetAt);

    t.clock.advance((refused.retryAfter! - 1) * 1000);
    expect(l.admit().admitted).toBe(false);
    t.clock.advance(1000);
    expect(l.admit().admitted).toBe(true);
  });

  it("frees calls minute by minute as they leave the window", () => {
    const l = limiterApp();
    for (let i = 0; i < 25; i++) l.admit(); // minute 0
    t.clock.advance(30 * MIN);
    for (let i = 0; i < 25; i++) l.admit(); // minute 30
    t.clock.advance(29 * MIN); // minute 59
    const refused = l.admit();
    expect(refused.admitted).toBe(false);
    // minute 0's calls leave at minute 61; we are at 59 min 30 s.
    expect(refused.retryAfter).toBe(90);
    t.clock.advance(90 * 1000);
    for (let i = 0; i < 25; i++) expect(l.admit().admitted).toBe(true);
    expect(l.admit().admitted).toBe(false);
  });

  it("never lets a true rolling hour hold more than the cap", () => {
    const cap = 7;
    const l = limiterApp({ hourly: cap, monthly: 1_000_000 });
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const admitted: number[] = [];
    for (let i = 0; i < 3000; i++) {
      t.clock.advance(Math.floor(rand() * 4 * MIN));
      if (l.admit().admitted) admitted.push(t.clock.now());
    }
    expect(admitted.length).toBeGreaterThan(200);
    for (let i = 0; i < admitted.length; i++) {
      const end = admitted[i]!;
      const inWindow = admitted.filter((at) => at >= end - HOUR && at <= end).length;
      expect(inWindow).toBeLessThanOrEqual(cap);
    }
  });
});

describe("30-day window", () => {
  it("refuses once 500 calls fall within 30 days and names the month window", () => {
    const l = limiterApp();
    for (let hour = 0; hour < 10; hour++) {
      for (let i = 0; i < 50; i++) expect(l.admit().admitted).toBe(true);
      t.clock.advance(2 * HOUR);
    }
    const refused = l.admit();
    expect(refused).toMatchObject({ admitted: false, window: "month", limit: 500 });
    // The first 50 calls were at T0 (minute M0); they leave at minute M0 + 43,201.
    const reopen = (Math.floor(T0 / MIN) + 43_201) * MIN;
    expect(refused.retryAfter).toBe(Math.ceil((reopen - t.clock.now()) / 1000));
    t.clock.set(reopen - 1000);
    expect(l.admit().admitted).toBe(false);
    t.clock.set(reopen);
    const d = l.admit();
    expect(d.admitted).toBe(true);
  });

  it("reports the binding window: the one with fewer calls left", () => {
    const l = limiterApp({ hourly: 50, monthly: 60 });
    for (let i = 0; i < 40; i++) l.admit();
    expect(l.peek()).toMatchObject({ window: "hour", limit: 50, remaining: 10 });
    t.clock.advance(2 * HOUR);
    expect(l.peek()).toMatchObject({ window: "month", limit: 60, remaining: 20 });
    for (let i = 0; i < 15; i++) l.admit();
    expect(l.peek()).toMatchObject({ window: "month", remaining: 5 });
  });

  it("survives a restart: the sums reload from the ledger", () => {
    const l = limiterApp();
    for (let i = 0; i < 30; i++) l.admit();
    t.app.limiter.close(); // a clean stop returns what its lease had left
    const fresh = createRateLimiter({ db: t.db, clock: t.clock, log: t.app.deps.log });
    t.clock.advance(10 * MIN);
    expect(fresh.peek(l.id, { hourly: 50, monthly: 500 }).remaining).toBe(20);
    for (let i = 0; i < 20; i++)
      expect(fresh.admit(l.id, { hourly: 50, monthly: 500 }).admitted).toBe(true);
    expect(fresh.admit(l.id, { hourly: 50, monthly: 500 }).admitted).toBe(false);
  });

  it("forgets calls older than 30 days even after a long idle gap", () => {
    const l = limiterApp();
    for (let i = 0; i < 50; i++) l.admit();
    t.clock.advance(31 * DAY);
    const d = l.peek();
    expect(d.remaining).toBe(50);
    expect(l.admit().admitted).toBe(true);
  });
});

describe("quota leases", () => {
  /** Calls counted in the ledger for the account, whoever holds them. */
  const counted = (id: number) =>
    (
      t.db.limits
        .prepare("SELECT coalesce(sum(calls), 0) AS calls FROM rate_minutes WHERE account_id = ?")
        .get(id) as { calls: number }
    ).calls;
  /** A second process on the same ledger: a limiter with its own leases. */
  const otherProcess = () => createRateLimiter({ db: t.db, clock: t.clock, log: t.app.deps.log });

  it("counts a block of calls in one decision and admits them from memory, headers exact", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    const first = l.admit();
    expect(first).toMatchObject({ admitted: true, remaining: 999 });
    // The call and 1/16 of the 999 left after it, capped.
    const leased = Math.min(LEASE_START, Math.floor(999 / 16));
    expect(counted(l.id)).toBe(1 + leased);
    for (let i = 1; i <= leased; i++) {
      const d = l.admit();
      expect(d.admitted).toBe(true);
      expect(d.remaining).toBe(999 - i);
      expect(d.resetAt).toBe(first.resetAt);
      expect(counted(l.id)).toBe(1 + leased);
    }
    // The lease is spent: the next call goes to the ledger and takes another.
    expect(l.admit().remaining).toBe(999 - leased - 1);
    expect(counted(l.id)).toBeGreaterThan(1 + leased);
  });

  it("doubles a lease spent within its minute, up to LEASE_MAX, and starts again the next minute", () => {
    const limits = { hourly: 10_000_000, monthly: 100_000_000 };
    const l = limiterApp(limits);
    l.peek(); // opens the ledger
    /** The calls each ledger decision counts, for `calls` calls made in a row. */
    const blocks = (calls: number) => {
      const sizes: number[] = [];
      for (let i = 0; i < calls; i++) {
        const before = counted(l.id);
        expect(l.admit().admitted).toBe(true);
        if (counted(l.id) !== before) sizes.push(counted(l.id) - before);
      }
      return sizes;
    };
    // Each block is the call plus the lease; the blocks are counted before they are spent.
    expect(blocks(1 + 64 + 1 + 128 + 1 + 256 + 1 + 512 + 1 + 1024 + 1 + 1024 + 1)).toEqual([
      1 + LEASE_START,
      1 + 128,
      1 + 256,
      1 + 512,
      1 + LEASE_MAX,
      1 + LEASE_MAX,
      1 + LEASE_MAX,
    ]);
    // A new minute: the lease left over goes back, and the next one starts small again.
    t.clock.advance(MIN);
    const before = counted(l.id);
    expect(l.admit().admitted).toBe(true);
    expect(counted(l.id) - before).toBe(1 + LEASE_START - (1 + LEASE_MAX - 1));
    expect(blocks(LEASE_START + 1)).toEqual([1 + 128]);
  });

  it("leases nothing once fewer than 16 calls would be left", () => {
    const l = limiterApp({ hourly: 10, monthly: 500 });
    l.admit();
    expect(counted(l.id)).toBe(1);
  });

  it("returns the unspent part at the minute's end, with no further call", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    l.admit();
    l.admit();
    expect(counted(l.id)).toBeGreaterThan(2);
    t.clock.advance(30_000); // T0 is 30 s into its minute: now the next minute has begun
    vi.advanceTimersByTime(30_100);
    expect(counted(l.id)).toBe(2);
    expect(l.peek().remaining).toBe(998);
  });

  it("returns an expired lease on the next decision when no timer has fired", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    l.admit();
    t.clock.advance(MIN);
    const other = otherProcess();
    // Another process's decision does not return this one's lease; this process's next one does.
    expect(other.peek(l.id, { hourly: 1000, monthly: 50_000 }).remaining).toBeLessThan(999);
    expect(l.peek().remaining).toBe(999);
  });

  it("returns the unspent part on close", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    for (let i = 0; i < 3; i++) l.admit();
    t.app.limiter.close();
    expect(counted(l.id)).toBe(3);
  });

  it("returns the lease when the account's limits change", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    const id = l.id;
    t.app.limiter.admit(id, { hourly: 1000, monthly: 50_000 });
    const d = t.app.limiter.admit(id, { hourly: 5, monthly: 50_000 });
    expect(d).toMatchObject({ admitted: true, limit: 5, remaining: 3 });
    expect(counted(id)).toBe(2);
  });

  it("a refund goes back to the lease it came from", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    const d = l.admit();
    const before = counted(l.id);
    t.app.limiter.refund(l.id, d.minute);
    expect(counted(l.id)).toBe(before);
    expect(l.peek().remaining).toBe(1000);
    t.app.limiter.close();
    expect(counted(l.id)).toBe(0);
  });

  it("two processes splitting the last calls admit exactly the cap between them", () => {
    for (const cap of [40, 200, 1000]) {
      const l = limiterApp({ hourly: cap, monthly: 50_000 });
      const limits = { hourly: cap, monthly: 50_000 };
      const processes = [t.app.limiter, otherProcess()];
      let seed = cap;
      let admitted = 0;
      // Random turns, in runs, until each process has been refused since the last admission: a
      // process refuses only once its own lease is spent, so none is left holding calls.
      const refused = [false, false];
      while (!refused[0] || !refused[1]) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        const turn = (seed >>> 16) % 2;
        const d = processes[turn]!.admit(l.id, limits);
        if (d.admitted) {
          admitted++;
          refused.fill(false);
        } else refused[turn] = true;
        expect(admitted).toBeLessThanOrEqual(cap);
      }
      expect(admitted).toBe(cap);
      expect(counted(l.id)).toBe(cap);
      t.close();
    }
  });

  it("a process that dies holding a lease leaves at most the lease unspent: under, never over", () => {
    const l = limiterApp({ hourly: 1000, monthly: 50_000 });
    const limits = { hourly: 1000, monthly: 50_000 };
    const crashed = otherProcess();
    crashed.admit(l.id, limits); // then gone, never closed
    const lost = counted(l.id) - 1;
    expect(lost).toBeGreaterThan(0);
    expect(lost).toBeLessThanOrEqual(LEASE_MAX);
    let admitted = 0;
    while (t.app.limiter.admit(l.id, limits).admitted) admitted++;
    expect(admitted).toBe(1000 - 1 - lost);
    // Those calls leave the hour with their minute.
    t.clock.advance(61 * MIN);
    expect(t.app.limiter.admit(l.id, limits).admitted).toBe(true);
  });
});

describe("through HTTP", () => {
  it("the 51st call of a free account within an hour is 429; 401 and 403 do not count", async () => {
    t = createTestApp();
    const key = t.key("free", { account: "free-one" });
    for (let i = 0; i < 5; i++) expect((await t.get("/v1/_ping", "svc_api_nope")).status).toBe(401);
    for (let i = 0; i < 50; i++) {
      const res = await t.get("/v1/_ping", key);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(49 - i));
      t.clock.advance(MIN);
    }
    const res = await t.get("/v1/_ping", key);
    expect(res.status).toBe(429);
    const body = (await res.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe("rate_limited");
    expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
    expect(res.headers.get("x-ratelimit-limit")).toBe("50");
    expect(res.headers.get("x-ratelimit-remaining")).toBe("0");
    const retryAfter = Number(res.headers.get("retry-after"));
    // The first call was 50 minutes ago in minute M0; it leaves at minute M0 + 61.
    expect(retryAfter).toBe(11 * 60);
    expect(Number(res.headers.get("x-ratelimit-reset"))).toBe(
      Math.ceil(t.clock.now() / 1000) + retryAfter,
    );
    // 429s are not counted either: waiting it out frees exactly one call.
    for (let i = 0; i < 3; i++) expect((await t.get("/v1/_ping", key)).status).toBe(429);
    t.clock.advance(retryAfter * 1000);
    expect((await t.get("/v1/_ping", key)).status).toBe(200);
    expect((await t.get("/v1/_ping", key)).status).toBe(429);
  });

  it("all keys of an account share its quota", async () => {
    t = createTestApp();
    const a = t.key("free", { account: "shared" });
    const b = t.key("free", { account: "shared" });
    for (let i = 0; i < 25; i++) await t.get("/v1/_ping", a);
    const res = await t.get("/v1/_ping", b);
    expect(res.headers.get("x-ratelimit-remaining")).toBe("24");
  });

  it("holds the cap under 200 concurrent requests", async () => {
    t = createTestApp();
    const key = t.key("terminal", { account: "burst" });
    t.app.accounts.setLimits("burst", { hourly: 120, monthly: 50_000 });
    const answers = await Promise.all(Array.from({ length: 200 }, () => t.get("/v1/_ping", key)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(120);
    expect(statuses.filter((s) => s === 429)).toHaveLength(80);
  });

  it("applies an operator's set-limits to a running server at once, and --reset restores", async () => {
    t = createTestApp();
    const key = t.key("free", { account: "vip" });
    t.app.accounts.setLimits("vip", { hourly: 2, monthly: 500 });
    expect((await t.get("/v1/_ping", key)).headers.get("x-ratelimit-limit")).toBe("2");
    expect((await t.get("/v1/_ping", key)).status).toBe(200);
    expect((await t.get("/v1/_ping", key)).status).toBe(429);
    t.app.accounts.setLimits("vip", null);
    const res = await t.get("/v1/_ping", key);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-remaining")).toBe("47");
  });

  it("commits each admitted call to the per-minute ledger before answering", async () => {
    t = createTestApp();
    const key = t.key("free", { account: "ledger" });
    for (let i = 0; i < 3; i++) await t.get("/v1/_ping", key);
    t.clock.advance(MIN);
    await t.get("/v1/_ping", key);
    const rows = t.db.limits
      .prepare("SELECT minute, calls FROM rate_minutes ORDER BY minute")
      .all() as { minute: number; calls: number }[];
    // Minute M0 holds the 3 calls made in it: the rest of its lease went back when the minute
    // ended. Minute M0 + 1 holds the call and the lease taken with it.
    expect(rows.map((r) => r.calls)[0]).toBe(3);
    expect(rows[1]!.minute - rows[0]!.minute).toBe(1);
    expect(rows[1]!.calls).toBeGreaterThanOrEqual(1);
    // A second app on the same file (a restart) sees the same quota.
    t.app.limiter.close();
    expect(
      (
        t.db.limits.prepare("SELECT sum(calls) AS calls FROM rate_minutes").get() as {
          calls: number;
        }
      ).calls,
    ).toBe(4);
    const again = createApp({ ...t.app.deps });
    const caller = again.accounts.authenticate(key)!;
    expect(again.limiter.peek(caller.account.id, { hourly: 50, monthly: 500 }).remaining).toBe(46);
  });
});
