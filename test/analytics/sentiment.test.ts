import { describe, expect, it } from "vitest";
import {
  divergence,
  impliedProbability,
  marketPositions,
  marketSentiment,
  sentimentLabel,
  smartMoneyProbability,
  walletFlows,
} from "../../src/analytics/sentiment";
import { fill, HOUR, T0 } from "./fills";

// One market, three whales. Prices are 0.5 so USD = half the shares.
const fills = [
  fill("a", 1, "BUY", "YES", 2000, 0.5, T0), // YES flow 1,000
  fill("a", 1, "SELL", "NO", 400, 0.5, T0 + HOUR), // YES flow 200
  fill("b", 1, "BUY", "NO", 1200, 0.5, T0), // NO flow 600
  fill("b", 1, "SELL", "YES", 200, 0.5, T0 + HOUR), // NO flow 100
  fill("c", 1, "BUY", "YES", 600, 0.5, T0), // YES flow 300
  fill("c", 1, "BUY", "NO", 600, 0.5, T0 + HOUR), // NO flow 300
];
const bayes = new Map([
  ["a", 0.6],
  ["b", 0.4],
]);
const flows = () => walletFlows(fills).values();

describe("market sentiment", () => {
  it("weights YES and NO flow by each wallet's Bayesian win rate", () => {
    // weighted YES = 0.6 × 1200 + 0.5 × 300 = 870; weighted NO = 0.4 × 700 + 0.5 × 300 = 430
    const s = marketSentiment(flows(), (w) => bayes.get(w) ?? null);
    expect(s.yesRatio).toBeCloseTo(870 / 1300, 12);
    expect(s).toMatchObject({
      sentiment: "bullish",
      yesVolume: 1500,
      noVolume: 1000,
      totalWhaleVolume: 2500,
      uniqueWhales: 3,
    });
  });

  it("labels bullish at 0.6 or more, bearish at 0.4 or less, mixed between", () => {
    expect(sentimentLabel(0.6)).toBe("bullish");
    expect(sentimentLabel(0.59)).toBe("mixed");
    expect(sentimentLabel(0.41)).toBe("mixed");
    expect(sentimentLabel(0.4)).toBe("bearish");
    expect(sentimentLabel(null)).toBeNull();
  });

  it("has no label without whale volume", () => {
    expect(marketSentiment([], () => 0.5)).toEqual({
      sentiment: null,
      yesRatio: null,
      yesVolume: 0,
      noVolume: 0,
      totalWhaleVolume: 0,
      uniqueWhales: 0,
    });
  });
});

describe("whale-implied probability", () => {
  it("is the weighted YES share of net positions, with its edge over the price", () => {
    // held: a YES 1000 (× 0.6), b NO 600 (× 0.4), c YES 300 and NO 300 (× 0.5)
    // YES = 600 + 150 = 750; all = 600 + 240 + 300 = 1140
    const implied = impliedProbability(flows(), (w) => bayes.get(w) ?? null, 0.55);
    expect(implied.yesImpliedProb).toBeCloseTo(750 / 1140, 12); // 0.6579
    expect(implied.noImpliedProb).toBeCloseTo(390 / 1140, 12);
    expect(implied.edge).toBeCloseTo(750 / 1140 - 0.55, 12); // +0.1079
    expect(implied).toMatchObject({ currentPrice: 0.55, samples: 6, uniqueWallets: 3 });
  });

  it("is null when nobody holds anything, and the edge needs a price", () => {
    const flat = walletFlows([
      fill("a", 1, "BUY", "YES", 10, 0.5, T0),
      fill("a", 1, "SELL", "YES", 10, 0.5, T0),
    ]);
    expect(impliedProbability(flat.values(), () => 0.5, 0.5)).toMatchObject({
      yesImpliedProb: null,
      edge: null,
      uniqueWallets: 0,
    });
    expect(impliedProbability(flows(), () => 0.5, null).edge).toBeNull();
  });
});

describe("MarketAnalysis positions", () => {
  it("lists positions by volume with their side", () => {
    const positions = marketPositions(flows());
    expect(positions.map((p) => [p.wallet, p.side, p.volume, p.trades])).toEqual([
      ["a", "YES", 1200, 2],
      ["b", "NO", 700, 2],
      ["c", "YES", 600, 2],
    ]);
  });

  it("weights positions by smart_money_score × confidence", () => {
    const scores = new Map([
      ["a", { score: 80, confidence: 0.5 }], // 0.4
      ["b", { score: 50, confidence: 0.8 }], // 0.4
    ]);
    // YES = 0.4 × 1000; all = 0.4 × 1000 + 0.4 × 600; c is unscored and left out
    const result = smartMoneyProbability(marketPositions(flows()), (w) => scores.get(w) ?? null);
    expect(result.probability).toBeCloseTo(0.625, 12);
    expect(result.sampleWallets).toBe(2);
    expect(divergence(result.probability, 0.55)).toBeCloseTo(0.075, 12);
    expect(divergence(null, 0.55)).toBeNull();
  });
});
