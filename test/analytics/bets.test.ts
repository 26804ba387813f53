import { describe, expect, it } from "vitest";
import { betsFromFills, type MarketFacts, walletBetStats } from "../../src/analytics/bets";
import { bayesianWinRate, scoreConfidence, winRate } from "../../src/analytics/rates";
import { fill, HOUR, T0 } from "./fills";

const markets = new Map<number, MarketFacts>([
  [1, { category: "politics", resolvedOutcome: "YES", resolvedAt: T0 + 100 * HOUR }],
  [2, { category: "crypto", resolvedOutcome: "NO", resolvedAt: T0 + 50 * HOUR }],
  [3, { category: "sports", resolvedOutcome: null, resolvedAt: null }],
  [4, { category: "politics", resolvedOutcome: "YES", resolvedAt: T0 + 10 * HOUR }],
]);

const fills = [
  // Market 1: net YES 80 − 30 = 50 beats net NO 40; entry VWAP (30 + 50) / 200 = 0.40.
  fill("w", 1, "BUY", "YES", 100, 0.3, T0),
  fill("w", 1, "BUY", "YES", 100, 0.5, T0 + HOUR),
  fill("w", 1, "SELL", "YES", 50, 0.6, T0 + 2 * HOUR),
  fill("w", 1, "BUY", "NO", 100, 0.4, T0 + 3 * HOUR),
  // Market 2: YES at 0.25 (50 USD) beats NO (7 USD); resolves NO: a loss.
  fill("w", 2, "BUY", "YES", 200, 0.25, T0),
  fill("w", 2, "BUY", "NO", 10, 0.7, T0 + HOUR),
  // Market 3: only sold YES at 0.80 (a split's leg): side NO at 1 − 0.80.
  fill("w", 3, "SELL", "YES", 100, 0.8, T0 + 5 * HOUR),
  // Market 4: 25 USD each way; the earlier fill (YES) breaks the tie, whatever the input order.
  fill("w", 4, "BUY", "NO", 50, 0.5, T0 + 5 * HOUR),
  fill("w", 4, "BUY", "YES", 50, 0.5, T0 + 4 * HOUR),
];

describe("bets from fills", () => {
  const bets = betsFromFills(fills, (id) => markets.get(id));
  const bet = (id: number) => bets.find((b) => b.marketId === id)!;

  it("picks the side with the larger net BUY USD and its VWAP entry price", () => {
    expect(bet(1)).toMatchObject({
      side: "YES",
      buyUsd: 80,
      netBuyUsd: 50,
      yesFlowUsd: 80,
      noFlowUsd: 70,
      firstTs: T0,
      lastTs: T0 + 3 * HOUR,
      fills: 4,
      volume: 150,
      twoSided: true,
      won: true,
      category: "politics",
      entryTs: T0,
      hoursBeforeResolution: 100,
    });
    expect(bet(1).entryPrice).toBeCloseTo(0.4, 12);
    expect(bet(2)).toMatchObject({ side: "YES", entryPrice: 0.25, won: false, volume: 57 });
  });

  it("prices a bet taken only by selling the other outcome at 1 − that price", () => {
    expect(bet(3).side).toBe("NO");
    expect(bet(3).entryPrice).toBeCloseTo(0.2, 12);
    expect(bet(3).won).toBeNull();
    expect(bet(3).twoSided).toBe(false);
  });

  it("breaks a tie with the earliest fill's direction", () => {
    expect(bet(4)).toMatchObject({ side: "YES", entryPrice: 0.5, won: true });
    const reversed = betsFromFills([...fills].reverse(), (id) => markets.get(id));
    expect(reversed.find((b) => b.marketId === 4)!.side).toBe("YES");
  });

  it("counts bets, resolutions, wins and volume", () => {
    const stats = walletBetStats(bets);
    expect(stats).toEqual({
      totalBets: 4,
      resolvedBets: 3,
      wins: 2,
      winRate: 2 / 3,
      bayesianWinRate: 12 / 23,
      marketsTraded: 4,
      totalVolume: 337,
      tradeCount: 9,
      twoSidedMarkets: 3,
    });
  });

  it("keeps wallets apart", () => {
    const two = betsFromFills(
      [fill("a", 1, "BUY", "YES", 10, 0.5, T0), fill("b", 1, "BUY", "NO", 10, 0.5, T0)],
      (id) => markets.get(id),
    );
    expect(two.map((b) => [b.wallet, b.side, b.won])).toEqual([
      ["a", "YES", true],
      ["b", "NO", false],
    ]);
  });
});

describe("win rates", () => {
  it("are null before anything resolves", () => {
    expect(winRate(0, 0)).toBeNull();
    expect(bayesianWinRate(0, 0)).toBeNull();
  });

  it("shrink toward one half with a Beta(10, 10) prior", () => {
    expect(bayesianWinRate(3, 3)).toBeCloseTo(13 / 23, 15); // 0.5652
    expect(bayesianWinRate(70, 100)).toBeCloseTo(80 / 120, 15); // 0.6667
    expect(bayesianWinRate(0, 5)).toBeCloseTo(10 / 25, 15);
    expect(winRate(70, 100)).toBe(0.7);
  });

  it("carry a confidence of resolved / (resolved + 20)", () => {
    expect(scoreConfidence(0)).toBe(0);
    expect(scoreConfidence(20)).toBe(0.5);
    expect(scoreConfidence(180)).toBe(0.9);
  });
});
