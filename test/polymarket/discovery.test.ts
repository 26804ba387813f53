import { afterEach, describe, expect, it } from "vitest";
import type { PolymarketOptions } from "../../src/ingest/polymarket/context";
import { knownCategory } from "../../src/ingest/polymarket/gamma";
import { realSleep } from "../../src/ingest/polymarket/limiter";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { formatStatus, ingestStatus } from "../../src/ingest/polymarket/status";
import { startLiveStream } from "../../src/ingest/polymarket/stream";
import type { Simulator } from "../simulator/server";
import { type SimEvent, type SimMarket, SimWorld } from "../simulator/world";
import { closeSimulated, count, type Harness, simulate, simulatorOptions } from "./harness";

/**
 * New markets against the simulator: markets created throughout a run are discovered by the
 * next round whatever the size of the full listing (Gamma's keyset list newest first), and a
 * fill that arrives for a market not stored yet looks it up at once, is stored meanwhile, and
 * is counted in `ingest status`.
 */

const NOW = "2026-07-18T00:00:00Z";
const ROUND_MS = 30_000;
afterEach(closeSimulated);

const setup = (world: { events: number; marketsPerEvent: number }) =>
  simulate(NOW, (now) => new SimWorld({ wallets: 40, ...world, now }));
const options = (sim: Simulator, extra: Partial<PolymarketOptions> = {}) =>
  simulatorOptions(sim, NOW, extra);

/**
 * Sends `fills` fills of `market` over the simulator's socket to a live stream and waits (real
 * time, 10 s at most) until it has stored them; the stream's figures once it stopped.
 */
async function streamFills(h: Harness, sim: Simulator, market: SimMarket, fills: number) {
  const stream = startLiveStream(h.deps, options(sim), { url: sim.wsUrl, flushMs: 20 });
  try {
    const deadline = Date.now() + 10_000;
    while (sim.socketClients() < 1 && Date.now() < deadline) await realSleep(20);
    sim.emit(fills, market);
    while (stream.stats.stored < fills && Date.now() < deadline) await realSleep(20);
  } finally {
    await stream.stop();
  }
  return stream.stats;
}

const categoryOf = (e: SimEvent) =>
  e.tags.map((t) => knownCategory(t.label)).find(Boolean) ?? e.tags[0]!.label.toLowerCase();

/** Stored markets by condition id, with their category and title. */
function storedMarkets(h: Harness) {
  const rows = h.t.db.reader.prepare("SELECT condition_id, category, title FROM markets").all() as {
    condition_id: string;
    category: string | null;
    title: string | null;
  }[];
  return new Map(rows.map((r) => [r.condition_id, r]));
}

/** The markets of `world` not stored, or stored without their event's category and title. */
function missing(h: Harness, markets: readonly SimMarket[], world: SimWorld): SimMarket[] {
  const stored = storedMarkets(h);
  return markets.filter((m) => {
    const row = stored.get(m.conditionId);
    return (
      !row || row.category !== categoryOf(world.events[m.eventId - 1]!) || row.title !== m.question
    );
  });
}

