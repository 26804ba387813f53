/** The whale signal: a large trade scored by who made it and how large it is for its market. */

import { clamp01, type Outcome, roundTo, type TradeSide } from "./fill";
import { formatPercent, formatPrice, formatUsd } from "./format";

/**
 * Share of the market's trades, this one included, whose USD size is at or below this trade's.
 * `othersAscending`: the USD sizes of the market's other trades, sorted ascending.
 */
export function sizePercentile(usd: number, othersAscending: readonly number[]): number {
  let lo = 0;
  let hi = othersAscending.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (othersAscending[mid]! <= usd) lo = mid + 1;
    else hi = mid;
  }
  return (lo + 1) / (othersAscending.length + 1);
}

/** 0.7 × smart_money_score + 0.3 × size percentile × 100, on 0..100. */
export function whaleSignalScore(smartMoneyScore: number, percentile: number): number {
  return roundTo(0.7 * smartMoneyScore + 0.3 * clamp01(percentile) * 100, 2);
}

export interface WhaleTradeFacts {
  side: TradeSide;
  outcome: Outcome;
  price: number;
  usd: number;
  smartMoneyScore: number;
  sizePercentile: number;
}

/**
 * One sentence from the numbers behind the score, e.g. "Whale score 83: bought $25,000 of YES at
 * 0.42 from a wallet with smart-money score 81; the trade is at least as large as 97% of this
 * market's trades."
 */
export function explainWhaleSignal(facts: WhaleTradeFacts, score: number): string {
  const verb = facts.side === "BUY" ? "bought" : "sold";
  return (
    `Whale score ${Math.round(score)}: ${verb} ${formatUsd(facts.usd)} of ${facts.outcome} ` +
    `at ${formatPrice(facts.price)} from a wallet with smart-money score ` +
    `${Math.round(facts.smartMoneyScore)}; the trade is at least as large as ` +
    `${formatPercent(facts.sizePercentile)} of this market's trades.`
  );
}
