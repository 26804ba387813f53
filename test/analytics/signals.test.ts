import { describe, expect, it } from "vitest";
import { DAY_MS, HOUR_MS } from "../../src/analytics/fill";
import { explainInsiderSignal, type InsiderFacts, insiderScore } from "../../src/analytics/insider";
import { explainWhaleSignal, sizePercentile, whaleSignalScore } from "../../src/analytics/whale";
import { T0 } from "./fills";

describe("whale signal", () => {
  it("ranks the trade's size among the market's trades, itself included", () => {
    expect(sizePercentile(25_000, [100, 500, 25_000, 30_000])).toBe(0.8); // 4 of 5 at or below
    expect(sizePercentile(25_000, [])).toBe(1);
    expect(sizePercentile(50, [100, 500])).toBeCloseTo(1 / 3, 15);
  });

  it("scores 0.7 × smart-money score + 0.3 × size percentile × 100", () => {
    expect(whaleSignalScore(81, 0.8)).toBe(80.7);
    expect(whaleSignalScore(0, 1)).toBe(30);
    expect(whaleSignalScore(100, 1)).toBe(100);
  });

  it("explains itself in one sentence", () => {
    const facts = {
      side: "BUY" as const,
      outcome: "YES" as const,
      price: 0.42,
      usd: 25_000,
      smartMoneyScore: 81,
      sizePercentile: 0.97,
    };
    expect(explainWhaleSignal(facts, whaleSignalScore(81, 0.97))).toBe(
      "Whale score 86: bought $25,000 of YES at 0.42 from a wallet with smart-money score 81; " +
        "the trade is at least as large as 97% of this market's trades.",
    );
  });
});

const quiet: InsiderFacts = {
  side: "BUY",
  outcome: "YES",
  price: 0.45,
  usd: 10,
  tradeTs: T0,
  marketVolumeUsd: 1_000_000,
  clusterSize: 0,
  freshSameSideWallets: 0,
  firstFundedAt: T0 - 400 * DAY_MS,
  priorTrades: 300,
  walletVolumeUsd: 90_000,
  walletMarketVolumeUsd: 10,
  clusterResolvedBets: 0,
  clusterWins: 0,
  clusterUnderInvestigation: false,
};

