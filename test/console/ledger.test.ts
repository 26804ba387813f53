import { describe, expect, it } from "vitest";
import { type LedgerFill, type MarketEnd, pnlOverTime } from "../../console/ledger";

/** The console's PnL replay (console/ledger.ts) on the worked example of docs/methodology.md. */
const HOUR = 3_600_000;
const fill = (side: "BUY" | "SELL", size: number, price: number, hour: number): LedgerFill => ({
  market: "m",
  outcome: "YES",
  side,
  price,
  size,
  ts: hour * HOUR,
});
const example = [
  fill("BUY", 100, 0.4, 1),
  fill("BUY", 50, 0.7, 2),
  fill("SELL", 60, 0.65, 3),
  fill("SELL", 30, 0.3, 4),
];
const end = (m: Partial<MarketEnd>): Map<string, MarketEnd> =>
  new Map([
    ["m", { resolvedOutcome: null, resolvedAt: null, lastTrade: { YES: null, NO: null }, ...m }],
  ]);

describe("pnlOverTime", () => {
  it("ends at +33.00 when YES wins, with a point at the resolution", () => {
    const series = pnlOverTime(
      example,
      end({ resolvedOutcome: "YES", resolvedAt: 10 * HOUR }),
      20 * HOUR,
    );
    expect(series.at).toEqual([1, 2, 3, 4, 10, 20].map((h) => h * HOUR));
    expect(series.pnl.at(-1)).toBe(33);
    expect(series.pnl.at(-2)).toBe(33);
  });

  it("ends at +6.00 while open with YES last traded at 0.55, marking at the wallet's price before", () => {
    const series = pnlOverTime(example, end({ lastTrade: { YES: 0.55, NO: 0.45 } }), 20 * HOUR);
    // After the second buy: 150 shares cost 75, marked at 0.70: +30.
    expect(series.pnl[1]).toBe(30);
    // After selling 60 at 0.65 (+9): 90 shares cost 45, marked at 0.65: +13.50.
    expect(series.pnl[2]).toBe(22.5);
    expect(series.pnl.at(-1)).toBe(6);
  });

  it("counts shares sold beyond the holding as bought at 0.50 (a split)", () => {
    const series = pnlOverTime(
      [fill("BUY", 10, 0.4, 1), fill("SELL", 30, 0.8, 2)],
      end({ lastTrade: { YES: 0.8, NO: 0.2 } }),
      3 * HOUR,
    );
    // 10 × (0.80 − 0.40) + 20 × (0.80 − 0.50) = 4 + 6.
    expect(series.pnl.at(-1)).toBe(10);
  });

  it("settles a losing side at 0", () => {
    const series = pnlOverTime(
      example,
      end({ resolvedOutcome: "NO", resolvedAt: 10 * HOUR }),
      20 * HOUR,
    );
    // Realised +3.00, the 60 shares left (cost 30) settle at 0.
    expect(series.pnl.at(-1)).toBe(-27);
  });
});
