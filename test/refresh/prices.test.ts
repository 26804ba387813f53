import { afterAll, describe, expect, it } from "vitest";
import { type PriceSeries, readPriceSeries, seriesLookup } from "../../src/refresh/prices";
import { createTestApp } from "../helpers/app";

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

describe("readPriceSeries", () => {
  const t = createTestApp();
  afterAll(() => t.close());

  it("gives each market's fills in (time, id) order, back-dated ones and ties included", () => {
    const w = t.db.writer;
    const markets = [1, 2, 3, 7];
    for (const id of markets) {
      w.prepare("INSERT INTO markets (id, slug, title, condition_id) VALUES (?, ?, ?, ?)").run(
        id,
        `m-${id}`,
        `Market ${id}?`,
        `0x${id.toString(16).padStart(64, "0")}`,
      );
    }
    const insert = w.prepare(
      `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
         usd_value, ts) VALUES (?, 0, ?, ?, ?, 'BUY', ?, 10, ?, ?)`,
    );
    let seed = 5;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    // Market 1 in time order; 2 with back-dated fills; 3 with many fills at one time; 7 with
    // one fill. Prices on a 3-decimal grid (stored in millionths) and off it (stored as REALs).
    const T0 = Date.parse("2026-10-01T00:00:00.000Z");
    let n = 0;
    const fill = (market: number, ts: number) => {
      n += 1;
      const price = n % 3 === 0 ? 1 / (3 + random(5)) : (1 + random(998)) / 1_000;
      insert.run(
        `0x${n.toString(16).padStart(64, "0")}`,
        `0x${(1 + random(5)).toString(16).padStart(40, "0")}`,
        market,
        random(2) ? "NO" : "YES",
        price,
        price * 10,
        ts,
      );
    };
    for (let i = 0; i < 300; i++) {
      fill(1, T0 + i * 60_000);
      fill(2, T0 + (i % 10 === 9 ? i - 50 : i) * 60_000);
      fill(3, T0 + Math.floor(i / 40) * 60_000);
    }
    fill(7, T0);
    // The definition: every fill sorted by market, time and id.
    const rows = w
      .prepare(`SELECT market_id, outcome, price, ts FROM trades ORDER BY market_id, ts, id`)
      .all() as { market_id: number; outcome: "YES" | "NO"; price: number; ts: number }[];
    const series = readPriceSeries(t.db);
    expect([...series.keys()].sort((a, b) => a - b)).toEqual(markets);
    for (const id of markets) {
      const own = rows.filter((r) => r.market_id === id);
      const s = series.get(id)!;
      expect([...s.ts], `market ${id}`).toEqual(own.map((r) => r.ts));
      expect([...s.yes], `market ${id}`).toEqual(
        own.map((r) => (r.outcome === "YES" ? r.price : 1 - r.price)),
      );
      expect(s.lastYes).toBe(own.filter((r) => r.outcome === "YES").at(-1)?.price ?? null);
      expect(s.lastNo).toBe(own.filter((r) => r.outcome === "NO").at(-1)?.price ?? null);
    }
    // The back-dated market's fills did come out of time order in id order.
    const byId = w
      .prepare("SELECT ts FROM trades WHERE market_id = 2 ORDER BY id")
      .pluck()
      .all() as number[];
    expect(byId.some((ts, i) => i > 0 && ts < byId[i - 1]!)).toBe(true);
  });
});
