import { describe, expect, it } from "vitest";
import { ranksOnPnlLeaderboard, routePnl } from "../../src/analytics/pnl-source";
import {
  classifyWallet,
  isMarketMaker,
  isWhale,
  type WalletTypeFacts,
} from "../../src/analytics/wallet-type";
import { T0 } from "./fills";

describe("PnL routing", () => {
  const base = {
    platformPnl: null,
    platformPnlAsOf: null,
    isMarketMaker: false,
    isWhale: false,
    ledgerPnl: 123.45,
    refreshedAt: T0,
  };

  it("serves an imported platform figure with its own as-of, whoever the wallet is", () => {
    const asOf = T0 - 86_400_000;
    for (const who of [{}, { isMarketMaker: true }, { isWhale: true }]) {
      expect(routePnl({ ...base, ...who, platformPnl: -5000, platformPnlAsOf: asOf })).toEqual({
        totalPnl: -5000,
        pnlSource: "platform_api",
        pnlAsOf: asOf,
      });
    }
  });

  it("serves nothing for market makers and whales without one", () => {
    const none = { totalPnl: null, pnlSource: "none", pnlAsOf: null };
    expect(routePnl({ ...base, isMarketMaker: true })).toEqual(none);
    expect(routePnl({ ...base, isWhale: true })).toEqual(none);
    expect(ranksOnPnlLeaderboard(routePnl({ ...base, isWhale: true }))).toBe(false);
  });

  it("serves the ledger, as of the refresh, for everyone else", () => {
    const routed = routePnl(base);
    expect(routed).toEqual({ totalPnl: 123.45, pnlSource: "ledger", pnlAsOf: T0 });
    expect(ranksOnPnlLeaderboard(routed)).toBe(true);
  });
});

describe("wallet types", () => {
  const retail: WalletTypeFacts = {
    tradeCount: 40,
    marketsTraded: 10,
    twoSidedMarkets: 1,
    inOpenInvestigation: false,
    maxInsiderScore: null,
    totalVolume: 5000,
    smartMoneyScore: 55,
    confidence: 0.6,
  };

  it("market maker: at least 200 trades, two-sided in at least 60% of markets", () => {
    expect(isMarketMaker({ tradeCount: 200, marketsTraded: 10, twoSidedMarkets: 6 })).toBe(true);
    expect(isMarketMaker({ tradeCount: 199, marketsTraded: 10, twoSidedMarkets: 10 })).toBe(false);
    expect(isMarketMaker({ tradeCount: 500, marketsTraded: 10, twoSidedMarkets: 5 })).toBe(false);
    expect(isMarketMaker({ tradeCount: 500, marketsTraded: 0, twoSidedMarkets: 0 })).toBe(false);
  });

  it("whale: more than 50,000 USD", () => {
    expect(isWhale(50_000)).toBe(false);
    expect(isWhale(50_000.01)).toBe(true);
  });

  it("takes the first match in the order market maker, insider, whale, smart money, retail", () => {
    const everything = {
      ...retail,
      tradeCount: 900,
      twoSidedMarkets: 8,
      inOpenInvestigation: true,
      totalVolume: 1e6,
      smartMoneyScore: 90,
      confidence: 0.9,
    };
    expect(classifyWallet(everything)).toBe("market_maker");
    expect(classifyWallet({ ...everything, twoSidedMarkets: 1 })).toBe("insider");
    expect(classifyWallet({ ...everything, twoSidedMarkets: 1, inOpenInvestigation: false })).toBe(
      "whale",
    );
    expect(classifyWallet({ ...retail, smartMoneyScore: 70, confidence: 0.5 })).toBe("smart_money");
    expect(classifyWallet(retail)).toBe("retail");
  });

  it("insider: an open investigation or an insider signal of 80 or more", () => {
    expect(classifyWallet({ ...retail, maxInsiderScore: 80 })).toBe("insider");
    expect(classifyWallet({ ...retail, maxInsiderScore: 79.99 })).toBe("retail");
    expect(classifyWallet({ ...retail, inOpenInvestigation: true })).toBe("insider");
  });

  it("smart money needs both the score and the confidence", () => {
    expect(classifyWallet({ ...retail, smartMoneyScore: 95, confidence: 0.49 })).toBe("retail");
    expect(classifyWallet({ ...retail, smartMoneyScore: 69.99, confidence: 0.99 })).toBe("retail");
  });
});
