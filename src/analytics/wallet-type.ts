/** Wallet types, first match wins (docs/methodology.md, "Wallet types"). */

import { WHALE_VOLUME_USD } from "./fill";

export type WalletType = "market_maker" | "insider" | "whale" | "smart_money" | "retail";

export const MARKET_MAKER_MIN_TRADES = 200;
export const MARKET_MAKER_TWO_SIDED_SHARE = 0.6;
export const INSIDER_TYPE_MIN_SIGNAL_SCORE = 80;
export const SMART_MONEY_MIN_SCORE = 70;
export const SMART_MONEY_MIN_CONFIDENCE = 0.5;

/**
 * At least 200 trades and two-sided (money on both the YES and the NO direction, see
 * Bet.twoSided) in at least 60% of the markets it traded.
 */
export function isMarketMaker(facts: {
  tradeCount: number;
  marketsTraded: number;
  twoSidedMarkets: number;
}): boolean {
  return (
    facts.tradeCount >= MARKET_MAKER_MIN_TRADES &&
    facts.marketsTraded > 0 &&
    facts.twoSidedMarkets / facts.marketsTraded >= MARKET_MAKER_TWO_SIDED_SHARE
  );
}

export function isWhale(totalVolume: number): boolean {
  return totalVolume > WHALE_VOLUME_USD;
}

export interface WalletTypeFacts {
  tradeCount: number;
  marketsTraded: number;
  twoSidedMarkets: number;
  inOpenInvestigation: boolean;
  /** Highest insider signal score the wallet ever drew; null when none fired or was scored. */
  maxInsiderScore: number | null;
  totalVolume: number;
  /** The persisted score (or its fallback) with its confidence. */
  smartMoneyScore: number;
  confidence: number;
}

export function classifyWallet(facts: WalletTypeFacts): WalletType {
  if (isMarketMaker(facts)) return "market_maker";
  if (
    facts.inOpenInvestigation ||
    (facts.maxInsiderScore !== null && facts.maxInsiderScore >= INSIDER_TYPE_MIN_SIGNAL_SCORE)
  ) {
    return "insider";
  }
  if (isWhale(facts.totalVolume)) return "whale";
  if (
    facts.smartMoneyScore >= SMART_MONEY_MIN_SCORE &&
    facts.confidence >= SMART_MONEY_MIN_CONFIDENCE
  ) {
    return "smart_money";
  }
  return "retail";
}
