import { describe, expect, it } from "vitest";
import { type InsiderFacts, insiderScore } from "../../src/analytics/insider";
import { firstBoundCeiling } from "../../src/signals/detector";

const DAY = 86_400_000;
const TS = Date.parse("2026-11-01T12:00:00.000Z");

/** The facts of the detector's first bound: no reads yet, the unknowns at their most. */
function firstBound(
  usd: number,
  side: "BUY" | "SELL",
  price: number,
  clusterSize: number,
  firstFundedAt: number | null,
  record: { resolved: number; wins: number; investigated: boolean },
): InsiderFacts {
  return {
    side,
    outcome: "YES",
    price,
    usd,
    tradeTs: TS,
    marketVolumeUsd: usd,
    clusterSize,
    freshSameSideWallets: 3,
    firstFundedAt,
    priorTrades: 0,
    walletVolumeUsd: 1,
    walletMarketVolumeUsd: 1,
    clusterResolvedBets: record.resolved,
    clusterWins: record.wins,
    clusterUnderInvestigation: record.investigated,
  };
}

const USD = [0, 0.01, 1, 12.5, 100, 333.33, 500, 749.99, 750, 999.99, 1000, 1000.01, 5e3, 1e5, 1e7];
const PRICES = [0, 0.001, 0.05, 0.1, 0.2, 0.2000001, 0.24, 0.25, 0.5, 0.99, 1];
const CLUSTERS = [0, 1, 2, 3, 5, 40];
const FUNDED = [null, TS, TS - DAY, TS - 7 * DAY + 1, TS - 7 * DAY, TS - 30 * DAY, TS + DAY];
const RECORDS = [
  { resolved: 0, wins: 0, investigated: false },
  { resolved: 10, wins: 10, investigated: false },
  { resolved: 200, wins: 150, investigated: false },
  { resolved: 3, wins: 0, investigated: true },
];

describe("the ceiling on the detector's first bound", () => {
  it("is never below the score insiderScore gives the same facts, beyond its rounding slack", () => {
    let checked = 0;
    for (const usd of USD)
      for (const price of PRICES)
        for (const side of ["BUY", "SELL"] as const)
          for (const size of CLUSTERS)
            for (const funded of FUNDED)
              for (const record of RECORDS) {
                const facts = firstBound(usd, side, price, size, funded, record);
                const fresh = funded !== null && TS - funded < 7 * DAY;
                const ceiling = firstBoundCeiling(usd, side, price, size >= 2, fresh);
                const { score } = insiderScore(facts);
                if (score > ceiling + 0.045) {
                  expect.fail(`score ${score} over ceiling ${ceiling}: ${JSON.stringify(facts)}`);
                }
                checked++;
              }
    expect(checked).toBe(USD.length * PRICES.length * 2 * CLUSTERS.length * FUNDED.length * 4);
  });

  it("rules out the trades that matter most in a bulk file: not fresh, in no cluster, no long odds", () => {
    for (const usd of [1, 500, 1e6]) {
      expect(firstBoundCeiling(usd, "SELL", 0.05, false, false)).toBeLessThan(64.9);
      expect(firstBoundCeiling(usd, "BUY", 0.6, false, false)).toBeLessThan(64.9);
    }
    // A fresh wallet's small bet, and a long shot under 750 USD, are ruled out too.
    expect(firstBoundCeiling(100, "BUY", 0.6, false, true)).toBeLessThan(64.9);
    expect(firstBoundCeiling(700, "BUY", 0.05, false, false)).toBeLessThan(64.9);
    // A cluster member's trade may fire on the cluster alone: always looked at.
    expect(firstBoundCeiling(0, "SELL", 0.9, true, false)).toBeGreaterThanOrEqual(65);
  });
});
