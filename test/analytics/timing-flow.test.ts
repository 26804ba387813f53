import { describe, expect, it } from "vitest";
import { marketFlow } from "../../src/analytics/flow";
import {
  favourableMove,
  meanFavourableMove,
  type ResolvedTrade,
  storedTiming,
  timedTrade,
  timingBuckets,
  timingFromStored,
} from "../../src/analytics/timing";
import { DAY, fill, HOUR, MIN, T0 } from "./fills";

const R = T0 + 100 * DAY;
const trade = (hoursBefore: number, side: "BUY" | "SELL", outcome: "YES" | "NO") =>
  timedTrade({
    side,
    outcome,
    ts: R - hoursBefore * HOUR,
    resolvedOutcome: "YES",
    resolvedAt: R,
  } satisfies ResolvedTrade);

describe("timing buckets", () => {
  it("bucket trades by hours before resolution with each bucket's win rate", () => {
    const buckets = timingBuckets([
      trade(0.5, "BUY", "YES"), // <1h, win
      trade(2, "SELL", "YES"), // 1-6h, loss (sold the winner)
      trade(2, "SELL", "NO"), // 1-6h, win (sold the loser)
      trade(6, "BUY", "NO"), // 6-24h, loss
      trade(72, "BUY", "YES"), // 1-7d, win
      trade(240, "BUY", "YES"), // 7-30d, win
      trade(960, "BUY", "NO"), // >30d, loss
      trade(-1, "BUY", "YES"), // after resolution: left out
    ]);
    expect(buckets).toEqual([
      { label: "<1h", count: 1, wins: 1, winRate: 1 },
      { label: "1-6h", count: 2, wins: 1, winRate: 0.5 },
      { label: "6-24h", count: 1, wins: 0, winRate: 0 },
      { label: "1-7d", count: 1, wins: 1, winRate: 1 },
      { label: "7-30d", count: 1, wins: 1, winRate: 1 },
      { label: ">30d", count: 1, wins: 0, winRate: 0 },
    ]);
  });

  it("keep every bucket and only the latest 500 trades", () => {
    const old = Array.from({ length: 100 }, () => trade(2000, "BUY", "NO"));
    const recent = Array.from({ length: 500 }, () => trade(0.1, "BUY", "YES"));
    const buckets = timingBuckets([...old, ...recent]);
    expect(buckets[0]).toEqual({ label: "<1h", count: 500, wins: 500, winRate: 1 });
    expect(buckets[5]).toEqual({ label: ">30d", count: 0, wins: 0, winRate: null });
  });

  it("stores each bucket's count and wins, and reads the same buckets back", () => {
    const buckets = timingBuckets([
      ...Array.from({ length: 7 }, (_, i) => trade(240, "BUY", i < 2 ? "YES" : "NO")),
      trade(0.5, "BUY", "YES"),
    ]);
    const stored = storedTiming(buckets);
    expect(stored).toBe("[1,1,0,0,0,0,0,0,7,2,0,0]");
    expect(timingFromStored(stored)).toEqual(buckets);
    expect(timingFromStored(stored)[4]!.winRate).toBe(2 / 7);
    expect(() => timingFromStored("[1,1]")).toThrow(/2 values, not 12/);
  });

  it("the timing measure is the mean move of the bet's side over 24 hours", () => {
    expect(
      meanFavourableMove([
        { move24h: favourableMove(0.4, 0.55) },
        { move24h: favourableMove(0.3, 0.35) },
        { move24h: favourableMove(0.6, null) },
        { move24h: favourableMove(null, 0.9) },
      ]),
    ).toBeCloseTo(0.1, 12);
    expect(favourableMove(0.6, null)).toBeNull();
    expect(favourableMove(null, 0.9)).toBeNull();
    expect(meanFavourableMove([{}])).toBeNull();
  });
});

describe("market flow", () => {
  const to = T0 + 10 * DAY;
  const flow = marketFlow(
    [
      fill("a", 1, "BUY", "YES", 100, 0.6, to - 58 * MIN), // bucket 0
      fill("b", 1, "SELL", "NO", 50, 0.3, to - 57 * MIN), // bucket 0
      fill("a", 1, "BUY", "NO", 20, 0.4, to - MIN), // bucket 11
      fill("c", 1, "SELL", "YES", 10, 0.64, to), // bucket 11 (the window's end is included)
      fill("d", 1, "BUY", "YES", 999, 0.5, to - 61 * MIN), // before the window
    ],
    { to, minutes: 60 },
  );

  it("cuts the window into 12 buckets and sums the money in each", () => {
    expect(flow.buckets).toHaveLength(12);
    expect(flow.buckets[0]).toMatchObject({
      start: to - 60 * MIN,
      end: to - 55 * MIN,
      yesBuyUsd: 60,
      noSellUsd: 15,
    });
    expect(flow.buckets[0]).toMatchObject({ netFlow: 75, uniqueWallets: 2, trades: 2 });
    // YES-terms VWAP: (0.6 × 100 + 0.7 × 50) / 150
    expect(flow.buckets[0]!.avgPrice).toBeCloseTo(95 / 150, 12);
    const last = flow.buckets[11]!;
    expect(last).toMatchObject({ noBuyUsd: 8, uniqueWallets: 2, trades: 2, end: to });
    expect(last.yesSellUsd).toBeCloseTo(6.4, 12);
    expect(last.netFlow).toBeCloseTo(-14.4, 12);
    expect(last.avgPrice).toBeCloseTo((0.6 * 20 + 0.64 * 10) / 30, 12);
    expect(flow.buckets[5]).toMatchObject({
      trades: 0,
      netFlow: 0,
      uniqueWallets: 0,
      avgPrice: null,
    });
  });

  it("totals the window", () => {
    expect(flow.totalVolume).toBeCloseTo(89.4, 12);
    expect(flow.netYes).toBeCloseTo(53.6, 12); // 60 − 6.4
    expect(flow.netNo).toBeCloseTo(-7, 12); // 8 − 15
    expect(flow).toMatchObject({ windowMinutes: 60, from: to - 60 * MIN, to, uniqueWallets: 3 });
  });
});
