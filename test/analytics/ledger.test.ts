import { describe, expect, it } from "vitest";
import {
  applyFillToPosition,
  averageCost,
  newPosition,
  PnlLedger,
  type PositionState,
  valuationFor,
  valuePosition,
} from "../../src/analytics/ledger";
import { cents, fill, HOUR, T0 } from "./fills";

function play(...fills: [side: "BUY" | "SELL", size: number, price: number][]): PositionState {
  const pos = newPosition();
  fills.forEach(([side, size, price], i) => {
    applyFillToPosition(pos, { side, size, price, ts: T0 + i * HOUR });
  });
  return pos;
}

describe("average-cost ledger", () => {
  // BUY 100 @ 0.40 and 50 @ 0.70: 150 shares costing 75 (avg 0.50).
  // SELL 60 @ 0.65 realises +9.00; SELL 30 @ 0.30 realises −6.00; 60 shares costing 30 remain.
  const partial = () =>
    play(["BUY", 100, 0.4], ["BUY", 50, 0.7], ["SELL", 60, 0.65], ["SELL", 30, 0.3]);

  it("realises (price − average cost) × shares on partial sells", () => {
    const pos = partial();
    expect(cents(pos.realised)).toBe(3);
    expect(cents(pos.shares)).toBe(60);
    expect(cents(pos.costBasis)).toBe(30);
    expect(averageCost(pos)).toBeCloseTo(0.5, 12);
  });

  it("marks an open position at the outcome's last trade price", () => {
    const pnl = valuePosition(partial(), { kind: "open", markPrice: 0.55 });
    expect(cents(pnl.mark)).toBe(3); // 60 × 0.55 − 30
    expect(pnl.settlement).toBe(0);
    expect(cents(pnl.total)).toBe(6);
  });

  it("settles the shares left at 1 for the winner and 0 for the loser", () => {
    const won = valuePosition(partial(), { kind: "resolved", payout: 1 });
    expect(cents(won.settlement)).toBe(30);
    expect(cents(won.total)).toBe(33);
    const lost = valuePosition(partial(), { kind: "resolved", payout: 0 });
    expect(cents(lost.settlement)).toBe(-30);
    expect(cents(lost.total)).toBe(-27);
    expect(won.mark).toBe(0);
  });

  it("counts shares sold beyond holdings as bought at 0.50 (a split)", () => {
    // BUY 10 @ 0.30; SELL 25 @ 0.60: 10 covered (+3.00), 15 beyond at (0.60 − 0.50) (+1.50).
    const pos = play(["BUY", 10, 0.3], ["SELL", 25, 0.6]);
    expect(cents(pos.realised)).toBe(4.5);
    expect(pos.shares).toBe(0);
    expect(pos.costBasis).toBe(0);
    expect(pos.splitShares).toBe(15);
    // A later BUY starts a fresh cost basis; losing it settles −9.00.
    applyFillToPosition(pos, { side: "BUY", size: 20, price: 0.45, ts: T0 + 10 * HOUR });
    const pnl = valuePosition(pos, { kind: "resolved", payout: 0 });
    expect(cents(pnl.settlement)).toBe(-9);
    expect(cents(pnl.total)).toBe(-4.5);
  });

  it("treats a sale with nothing held entirely as a split", () => {
    const pos = play(["SELL", 40, 0.35]);
    expect(cents(pos.realised)).toBe(-6); // (0.35 − 0.50) × 40
    expect(pos.splitShares).toBe(40);
  });

  it("marks at its own last fill when the caller has no market price", () => {
    const pos = play(["BUY", 10, 0.2], ["BUY", 10, 0.4]);
    expect(cents(valuePosition(pos, { kind: "open", markPrice: null }).mark)).toBe(2); // 20 × 0.40 − 6
  });

  it("refuses a fill older than one already applied", () => {
    const pos = play(["BUY", 10, 0.2], ["BUY", 10, 0.4]);
    expect(() => applyFillToPosition(pos, { side: "SELL", size: 1, price: 0.5, ts: T0 })).toThrow(
      RangeError,
    );
  });

  it("resumes from a persisted state exactly as if it had never stopped", () => {
    const steps: [side: "BUY" | "SELL", size: number, price: number][] = [
      ["BUY", 120, 0.31],
      ["SELL", 45, 0.52],
      ["BUY", 7, 0.66],
      ["SELL", 100, 0.48],
      ["BUY", 33, 0.12],
    ];
    const whole = play(...steps);
    const firstHalf = play(...steps.slice(0, 2));
    const resumed: PositionState = JSON.parse(JSON.stringify(firstHalf));
    steps.slice(2).forEach(([side, size, price], i) => {
      applyFillToPosition(resumed, { side, size, price, ts: T0 + (i + 2) * HOUR });
    });
    expect(resumed).toEqual(whole);
  });

  it("adds up per wallet across markets and outcomes", () => {
    const ledger = new PnlLedger();
    for (const f of [
      fill("a", 1, "BUY", "YES", 100, 0.5, T0),
      fill("a", 1, "BUY", "NO", 50, 0.4, T0 + HOUR),
      fill("a", 2, "BUY", "YES", 10, 0.9, T0 + 2 * HOUR),
      fill("b", 2, "BUY", "NO", 100, 0.05, T0 + 2 * HOUR),
      fill("a", 2, "SELL", "YES", 10, 0.95, T0 + 3 * HOUR),
    ]) {
      ledger.apply(f);
    }
    const resolved = new Map([[1, "YES" as const]]);
    const lastPrice = new Map([
      ["2:YES", 0.97],
      ["2:NO", 0.03],
    ]);
    const pnl = ledger.walletPnl((market, outcome) =>
      valuationFor(
        outcome,
        resolved.get(market) ?? null,
        lastPrice.get(`${market}:${outcome}`) ?? null,
      ),
    );
    // a: market 1 YES settles 100 − 50 = +50, NO settles 0 − 20 = −20; market 2 realises +0.50.
    const a = pnl.get("a")!;
    expect(cents(a.realised)).toBe(0.5);
    expect(cents(a.settlement)).toBe(30);
    expect(a.mark).toBe(0);
    expect(cents(a.total)).toBe(30.5);
    // b: 100 NO at 0.05 marked at 0.03.
    expect(cents(pnl.get("b")!.total)).toBe(-2);
    expect([...ledger.positions()]).toHaveLength(4);
  });
});
