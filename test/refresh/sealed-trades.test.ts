import { describe, expect, it } from "vitest";
import { timingBuckets } from "../../src/analytics/timing";
import {
  type IdTimedTrade,
  keepRecent,
  mergeInTimeOrder,
  packSealedTrades,
  unpackSealedTrades,
} from "../../src/refresh/sealed-trades";

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A wallet's 1,500 trades in (ts, id) order over 40 markets, many at the same moment (a block
 * holds several of a bot's trades), resolved at various distances.
 */
function tradesOf(seed: number): (IdTimedTrade & { market: number })[] {
  const next = random(seed);
  let ts = 1_700_000_000_000;
  return Array.from({ length: 1_500 }, (_, i) => {
    if (next() < 0.6) ts += Math.floor(next() * 3) * 1_000;
    return {
      ts,
      id: i + 1,
      market: Math.floor(next() * 40),
      bucket: Math.floor(next() * 7) - 1,
      won: next() < 0.5,
    };
  });
}

describe("a wallet's sealed trades", () => {
  it("keep the timing buckets exact whatever markets are sealed, in whatever order", () => {
    for (let seed = 1; seed <= 20; seed += 1) {
      const all = tradesOf(seed);
      const expected = timingBuckets(all);
      // Seal the markets in four compactions of ten markets, in a shuffled order.
      const order = Array.from({ length: 40 }, (_, m) => m).sort(
        (a, b) => ((a * 7919 + seed) % 40) - ((b * 7919 + seed) % 40),
      );
      let sealed: IdTimedTrade[] = [];
      const sealedMarkets = new Set<number>();
      for (let step = 0; step < 4; step += 1) {
        const batch = new Set(order.slice(step * 10, step * 10 + 10));
        sealed = keepRecent(
          sealed,
          all.filter((t) => batch.has(t.market)),
        );
        for (const m of batch) sealedMarkets.add(m);
        expect(sealed.length).toBeLessThanOrEqual(500);
        const live = all.filter((t) => !sealedMarkets.has(t.market));
        expect(timingBuckets(mergeInTimeOrder(live, sealed)), `seed ${seed} step ${step}`).toEqual(
          expected,
        );
      }
    }
  });

  it("keep the trades the buckets take first: of trades at the same moment, the lowest id", () => {
    const at = (ts: number, id: number): IdTimedTrade => ({ ts, id, bucket: 0, won: true });
    const stored = Array.from({ length: 499 }, (_, i) => at(10 + i, 100 + i));
    // Three at the oldest kept moment's neighbour: only the one with the lowest id stays.
    const kept = keepRecent(stored, [at(5, 1), at(5, 2), at(5, 3)]);
    expect(kept).toHaveLength(500);
    expect(kept[0]).toEqual(at(5, 1));
    expect(kept.slice(1)).toEqual(stored);
  });

  it("are stored as they are read back", () => {
    const trades = tradesOf(3)
      .slice(0, 50)
      .map(({ market: _, ...t }) => t);
    expect(unpackSealedTrades(packSealedTrades(trades))).toEqual(trades);
    const far = { ts: 1_700_000_000_123, id: 2 ** 45 + 7, bucket: -1, won: true };
    expect(unpackSealedTrades(packSealedTrades([far]))).toEqual([far]);
    // From an odd offset, as a blob may sit in a larger buffer.
    const padded = Buffer.concat([Buffer.from([9]), packSealedTrades(trades)]).subarray(1);
    expect(unpackSealedTrades(padded)).toEqual(trades);
  });
});
