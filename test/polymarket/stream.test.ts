import { afterEach, describe, expect, it } from "vitest";
import type { PolymarketOptions } from "../../src/ingest/polymarket/context";
import { realSleep } from "../../src/ingest/polymarket/limiter";
import { runLiveIngest } from "../../src/ingest/polymarket/live";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { ingestStatus } from "../../src/ingest/polymarket/status";
import { startLiveStream } from "../../src/ingest/polymarket/stream";
import type { Simulator } from "../simulator/server";
import { SimWorld } from "../simulator/world";
import { closeSimulated, count, simulate, simulatorOptions } from "./harness";

/**
 * The live socket and gap filling against the simulator: trades pushed over the socket are
 * stored through the one ingest path; after a drop the data API tail fills the gap; after an
 * outage longer than the tail's 10,000-offset window, chain logs fill it. Every fill is stored
 * exactly once whichever sources saw it.
 */

const NOW = "2026-07-18T00:00:00Z";
afterEach(closeSimulated);

const setup = (worldOptions: { events: number; wallets?: number } = { events: 20 }) =>
  simulate(NOW, (now) => new SimWorld({ marketsPerEvent: 2, wallets: 50, ...worldOptions, now }));

/** Polls (real time) until the condition holds; fails the test after 10 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await realSleep(20);
  }
}

const options = (sim: Simulator, extra: Partial<PolymarketOptions> = {}) =>
  simulatorOptions(sim, NOW, extra);

describe("the live stream", () => {
  it("stores socket trades through the ingest path and quarantines a bad one", async () => {
    const { h, sim } = await setup();
    const stream = startLiveStream(h.deps, options(sim), { url: sim.wsUrl, flushMs: 20 });
    try {
      await until(() => sim.socketClients() === 1, "the subscription");
      sim.emit(40);
      // The next fill is served with a price that is not a number.
      sim.world.corrupt.add(sim.world.fills.length);
      sim.emit(1);
      await until(() => stream.stats.stored + stream.stats.quarantined === 41, "40 trades");
    } finally {
      await stream.stop();
    }
    expect(count(h.t, "trades")).toBe(40);
    expect(stream.stats.quarantined).toBe(1);
    const status = ingestStatus(h.t.db, h.t.clock);
    expect(status.quarantined).toEqual([expect.objectContaining({ stage: "stream", count: 1 })]);
    expect(status.sources.find((s) => s.stage === "stream")?.lag_seconds).toBe(0);
    expect(status.stream_connected).toBe(false);
  });

  it("counts the fills of compacted markets as refused, not as present", async () => {
    const { h, sim } = await setup();
    const stream = startLiveStream(h.deps, options(sim), { url: sim.wsUrl, flushMs: 20 });
    try {
      await until(() => sim.socketClients() === 1, "the subscription");
      sim.emit(10);
      await until(() => stream.stats.stored === 10, "10 trades");
      // Fill retention compacted every market known so far (src/refresh/retention.ts).
      h.t.db.writer.prepare("UPDATE markets SET compacted_at = ?").run(h.t.clock.now());
      const compacted = h.t.db.writer.prepare("SELECT count(*) FROM markets").pluck().get();
      expect(compacted).toBeGreaterThan(0);
      sim.emit(30);
      await until(
        () => stream.stats.stored + stream.stats.refused === 40,
        "30 more trades, stored or refused",
      );
    } finally {
      await stream.stop();
    }
    expect(stream.stats.refused).toBeGreaterThan(0);
    expect(stream.stats.present).toBe(0);
    expect(count(h.t, "trades")).toBe(stream.stats.stored);
  });

  it("after a drop, the tail fills what the socket missed, and nothing is stored twice", async () => {
    const { h, sim } = await setup();
    const stop = new AbortController();
    const deps = { ...h.deps, sleep: realSleep };
    const run = runLiveIngest(deps, {
      ...options(sim),
      streamUrl: sim.wsUrl,
      // Only the reconnect wakes the loop: the socket alone must not be what fills the gap.
      intervalMs: 600_000,
      signal: stop.signal,
    });
    try {
      await until(() => sim.socketClients() === 1, "the subscription");
      sim.emit(25);
      await until(() => count(h.t, "trades") === 25, "25 streamed trades");
      sim.socketDown = true;
      sim.dropSockets();
      await until(() => sim.socketClients() === 0, "the drop");
      h.t.clock.advance(60_000);
      sim.emit(30);
      sim.socketDown = false;
      await until(() => count(h.t, "trades") === 55, "the gap filled");
      sim.emit(5);
      await until(() => count(h.t, "trades") === 60, "streaming again");
    } finally {
      stop.abort();
    }
    const result = await run;
    expect(result.rounds).toBeGreaterThanOrEqual(2);
    expect(result.stream?.drops).toBeGreaterThanOrEqual(1);
    expect(result.stream?.connects).toBeGreaterThanOrEqual(2);
    expect(count(h.t, "trades")).toBe(sim.world.fills.length);
  });
});

describe("a 2-hour outage", () => {
  it("is filled completely from chain logs, past the tail's 10,000-offset window, with no duplicate", async () => {
    const { h, sim } = await setup({ events: 30 });
    const chain = options(sim, {
      rpcUrl: sim.rpcUrl,
      tail: true,
      confirmations: 5,
      // Wider than the node accepts: the range is halved until it is.
      blockChunk: 4_000,
      // New wallets' funding is read an hour back, not 30 days: funding is not what this test
      // is about, and 30 days is some 1,300 eth_getLogs calls per batch of wallets.
      fundingHorizonMs: 3_600_000,
    });
    sim.world.emit(100, h.t.clock.now() - 30_000);
    const before = await runPolymarketRound(h.deps, chain);
    expect(before.ok).toBe(true);
    expect(count(h.t, "trades")).toBe(100);

    // Two hours down, at 2 fills a second: 14,400 fills, beyond the tail's reach.
    for (let second = 0; second < 7_200; second++) {
      h.t.clock.advance(1_000);
      sim.world.emit(2, h.t.clock.now());
    }
    h.t.clock.advance(60_000);
    const after = await runPolymarketRound(h.deps, chain);
    expect(after.ok).toBe(true);
    expect(after.summary.gap).toMatch(/refused to page past/);
    expect(count(h.t, "trades")).toBe(sim.world.fills.length);
    // The tail's gap was recorded, then closed by the chain's reading past it.
    expect(ingestStatus(h.t.db, h.t.clock).gaps).toEqual([]);
    expect(
      h.t.db.reader
        .prepare("SELECT count(*) FROM ingest_gaps WHERE filled_at IS NOT NULL")
        .pluck()
        .get(),
    ).toBe(1);
    expect(sim.requests.some((r) => r === "/rpc")).toBe(true);
  }, 120_000);
});
