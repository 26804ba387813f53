import { afterEach, describe, expect, it } from "vitest";
import type { PolymarketOptions } from "../../src/ingest/polymarket/context";
import { knownCategory } from "../../src/ingest/polymarket/gamma";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { ingestStatus } from "../../src/ingest/polymarket/status";
import type { Simulator } from "../simulator/server";
import { SimWorld } from "../simulator/world";
import { closeSimulated, count, simulate, simulatorOptions } from "./harness";

/**
 * The ingester against the project's Polymarket simulator, which applies the real service's
 * limits: Gamma's 100 clamp and 422 past offset 2,000, keyset cursors bound to their query,
 * the data API's 10,000 offset cap, 429s, 502 pages, hangs, broken bodies.
 */

const NOW = "2026-07-18T00:00:00Z";
afterEach(closeSimulated);

const setup = (world: { events: number; marketsPerEvent: number; wallets?: number }) =>
  simulate(NOW, (now) => new SimWorld({ wallets: 40, ...world, now }));
const options = (sim: Simulator, extra: Partial<PolymarketOptions> = {}) =>
  simulatorOptions(sim, NOW, { leaderboardDepth: 100, ...extra });

describe("market discovery against the simulator", () => {
  it("discovers a 2,500-market listing fully, with categories and outcome names, over capped rounds", async () => {
    const { h, sim } = await setup({ events: 500, marketsPerEvent: 5 });
    const rounds: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const result = await runPolymarketRound(h.deps, options(sim, { marketsPagesPerRound: 2 }));
      rounds.push(result.ok);
      if (result.summary.markets_pages === 0) break;
    }
    expect(rounds.every(Boolean)).toBe(true);
    expect(count(h.t, "markets")).toBe(2_500);
    // Every page of the full listing asked the keyset list, with the filter sent again beside
    // the cursor (besides one page a round newest first, for the markets created since).
    const listing = sim.requests.filter(
      (r) => r.startsWith("/events/keyset") && r.includes("ascending=true"),
    );
    expect(listing).toHaveLength(5);
    expect(listing.every((r) => r.includes("end_date_min="))).toBe(true);
    expect(listing.slice(1).every((r) => r.includes("after_cursor="))).toBe(true);
    expect(sim.requests.some((r) => /^\/markets\?.*offset=/.test(r))).toBe(false);

    const byCategory = h.t.db.reader
      .prepare("SELECT category, count(*) AS n FROM markets GROUP BY category ORDER BY category")
      .all() as { category: string; n: number }[];
    const expected = new Map<string, number>();
    for (const e of sim.world.events) {
      const category =
        e.tags.map((t) => knownCategory(t.label)).find(Boolean) ?? e.tags[0]!.label.toLowerCase();
      expected.set(category, (expected.get(category) ?? 0) + e.markets.length);
    }
    expect(Object.fromEntries(byCategory.map((c) => [c.category, c.n]))).toEqual(
      Object.fromEntries(expected),
    );
    // Only the events whose tags map onto none of the six ("Weather") are unknown.
    const status = ingestStatus(h.t.db, h.t.clock);
    expect(status.categories_unknown).toBe(expected.get("weather"));
    expect(status.categories_unknown).toBeGreaterThan(0);

    const names = h.t.db.reader
      .prepare(
        `SELECT o.yes_name, o.no_name FROM market_outcomes o JOIN markets m ON m.id = o.market_id
         WHERE m.condition_id = ?`,
      )
      .get(sim.world.markets[0]!.conditionId);
    expect(names).toEqual({
      yes_name: sim.world.markets[0]!.outcomes[0],
      no_name: sim.world.markets[0]!.outcomes[1],
    });
  });

  it("ends a pass when the keyset cursor comes back, instead of reading page 1 forever", async () => {
    const { h, sim } = await setup({ events: 300, marketsPerEvent: 1 });
    sim.keysetIgnoresCursor = true;
    const fullListing = () =>
      sim.requests.filter((r) => r.startsWith("/events/keyset") && r.includes("ascending=true"));
    const result = await runPolymarketRound(h.deps, options(sim));
    expect(result.ok).toBe(true);
    expect(fullListing()).toHaveLength(2);
    // The next round does not start over until the pass interval has gone by.
    await runPolymarketRound(h.deps, options(sim));
    expect(fullListing()).toHaveLength(2);
  });

  it("reports the offset list's deprecation and sunset headers", async () => {
    const { h, sim } = await setup({ events: 10, marketsPerEvent: 1 });
    sim.world.emit(5, h.t.clock.now());
    // Lookups of markets seen in fills use /markets, which carries the headers.
    const result = await runPolymarketRound(h.deps, options(sim, { listMarkets: false }));
    expect(result.ok).toBe(true);
    expect(result.summary.deprecated).toBe(
      "/markets (deprecation true, sunset Fri, 01 May 2026 00:00:00 GMT)",
    );
  });
});

