import { describe, expect, it } from "vitest";
import { type PriceSeries, seriesLookup } from "../../src/refresh/prices";

/** The definition: the YES price of the last entry at or before `ts`, scanning every entry. */
function priceAt(series: PriceSeries | undefined, ts: number): number | null {
  let price: number | null = null;
  for (let i = 0; i < (series?.ts.length ?? 0); i++) {
    if (series!.ts[i]! <= ts) price = series!.yes[i]!;
  }
  return price;
}

describe("seriesLookup", () => {
  it("answers as a scan of the series would, across its sampled blocks and equal times", () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    // Lengths around the 32-entry blocks (0, 1, 31, 32, 33, 64, 65, ...), times on a coarse
    // clock so that runs of equal times cross the blocks' edges.
    const lengths = [0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1_000];
    const series = new Map<number, PriceSeries>();
    lengths.forEach((length, marketId) => {
      const ts = new Float64Array(length);
      const yes = new Float64Array(length);
      let at = 1_000;
      for (let i = 0; i < length; i++) {
        at += random(3) * 1_000; // 0: the same time as the entry before
        ts[i] = at;
        yes[i] = random(1_000) / 1_000;
      }
      series.set(marketId, { ts, yes, lastYes: null, lastNo: null });
    });
    const lookup = seriesLookup(series);
    let asked = 0;
    for (const [marketId, s] of series) {
      const last = s.ts.length ? s.ts[s.ts.length - 1]! : 1_000;
      for (let ts = 0; ts <= last + 2_000; ts += 500) {
        expect(lookup.yesPriceAt(marketId, ts)).toBe(priceAt(s, ts));
        asked++;
      }
    }
    expect(asked).toBeGreaterThan(2_000);
    // A market with no series has no price.
    expect(lookup.yesPriceAt(999, 5_000)).toBeNull();
  });
});
