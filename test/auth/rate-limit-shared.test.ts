import { afterEach, describe, expect, it, vi } from "vitest";
import { createRateLimiter, type RateLimiter } from "../../src/auth/rate-limit";
import { type Db, openDb } from "../../src/db/open";
import { createTestApp, type TestApp } from "../helpers/app";

/**
 * Several limiters on one database, each on its own connections, as separate processes are:
 * every decision must see every other's calls, with a clock moved by hand.
 */
const MIN = 60_000;
const DAY = 24 * 60 * MIN;

let t: TestApp;
const others: Db[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const db of others.splice(0)) db.close();
  t?.close();
});

function processes(n: number): RateLimiter[] {
  t = createTestApp();
  t.clock.set("2026-11-01T00:00:30.000Z");
  const limiters = [t.app.limiter];
  for (let i = 1; i < n; i++) {
    const db = openDb(t.config.dbPath);
    others.push(db);
    limiters.push(createRateLimiter({ db, clock: t.clock, log: t.app.deps.log }));
  }
  return limiters;
}

function accountId(name: string): number {
  const created = t.app.accounts.create(name, "terminal");
  if (!created.ok) throw new Error(created.reason);
  return created.value.id;
}

/** A seeded stream, so a failure replays. */
function random(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe("limits shared by processes on one database", () => {
  it("two limiters together admit exactly the hourly cap", () => {
    const [a, b] = processes(2);
    const id = accountId("two-servers");
    const limits = { hourly: 50, monthly: 1_000 };
    let admitted = 0;
    for (let i = 0; i < 100; i++) {
      if ((i % 2 === 0 ? a : b)!.admit(id, limits).admitted) admitted += 1;
    }
    expect(admitted).toBe(50);
    expect(a!.peek(id, limits).remaining).toBe(0);
    expect(b!.peek(id, limits).remaining).toBe(0);
  });

  it("the 30-day total does not drift as days leave the window, whoever made the calls", () => {
    const limiters = processes(3);
    const id = accountId("month-drift");
    const limits = { hourly: 1_000_000, monthly: 100 };
    const rand = random(7);
    const admittedAt: number[] = [];
    for (let i = 0; i < 4_000; i++) {
      t.clock.advance(Math.floor(rand() * 1.5 * DAY * 0.05));
      const limiter = limiters[Math.floor(rand() * limiters.length)]!;
      if (limiter.admit(id, limits).admitted) admittedAt.push(t.clock.now());
    }
    // Enough 30-day periods went by for a drifting total to show.
    expect(t.clock.now() - Date.parse("2026-11-01T00:00:30.000Z")).toBeGreaterThan(90 * DAY);
    expect(admittedAt.length).toBeGreaterThan(250);
    for (const end of admittedAt) {
      const inWindow = admittedAt.filter((at) => at > end - 30 * DAY && at <= end).length;
      expect(inWindow).toBeLessThanOrEqual(100);
    }
    // And the windows stay full: after a quiet 31 days every limiter sees the whole quota.
    t.clock.advance(31 * DAY + MIN);
    for (const limiter of limiters) expect(limiter.peek(id, limits).remaining).toBe(100);
  });

  it("the manual-clock reproduction of the drift: 100 against 100, not 199", () => {
    // Each limiter hands back what its lease has left when the minute ends, on a timer: the
    // timers run as the clock is moved on, as they would over the days between bursts.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const [a, b] = processes(2);
    const id = accountId("drift-repro");
    const limits = { hourly: 1_000_000, monthly: 100 };
    let admitted = 0;
    const burst = (limiter: RateLimiter, n: number) => {
      for (let i = 0; i < n; i++) if (limiter.admit(id, limits).admitted) admitted += 1;
    };
    const advance = (ms: number) => {
      t.clock.advance(ms);
      vi.advanceTimersByTime(2 * MIN);
    };
    burst(a!, 50); // day 0, process A
    advance(DAY);
    burst(b!, 50); // day 1, process B
    advance(29 * DAY + 2 * MIN); // day 0 has left the window
    burst(b!, 100); // B may take day 0's 50 back
    advance(DAY);
    burst(a!, 100); // day 1 has left: A may take day 1's 50 back, no more
    // Every 30-day window holds at most 100: 50 (day 1) + 50 (day 30), then 50 + 50 again.
    expect(admitted).toBe(200);
    expect(a!.peek(id, limits).remaining).toBe(0);
    expect(b!.peek(id, limits).remaining).toBe(0);
  });

  it("a batch is admitted whole or not at all, and a refusal charges nothing", () => {
    const [a] = processes(1);
    const id = accountId("batch");
    const limits = { hourly: 5, monthly: 100 };
    const refused = a!.admitMany(id, limits, 6);
    expect(refused).toMatchObject({ admitted: false, remaining: 0, window: "hour" });
    expect(a!.peek(id, limits).remaining).toBe(5);
    expect(a!.admitMany(id, limits, 5)).toMatchObject({ admitted: true, remaining: 0 });
  });

  it("counts calls while another process holds a long write transaction on the main database", async () => {
    t = createTestApp();
    const key = t.key("free", { account: "during-refresh" });
    const id = t.app.accounts.get("during-refresh")!.id;
    t.app.limiter.peek(id, { hourly: 50, monthly: 500 }); // the ledger exists before the lock
    const refresh = openDb(t.config.dbPath);
    others.push(refresh);
    refresh.writer.pragma("busy_timeout = 0");
    refresh.writer.exec("BEGIN IMMEDIATE"); // a refresh or an import, mid-transaction
    try {
      t.db.writer.pragma("busy_timeout = 0"); // waiting on the main database would now fail
      for (let i = 0; i < 5; i++) expect((await t.get("/v1/_ping", key)).status).toBe(200);
      // Committed, not held in memory: another process sees them at once (with them, the part
      // of this process's lease it has not spent yet).
      const ledger = refresh.limits
        .prepare("SELECT sum(calls) AS calls FROM rate_minutes WHERE account_id = ?")
        .get(id) as { calls: number };
      expect(ledger.calls).toBeGreaterThanOrEqual(5);
      t.app.limiter.close();
      expect(
        (
          refresh.limits
            .prepare("SELECT sum(calls) AS calls FROM rate_minutes WHERE account_id = ?")
            .get(id) as { calls: number }
        ).calls,
      ).toBe(5);
    } finally {
      refresh.writer.exec("ROLLBACK");
    }
  });

  it("carries the calls of the old in-database ledger over on first use", () => {
    t = createTestApp();
    t.clock.set("2026-11-01T00:00:30.000Z");
    const id = accountId("upgraded");
    const minute = Math.floor(t.clock.now() / MIN);
    t.db.writer
      .prepare("INSERT INTO rate_minutes (account_id, minute, calls) VALUES (?, ?, ?), (?, ?, ?)")
      .run(id, minute - 5, 30, id, minute - 31 * 24 * 60, 400);
    // The first decision opens the ledger: the 30 recent calls count, the 31-day-old ones not.
    expect(t.app.limiter.peek(id, { hourly: 50, monthly: 100 })).toMatchObject({
      window: "hour",
      remaining: 20,
    });
    expect(t.app.limiter.peek(id, { hourly: 500, monthly: 100 }).remaining).toBe(70);
  });
});
