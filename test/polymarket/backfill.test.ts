import { afterEach, describe, expect, it } from "vitest";
import { BACKFILL_KEY, runBackfill } from "../../src/ingest/polymarket/backfill";
import { SimWorld } from "../simulator/world";
import { closeSimulated, count, simulate, stateOf } from "./harness";

/** Deep history from chain logs against the simulator's node (which refuses wide ranges). */

const NOW = "2026-07-18T00:00:00Z";
const HOUR = 3_600_000;
afterEach(closeSimulated);

async function setup() {
  const { h, sim } = await simulate(NOW, (now) => {
    const world = new SimWorld({ events: 10, marketsPerEvent: 2, wallets: 30, now });
    // Three hours of history, a fill every 10 seconds.
    for (let at = now - 3 * HOUR; at < now; at += 10_000) world.emit(1, at);
    return world;
  });
  return { h, sim, now: h.t.clock.now() };
}

describe("ingest polymarket backfill", () => {
  it("stores exactly the period's fills, resumes after a crash, and splits ranges the node refuses", async () => {
    const { h, sim, now } = await setup();
    const period = {
      dataUrl: sim.url,
      gammaUrl: sim.url,
      rpcUrl: sim.rpcUrl,
      from: now - 3 * HOUR,
      to: now - HOUR,
      confirmations: 5,
      blockChunk: 2_000,
    };
    let ranges = 0;
    await expect(
      runBackfill(h.deps, {
        ...period,
        onProgress: () => {
          if (++ranges === 2) throw new Error("killed after range 2");
        },
      }),
    ).rejects.toThrow("killed after range 2");
    const partial = count(h.t, "trades");
    expect(partial).toBeGreaterThan(0);
    expect(stateOf(h.t, BACKFILL_KEY)).toMatchObject({ next_block: expect.any(Number) });

    const resumed = await runBackfill(h.deps, period);
    expect(resumed.ok).toBe(true);
    if (!resumed.ok) return;
    expect(resumed.resumed).toBe(true);
    expect(resumed.state.next_block).toBe(resumed.state.to_block + 1);
    const expected = sim.world.fills.filter((f) => f.ts >= period.from && f.ts < period.to).length;
    expect(expected).toBe(720);
    expect(count(h.t, "trades")).toBe(expected);
    // The node refused 2,000-block ranges as too large; halved, they were read.
    expect(sim.rpcRefusals).toBeGreaterThan(0);

    // Run again: nothing new, nothing twice.
    const again = await runBackfill(h.deps, { ...period, to: now - HOUR + 1 });
    expect(again.ok && again.summary.trades_new).toBeLessThanOrEqual(1);
    expect(count(h.t, "trades")).toBeLessThanOrEqual(expected + 1);
  });

  it("refuses without an RPC URL, saying why", async () => {
    const { h, sim, now } = await setup();
    const result = await runBackfill(h.deps, {
      dataUrl: sim.url,
      gammaUrl: sim.url,
      rpcUrl: null,
      from: now - HOUR,
      to: null,
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/^backfill reads chain logs: give --rpc-url/);
  });
});
