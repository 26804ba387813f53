import { afterEach, describe, expect, it, vi } from "vitest";
import { FIRST_RETRY_MS } from "../../src/db/storage";
import { realSleep } from "../../src/ingest/polymarket/limiter";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { INGEST_WRITER, startLiveStream } from "../../src/ingest/polymarket/stream";
import { count, harness } from "../polymarket/harness";
import { startSimulator } from "../simulator/server";
import { SimWorld } from "../simulator/world";

/**
 * The live socket on a full disk (SQLite's max_page_count on the writer, as in
 * serve-full.test.ts): its batches stop being written while the ingest waits for its retry, and
 * the round's tail fetches what the socket sent meanwhile. The wall clock (Date only) is faked
 * for the storage watch's backoff; the socket's own timers run in real time.
 */
const NOW = "2026-07-18T00:00:00Z";
const START = Date.parse("2026-11-25T10:00:00.000Z");

afterEach(() => {
  vi.useRealTimers();
});

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await realSleep(20);
  }
}

describe("the live stream on a full disk", () => {
  it("drops its batches instead of failing every flush, and the tail fetches them once there is room", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(START);
    const h = harness(NOW);
    const sim = await startSimulator({
      world: new SimWorld({ marketsPerEvent: 2, wallets: 50, events: 20, now: h.t.clock.now() }),
      now: () => h.t.clock.now(),
    });
    const settings = {
      dataUrl: sim.url,
      gammaUrl: sim.url,
      rpcUrl: null,
      since: Date.parse(NOW) - 3_600_000,
      leaderboardDepth: 50,
    };
    const storage = h.t.db.storage;
    const stream = startLiveStream(h.deps, settings, { url: sim.wsUrl, flushMs: 20 });
    try {
      await until(() => sim.socketClients() === 1, "the subscription");
      sim.emit(10);
      await until(() => stream.stats.stored === 10, "10 streamed trades");

      h.t.db.writer.exec("VACUUM");
      h.t.db.writer.pragma(
        `max_page_count = ${h.t.db.writer.pragma("page_count", { simple: true })}`,
      );
      // Enough trades that a batch needs pages the database does not have.
      for (let i = 0; i < 40 && storage.status().state === "ok"; i++) {
        sim.emit(50);
        await realSleep(60);
      }
      expect(storage.status()).toMatchObject({ state: "full", writers: [INGEST_WRITER] });
      const stored = count(h.t, "trades");
      const messages = stream.stats.messages;

      // While the ingest waits for its retry, what the socket sends is not written.
      sim.emit(30);
      await until(() => stream.stats.messages >= messages + 30, "30 more messages");
      await realSleep(100);
      expect(count(h.t, "trades")).toBe(stored);
      expect(h.t.logs.filter((l) => l.msg === "polymarket stream batch failed")).toEqual([]);
      expect(h.t.logs.filter((l) => String(l.msg).startsWith("storage full"))).toHaveLength(1);

      // Space is freed and the retry is due: the next batch is stored and the state clears.
      h.t.db.writer.pragma("max_page_count = 1073741823");
      vi.setSystemTime(START + FIRST_RETRY_MS);
      sim.emit(5);
      await until(() => storage.status().state === "ok", "the storage to clear");
      expect(h.t.logs.filter((l) => String(l.msg).startsWith("storage writable"))).toHaveLength(1);
      // Markets first stored in a batch that rolled back are stored again, not assumed there.
      expect(h.t.logs.filter((l) => l.msg === "polymarket stream batch failed")).toEqual([]);
    } finally {
      await stream.stop();
    }
    // The round's tail fetches what the socket's dropped batches held.
    const round = await runPolymarketRound(h.deps, { ...settings, tail: true });
    expect(round.ok).toBe(true);
    expect(count(h.t, "trades")).toBe(sim.world.fills.length);
    await sim.close();
    h.t.close();
  });
});