describe("insider signal", () => {
  it("scales size and odds points by the bet's USD up to 1,000, so lottery tickets do not fire", () => {
    const ticket: InsiderFacts = {
      ...quiet,
      price: 0.05,
      usd: 20,
      marketVolumeUsd: 20, // the whole market so far
      clusterSize: 5,
      firstFundedAt: T0 - HOUR_MS,
      priorTrades: 0,
      walletVolumeUsd: 20,
      walletMarketVolumeUsd: 20,
    };
    const small = insiderScore(ticket);
    expect(small.points.size).toBeCloseTo(20 * 0.02, 10); // share 100%, times 20 / 1,000
    expect(small.points.odds).toBeCloseTo(20 * 0.02, 10);
    expect(small.fires).toBe(false);
    const real = insiderScore({
      ...ticket,
      usd: 1_000,
      marketVolumeUsd: 1_000,
      walletVolumeUsd: 1_000,
      walletMarketVolumeUsd: 1_000,
    });
    expect(real.points).toMatchObject({ size: 20, odds: 20 });
    expect(real.fires).toBe(true);
  });

  it("fires on a fresh wallet's big long shot in a small market", () => {
    const facts: InsiderFacts = {
      ...quiet,
      price: 0.08,
      usd: 8000,
      marketVolumeUsd: 40_000,
      firstFundedAt: T0 - 2 * DAY_MS - 3 * HOUR_MS,
      priorTrades: 1,
      walletVolumeUsd: 8500,
      walletMarketVolumeUsd: 8000,
    };
    const result = insiderScore(facts);
    expect(result.points).toEqual({
      size: 20, // 8,000 / 40,000 = 20% ≥ 10%
      odds: 17, // (0.25 − 0.08) / 0.20 × 20
      funding_cluster: 0,
      timing_cluster: 0,
      freshness: 15, // funded 2 days before, 1 prior trade
      concentration: 10, // 94% of its volume here
      niche_market: 3.98, // log10(100,000 / 40,000) × 10
      cluster_reputation: 0,
    });
    expect(result.score).toBe(65.98);
    expect(result.fires).toBe(true);
    expect(explainInsiderSignal(facts, result)).toBe(
      "Insider score 66: bought $8,000 of YES at 0.08; the bet is 20% of the market's 30-day volume, " +
        "the price gave YES a chance of only 8% and the wallet was first funded 2 days earlier with 1 prior trade.",
    );
  });

  it("scores a coordinated cluster without firing", () => {
    const facts: InsiderFacts = {
      ...quiet,
      outcome: "NO",
      price: 0.35,
      usd: 2000,
      marketVolumeUsd: 500_000,
      clusterSize: 5,
      freshSameSideWallets: 2,
      firstFundedAt: T0 - 30 * DAY_MS,
      priorTrades: 50,
      walletVolumeUsd: 100_000,
      walletMarketVolumeUsd: 2000,
      clusterUnderInvestigation: true,
    };
    const result = insiderScore(facts);
    expect(result.points).toEqual({
      size: 0.8, // 0.4% of the market
      odds: 0,
      funding_cluster: 15, // 5 members
      timing_cluster: 10, // 2 fresh wallets on the same side
      freshness: 0,
      concentration: 0,
      niche_market: 0,
      cluster_reputation: 15, // under investigation
    });
    expect(result).toMatchObject({ score: 40.8, fires: false });
    // Ties (15 and 15) keep the categories' own order.
    expect(explainInsiderSignal(facts, result)).toBe(
      "Insider score 41: bought $2,000 of NO at 0.35; its funder also funded 4 other wallets, " +
        "its funding cluster is under investigation and 2 other fresh wallets bought NO here within the hour.",
    );
  });

  it("rates a cluster by its Bayesian win rate once it has 10 resolved bets", () => {
    const facts = { ...quiet, clusterSize: 3, clusterResolvedBets: 30, clusterWins: 24 };
    // (24 + 10) / (30 + 20) = 0.68 → (0.68 − 0.5) / 0.25 × 15; 3 members → 10 + 5/3
    expect(insiderScore(facts).points).toMatchObject({
      cluster_reputation: 10.8,
      funding_cluster: 11.67,
    });
    expect(
      insiderScore({ ...facts, clusterResolvedBets: 9, clusterWins: 9 }).points.cluster_reputation,
    ).toBe(0);
    expect(explainInsiderSignal(facts, insiderScore(facts))).toBe(
      "Insider score 22: bought $10 of YES at 0.45; its funder also funded 2 other wallets " +
        "and its funding cluster has won 80% of 30 resolved bets.",
    );
  });

  it("fires at exactly 65 and caps the sum at 100", () => {
    const at65: InsiderFacts = {
      ...quiet,
      price: 0.05,
      usd: 10_000,
      marketVolumeUsd: 100_000,
      firstFundedAt: T0 - HOUR_MS,
      priorTrades: 0,
      walletVolumeUsd: 10_000,
      walletMarketVolumeUsd: 10_000,
    };
    expect(insiderScore(at65)).toMatchObject({ score: 65, fires: true });
    expect(
      insiderScore({ ...at65, usd: 9_900, walletVolumeUsd: 9_900, walletMarketVolumeUsd: 9_900 })
        .fires,
    ).toBe(false);
    const everything = {
      ...at65,
      marketVolumeUsd: 10_000,
      clusterSize: 9,
      freshSameSideWallets: 6,
      clusterUnderInvestigation: true,
    };
    expect(Object.values(insiderScore(everything).points).reduce((a, b) => a + b)).toBe(120);
    expect(insiderScore(everything).score).toBe(100);
  });

  it("gives no odds points for selling and none for an unknown funding date", () => {
    expect(insiderScore({ ...quiet, side: "SELL", price: 0.05 }).points.odds).toBe(0);
    expect(insiderScore({ ...quiet, firstFundedAt: null, priorTrades: 0 }).points.freshness).toBe(
      0,
    );
  });

  it("says so when nothing stands out", () => {
    const result = insiderScore(quiet);
    expect(result.score).toBe(0);
    expect(explainInsiderSignal(quiet, result)).toBe(
      "Insider score 0: bought $10 of YES at 0.45; nothing else about the trade stands out.",
    );
  });
});
