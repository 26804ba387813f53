import { describe, expect, it } from "vitest";
import {
  fallbackScore,
  SIGNAL_WEIGHTS,
  type SignalName,
  type SmartMoneyFacts,
  smartMoneyFacts,
  smartMoneyScore,
} from "../../src/analytics/score";
import { winsVersusPrices } from "../../src/analytics/wins-test";
import { bet } from "./bet-builder";

const facts: SmartMoneyFacts = {
  resolvedBets: 50,
  wins: 35,
  bayesianWinRate: 45 / 70,
  meanEntryEdge: 0.1,
  log10PValue: -2.4,
  totalPnl: 2000,
  totalVolume: 10_000,
  consistency: 0.5,
  meanMove24h: 0.05,
  counterConsensusWins: 14,
};

const signalPoints = (breakdown: object) =>
  (Object.keys(SIGNAL_WEIGHTS) as SignalName[]).map(
    (k) => (breakdown as Record<SignalName, number>)[k],
  );

describe("smart-money score", () => {
  it("weights each signal and keeps its points in the breakdown", () => {
    const result = smartMoneyScore(facts);
    expect(result.breakdown).toEqual({
      method: "signals",
      skill: 9.52, // (0.642857 − 0.5) / 0.3 = 0.476 × 20
      edge: 8, // 0.1 / 0.25 × 20
      significance: 12, // 2.4 / 3 × 15
      roi: 4, // 0.2 / 0.5 × 10
      consistency: 5,
      timing: 2.5, // 0.05 / 0.2 × 10
      contrarian: 2, // 14 / 35 × 5
      experience: 7.38, // log10 50 / log10 200 = 0.738 × 10
    });
    expect(result.score).toBe(50.4);
    expect(result.confidence).toBeCloseTo(50 / 70, 15);
  });

  it("has a breakdown that sums to the score", () => {
    for (const f of [
      facts,
      { ...facts, wins: 3, resolvedBets: 7, totalPnl: -50, log10PValue: -0.1 },
    ]) {
      const result = smartMoneyScore(f);
      const sum = signalPoints(result.breakdown).reduce((a, b) => a + b, 0);
      expect(sum).toBeCloseTo(result.score, 9);
    }
  });

  it("clamps every signal to 0..1 of its weight", () => {
    const top = smartMoneyScore({
      resolvedBets: 5000,
      wins: 4900,
      bayesianWinRate: 0.97,
      meanEntryEdge: 0.9,
      log10PValue: -400,
      totalPnl: 1e9,
      totalVolume: 1,
      consistency: 1,
      meanMove24h: 0.9,
      counterConsensusWins: 4900,
    });
    expect(top.score).toBe(100);
    expect(signalPoints(top.breakdown)).toEqual(Object.values(SIGNAL_WEIGHTS));
    const bottom = smartMoneyScore({
      resolvedBets: 1,
      wins: 0,
      bayesianWinRate: 10 / 21,
      meanEntryEdge: -0.4,
      log10PValue: 0,
      totalPnl: -500,
      totalVolume: 1000,
      consistency: 0,
      meanMove24h: -0.3,
      counterConsensusWins: 0,
    });
    expect(bottom.score).toBe(0);
    expect(signalPoints(bottom.breakdown).every((p) => p === 0)).toBe(true);
  });

  it("gives no ROI points without a trustworthy PnL", () => {
    expect(smartMoneyScore({ ...facts, totalPnl: null }).breakdown).toMatchObject({ roi: 0 });
  });

  it("falls back to 100 × bayesian_win_rate and says so", () => {
    expect(fallbackScore(7, 10)).toEqual({
      score: 56.67, // 17 / 30
      confidence: 10 / 30,
      breakdown: { method: "bayesian_fallback", bayesian_win_rate: 17 / 30 },
    });
    expect(fallbackScore(0, 0)).toEqual({
      score: 50,
      confidence: 0,
      breakdown: { method: "bayesian_fallback", bayesian_win_rate: null },
    });
  });
});

describe("score facts from bets", () => {
  it("gathers each measure from the wallet's bets", () => {
    const bets = [
      bet({ category: "politics", won: true, entryPrice: 0.4, move24h: 0.5 - 0.4, volume: 400 }),
      bet({ category: "politics", won: true, entryPrice: 0.6, move24h: 0.7 - 0.6, volume: 300 }),
      bet({ category: "politics", won: false, entryPrice: 0.5, move24h: 0.3 - 0.5, volume: 200 }),
      bet({ category: "crypto", won: true, entryPrice: 0.2, volume: 50 }),
      bet({ category: "crypto", won: null, entryPrice: 0.3, move24h: 0.4 - 0.3, volume: 50 }),
    ];
    const f = smartMoneyFacts(bets, { totalPnl: 120 });
    expect(f).toMatchObject({ resolvedBets: 4, wins: 3, totalPnl: 120, totalVolume: 1000 });
    expect(f.bayesianWinRate).toBeCloseTo(13 / 24, 15);
    // (1 − 0.4) + (1 − 0.6) + (0 − 0.5) + (1 − 0.2) = 1.3 over 4 bets
    expect(f.meanEntryEdge).toBeCloseTo(0.325, 12);
    expect(f.log10PValue).toBeCloseTo(winsVersusPrices([0.4, 0.6, 0.5, 0.2], 3).log10PValue, 12);
    // politics has 3 resolved bets at 2/3 against a global 3/4; crypto has 1.
    expect(f.consistency).toBe(0);
    // moves: +0.1, +0.1, −0.2, +0.1 over the four bets with a later price
    expect(f.meanMove24h).toBeCloseTo(0.025, 12);
    expect(f.counterConsensusWins).toBe(2); // wins at 0.4 and 0.2
  });
});