describe("isolated stages against the simulator", () => {
  it("rides out 429s with and without Retry-After, a 502 page, a hang, and broken bodies", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    sim.world.emit(300, h.t.clock.now() - 60_000);
    sim.fault(
      "/trades",
      { kind: "429", retryAfterSeconds: 3 },
      { kind: "429" },
      { kind: "502-html" },
      { kind: "hang", ms: 20 },
      { kind: "malformed" },
      { kind: "partial" },
    );
    const result = await runPolymarketRound(h.deps, options(sim));
    expect(result.ok).toBe(true);
    expect(result.summary.retries).toBe(6);
    expect(h.sleep.waits).toContain(3_000);
    expect(count(h.t, "trades")).toBe(300);
  });

  it("a failing stage backs off on its own while the others carry on", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    sim.world.emit(50, h.t.clock.now() - 60_000);
    sim.fault(
      "/v1/leaderboard",
      ...Array.from({ length: 8 }, () => ({ kind: "502-html" as const })),
    );
    const first = await runPolymarketRound(h.deps, options(sim));
    expect(first.ok).toBe(false);
    expect(first.summary.failed_stages).toMatch(/^leaderboard: GET .*\/v1\/leaderboard.* HTTP 502/);
    expect(first.summary.trades_new).toBe(50);
    expect(count(h.t, "markets")).toBe(40);

    sim.world.emit(10, h.t.clock.now());
    const second = await runPolymarketRound(h.deps, options(sim));
    expect(second.ok).toBe(true);
    expect(second.summary.backing_off).toBe("leaderboard");
    expect(second.summary.trades_new).toBe(10);
    const status = ingestStatus(h.t.db, h.t.clock);
    const board = status.sources.find((s) => s.stage === "leaderboard")!;
    expect(board.consecutive_failures).toBe(1);
    expect(board.next_attempt_at).not.toBeNull();
    expect(status.sources.find((s) => s.stage === "tail")!.last_success).toBe(status.now);

    h.t.clock.advance(31_000);
    const third = await runPolymarketRound(h.deps, options(sim));
    expect(third.ok).toBe(true);
    expect(third.summary.wallets_new).toBeGreaterThan(0);
    expect(
      ingestStatus(h.t.db, h.t.clock).sources.find((s) => s.stage === "leaderboard"),
    ).toMatchObject({
      consecutive_failures: 0,
      next_attempt_at: null,
    });
  });

  it("quarantines bad records from the feed and from Gamma and stores everything else", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    const fills = sim.world.emit(30, h.t.clock.now() - 60_000);
    sim.world.corrupt.add(fills[7]!.seq);
    sim.world.markets[3]!.outcomes = ["Only one", "Only one"];
    (sim.world.markets[3] as { tokens: unknown }).tokens = "not a pair";
    const result = await runPolymarketRound(h.deps, options(sim));
    expect(result.ok).toBe(true);
    expect(result.summary.quarantined).toBeGreaterThanOrEqual(2);
    // Fills of the broken market are stored under a market made from their own fields.
    expect(count(h.t, "trades")).toBe(29);
    const stages = ingestStatus(h.t.db, h.t.clock).quarantined.map((q) => q.stage);
    expect(stages).toEqual(["markets", "tail"]);
  });
});

describe("resolutions against the simulator", () => {
  it("checks overdue markets first; 50/50 and cancelled closes leave the pending set", async () => {
    const { h, sim } = await setup({ events: 60, marketsPerEvent: 5 });
    await runPolymarketRound(h.deps, options(sim));
    const [won, split, cancelled] = sim.world.markets.slice(-3);
    sim.world.close(won!, "NO");
    sim.world.close(split!, "split");
    sim.world.close(cancelled!, "cancelled");
    // They are overdue: past their end date. A batch of 8 cannot reach them round robin.
    h.t.clock.set(
      new Date(Math.max(won!.endDate, split!.endDate, cancelled!.endDate) + 1).toISOString(),
    );
    const due = h.t.db.writer.prepare("UPDATE markets SET end_date = ? WHERE condition_id = ?");
    for (const m of sim.world.markets) due.run(m.endDate + 86_400_000 * 30, m.conditionId);
    for (const m of [won, split, cancelled]) due.run(h.t.clock.now() - 1, m!.conditionId);
    const result = await runPolymarketRound(
      h.deps,
      options(sim, { listMarkets: false, resolutionBatch: 8, lookupBatch: 8 }),
    );
    expect(result.ok).toBe(true);
    expect(result.summary.markets_resolved).toBe(1);
    expect(result.summary.markets_voided).toBe(2);
    const voids = h.t.db.reader
      .prepare(
        "SELECT m.condition_id, v.reason FROM market_voids v JOIN markets m ON m.id = v.market_id ORDER BY v.reason",
      )
      .all();
    expect(voids).toEqual([
      { condition_id: cancelled!.conditionId, reason: "cancelled" },
      { condition_id: split!.conditionId, reason: "split" },
    ]);
    // Out of the pending set: the next round asks about other markets.
    sim.requests.length = 0;
    await runPolymarketRound(
      h.deps,
      options(sim, { listMarkets: false, resolutionBatch: 8, lookupBatch: 8 }),
    );
    const asked = sim.requests.filter((r) => r.includes("condition_ids")).join(" ");
    expect(asked).not.toContain(split!.conditionId);
    expect(asked).not.toContain(cancelled!.conditionId);
    expect(asked).not.toContain(won!.conditionId);
  });
});
