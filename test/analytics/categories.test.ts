import { describe, expect, it } from "vitest";
import {
  categoryBaseRates,
  consistencyShare,
  counterConsensusWins,
  walletCategoryStats,
} from "../../src/analytics/categories";
import { bet } from "./bet-builder";

// Wallet w: politics 3 of 4 (plus one open bet), crypto 1 of 4, sports 2 of 2: globally 6 of 10.
const walletBets = [
  bet({ marketId: 1, category: "politics", won: true, entryPrice: 0.3, volume: 10 }),
  bet({ marketId: 2, category: "politics", won: true, entryPrice: 0.6, volume: 20 }),
  bet({ marketId: 3, category: "politics", won: true, entryPrice: 0.45, volume: 30 }),
  bet({ marketId: 4, category: "politics", won: false, entryPrice: 0.2, volume: 40 }),
  bet({ marketId: 5, category: "politics", won: null, entryPrice: 0.5, volume: 50 }),
  bet({ marketId: 6, category: "crypto", won: true, entryPrice: 0.1, volume: 1 }),
  bet({ marketId: 7, category: "crypto", won: false, entryPrice: 0.7, volume: 2 }),
  bet({ marketId: 8, category: "crypto", won: false, entryPrice: 0.7, volume: 3 }),
  bet({ marketId: 9, category: "crypto", won: false, entryPrice: 0.7, volume: 4 }),
  bet({ marketId: 10, category: "sports", won: true, entryPrice: 0.8, volume: 5 }),
  bet({ marketId: 11, category: "sports", won: true, entryPrice: 0.5, volume: 6 }),
  bet({ marketId: 12, category: null, won: null, entryPrice: 0.5, volume: 7 }),
];

describe("category statistics", () => {
  it("base rates pool every wallet's resolved bets per category", () => {
    const others = [
      bet({ category: "politics", won: false, entryPrice: 0.5 }),
      bet({ category: "politics", won: false, entryPrice: 0.5 }),
      bet({ category: "politics", won: true, entryPrice: 0.5 }),
      bet({ category: "crypto", won: null, entryPrice: 0.5 }),
    ];
    const rates = categoryBaseRates([...walletBets, ...others]);
    expect(rates.get("politics")).toEqual({
      category: "politics",
      resolvedBets: 7,
      wins: 4,
      baseRate: 4 / 7,
    });
    expect(rates.get("crypto")?.baseRate).toBe(0.25);
    expect(rates.has("null")).toBe(false);
    expect([...rates.keys()].sort()).toEqual(["crypto", "politics", "sports"]);
  });

  it("give each category its win rate, edge over the global rate, volume and PnL", () => {
    const rates = categoryBaseRates(walletBets);
    const pnl = new Map([
      [1, 5],
      [2, 6],
      [3, 7],
      [4, -8],
      [5, 1.5],
    ]);
    const stats = walletCategoryStats(walletBets, {
      baseRates: new Map([
        ["politics", { category: "politics", resolvedBets: 20, wins: 10, baseRate: 0.5 }],
      ]),
      pnlOfMarket: (id) => pnl.get(id) ?? null,
    });
    expect(stats.map((s) => s.category)).toEqual(["crypto", "politics", "sports"]);
    const politics = stats.find((s) => s.category === "politics")!;
    expect(politics).toMatchObject({
      bets: 5,
      resolvedBets: 4,
      wins: 3,
      winRate: 0.75,
      volume: 150,
    });
    expect(politics.edge).toBeCloseTo(0.75 - 0.6, 12);
    expect(politics.edgeOverBaseRate).toBeCloseTo(0.25, 12);
    expect(politics.pnl).toBeCloseTo(11.5, 12);
    expect(politics.counterConsensusWins).toBe(2); // wins at 0.30 and 0.45
    const crypto = stats.find((s) => s.category === "crypto")!;
    expect(crypto.edge).toBeCloseTo(0.25 - 0.6, 12);
    expect(crypto.pnl).toBeNull(); // no trustworthy figure for its markets
    expect(crypto.edgeOverBaseRate).toBeNull();
    expect(rates.get("sports")?.baseRate).toBe(1);
  });

  it("consistency counts categories with at least 3 resolved bets and a positive edge", () => {
    // politics (+0.15) counts, crypto (−0.35) counts against, sports (2 resolved) is too small.
    expect(consistencyShare(walletCategoryStats(walletBets))).toBe(0.5);
    expect(consistencyShare(walletCategoryStats(walletBets.slice(9)))).toBeNull();
  });

  it("counter-consensus wins are wins entered below 0.5", () => {
    // wins at 0.30, 0.45 (politics) and 0.10 (crypto); 0.60, 0.80 and 0.50 are not below.
    expect(counterConsensusWins(walletBets)).toBe(3);
  });
});