describe("discovery of new markets", () => {
  it("stores, by the next round, every market created during 25 rounds, with its category", async () => {
    // 2,500 markets in 500 events: the full listing needs 5 keyset pages, 3 rounds at 2 a round.
    const { h, sim } = await setup({ events: 500, marketsPerEvent: 5 });
    const world = sim.world;
    const newestFirst = () =>
      sim.requests.filter((r) => r.startsWith("/events/keyset") && r.includes("ascending=false"));
    const created: SimMarket[] = [];
    const walkPages: number[] = [];
    for (let round = 1; round <= 25; round++) {
      // Every market listed before this round must be stored by its end.
      const listedBefore = [...world.markets];
      const before = newestFirst().length;
      const result = await runPolymarketRound(h.deps, options(sim, { marketsPagesPerRound: 2 }));
      expect(result.ok).toBe(true);
      walkPages.push(newestFirst().length - before);
      // (Round 13 follows a burst of 1,250 markets, more than its pages reach: round 14 ends it.)
      if (round >= 3 && round !== 13) expect(missing(h, listedBefore, world)).toEqual([]);
      // Markets open throughout the run: one or two events a round, and at round 12 a burst
      // of 250 events, more than one round's two pages reach.
      h.t.clock.advance(ROUND_MS / 2);
      const events = round === 12 ? 250 : 1 + (round % 2);
      for (let i = 0; i < events; i++) {
        created.push(...world.addEvent(h.t.clock.now()).markets);
        h.t.clock.advance(10);
      }
      h.t.clock.advance(ROUND_MS / 2 - events * 10);
    }
    // The burst (3 pages newest first) took two rounds: 2 pages, then the last one and a new
    // walk from the head for what opened meanwhile. Every other round read one page: the cost
    // follows what was created, not the size of the listing.
    expect(walkPages.filter((n) => n > 1)).toEqual([2, 2]);
    expect(walkPages.filter((n) => n === 1)).toHaveLength(23);
    expect(created).toHaveLength(5 * (250 + 13 * 2 + 11 * 1));
    // The last round's markets are found by one more round.
    await runPolymarketRound(h.deps, options(sim, { marketsPagesPerRound: 2 }));
    expect(missing(h, world.markets, world)).toEqual([]);
    expect(count(h.t, "markets")).toBe(world.markets.length);

    const status = ingestStatus(h.t.db, h.t.clock);
    const newest = world.events.at(-1)!.markets[0]!;
    expect(status.newest_market).toEqual({
      slug: newest.slug,
      created_at: new Date(newest.createdAt).toISOString(),
      discovered_at: new Date(h.t.clock.now()).toISOString(),
    });
    expect(formatStatus(status)).toContain(`newest market      ${status.newest_market!.slug}`);
  });

  it("a walk longer than a round resumes from its cursor, also after Gamma failed", async () => {
    const { h, sim } = await setup({ events: 30, marketsPerEvent: 2 });
    const first = await runPolymarketRound(h.deps, options(sim));
    expect(first.ok).toBe(true);
    // 450 new events: 5 pages newest first, and a round reads 2.
    for (let i = 0; i < 450; i++) sim.world.addEvent(h.t.clock.now() + i);
    h.t.clock.advance(ROUND_MS);
    const cut = await runPolymarketRound(h.deps, options(sim, { marketsPagesPerRound: 2 }));
    expect(cut.ok).toBe(true);
    expect(missing(h, sim.world.markets, sim.world)).toHaveLength(250 * 2);
    // The next page fails through all its retries: the stage fails, its cursor stays.
    sim.fault(
      "/events/keyset",
      ...Array.from({ length: 8 }, () => ({ kind: "502-html" as const })),
    );
    h.t.clock.advance(ROUND_MS);
    for (let i = 0; i < 3; i++) sim.world.addEvent(h.t.clock.now() + i);
    const failed = await runPolymarketRound(h.deps, options(sim, { marketsPagesPerRound: 2 }));
    expect(failed.summary.failed_stages).toMatch(/^markets:/);
    // After its backoff the walk carries on from its cursor, then walks again from the head.
    h.t.clock.advance(60_000);
    const at = sim.requests.length;
    const resumed = await runPolymarketRound(h.deps, options(sim));
    expect(resumed.ok).toBe(true);
    const walk = sim.requests
      .slice(at)
      .filter((r) => r.startsWith("/events/keyset") && r.includes("ascending=false"));
    expect(walk[0]).toContain("after_cursor=");
    expect(walk.at(-1)).not.toContain("after_cursor=");
    expect(missing(h, sim.world.markets, sim.world)).toEqual([]);
  });
});

describe("a fill that arrives before its market", () => {
  it("from the socket: looks the market up at once and stores the fill with it", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    await runPolymarketRound(h.deps, options(sim));
    const event = sim.world.addEvent(h.t.clock.now());
    const market = event.markets[0]!;
    expect((await streamFills(h, sim, market, 3)).stored).toBe(3);
    // Gamma's market (its category and title), not one made from the fill's own fields.
    expect(missing(h, [market], sim.world)).toEqual([]);
    expect(sim.requests.some((r) => r.includes(`condition_ids=${market.conditionId}`))).toBe(true);
    const status = ingestStatus(h.t.db, h.t.clock);
    expect(status.fills_waited_for_market).toBe(3);
    expect(status.markets_awaited).toBe(0);
    expect(status.longest_market_wait_seconds).toBe(0);
  });

  it("from the data API, while Gamma fails: read again next round, with its market", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    await runPolymarketRound(h.deps, options(sim));
    h.t.clock.advance(ROUND_MS);
    // Created after the round's listing; its fills reach the tail before any listing sees it.
    const market = sim.world.addEvent(h.t.clock.now()).markets[1]!;
    sim.world.emit(4, h.t.clock.now(), market);
    // Gamma's lookups fail for the whole round (retries included); the listing is not asked.
    for (let i = 0; i < 8; i++) sim.fault("/markets", { kind: "502-html" });
    const failing = await runPolymarketRound(h.deps, options(sim, { listMarkets: false }));
    expect(failing.ok).toBe(false);
    expect(failing.summary.failed_stages).toMatch(/^tail:/);
    // Not lost meanwhile: the tail failed on the lookup, so its walk did not move either.
    expect(count(h.t, "trades")).toBe(0);
    sim.faults.delete("/markets");
    h.t.clock.advance(ROUND_MS);
    const next = await runPolymarketRound(h.deps, options(sim, { listMarkets: false }));
    expect(next.ok).toBe(true);
    expect(count(h.t, "trades")).toBe(4);
    expect(missing(h, [market], sim.world)).toEqual([]);
    const status = ingestStatus(h.t.db, h.t.clock);
    expect(status.fills_waited_for_market).toBe(4);
    expect(status.markets_awaited).toBe(0);
  });

  it("from the socket, while Gamma fails: stored under the fill's own fields, then Gamma's", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    await runPolymarketRound(h.deps, options(sim));
    const market = sim.world.addEvent(h.t.clock.now()).markets[0]!;
    for (let i = 0; i < 8; i++) sim.fault("/markets", { kind: "502-html" });
    // The fake clock moves only by the lookup's retry waits: the fills arrive now.
    const arrived = h.t.clock.now();
    await streamFills(h, sim, market, 2);
    // Stored meanwhile, under a market made from the fill's slug and title: no category yet.
    expect(count(h.t, "trades")).toBe(2);
    expect(storedMarkets(h).get(market.conditionId)?.category).toBeNull();
    let status = ingestStatus(h.t.db, h.t.clock);
    expect(status.fills_waited_for_market).toBe(2);
    expect(status.markets_awaited).toBe(1);
    expect(formatStatus(status)).toContain("fills waited       2 for their market");
    // The next round asks Gamma again at once (not waiting for the listing): one round's wait.
    sim.faults.delete("/markets");
    h.t.clock.advance(ROUND_MS);
    const roundAt = h.t.clock.now();
    const round = await runPolymarketRound(h.deps, options(sim, { listMarkets: false }));
    expect(round.ok).toBe(true);
    expect(missing(h, [market], sim.world)).toEqual([]);
    status = ingestStatus(h.t.db, h.t.clock);
    expect(status.markets_awaited).toBe(0);
    expect(status.longest_market_wait_seconds).toBe(Math.round((roundAt - arrived) / 100) / 10);
  });

  it("from the chain, before Gamma lists it: parked, then stored once Gamma does", async () => {
    const { h, sim } = await setup({ events: 20, marketsPerEvent: 2 });
    const chain = options(sim, {
      rpcUrl: sim.rpcUrl,
      // Fills come from the chain alone here: the tail would store them by condition id.
      tail: false,
      listMarkets: false,
      confirmations: 5,
      fundingHorizonMs: 3_600_000,
    });
    const first = await runPolymarketRound(h.deps, chain);
    expect(first.ok).toBe(true);
    const market = sim.world.addEvent(h.t.clock.now()).markets[0]!;
    sim.unlisted.add(market.conditionId);
    sim.world.emit(2, h.t.clock.now(), market);
    h.t.clock.advance(60_000);
    const parked = await runPolymarketRound(h.deps, chain);
    expect(parked.ok).toBe(true);
    expect(parked.summary.unknown_tokens).toBe(2);
    // Looked up by token at once; Gamma does not know it yet: the fills wait, parked.
    expect(sim.requests.some((r) => r.includes(`clob_token_ids=${market.tokens[0]}`))).toBe(true);
    expect(count(h.t, "trades")).toBe(0);
    let status = ingestStatus(h.t.db, h.t.clock);
    expect(status.fills_waited_for_market).toBe(2);
    expect(status.markets_awaited).toBe(1);

    sim.unlisted.delete(market.conditionId);
    h.t.clock.advance(ROUND_MS);
    const stored = await runPolymarketRound(h.deps, chain);
    expect(stored.ok).toBe(true);
    expect(count(h.t, "trades")).toBe(2);
    expect(missing(h, [market], sim.world)).toEqual([]);
    status = ingestStatus(h.t.db, h.t.clock);
    expect(status.markets_awaited).toBe(0);
    expect(status.fills_waited_for_market).toBe(2);
    // From when the fills were read (a round after they filled) to their market stored.
    expect(status.longest_market_wait_seconds).toBe(ROUND_MS / 1000);
  });
});
