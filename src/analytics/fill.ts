/**
 * The vocabulary every analytics function shares: a fill (one side of one trade) and the
 * thresholds docs/methodology.md fixes. Callers map database rows into these shapes; nothing here
 * reads a database or a clock.
 */

import type { Outcome, TradeSide } from "../domain";

export { WHALE_VOLUME_USD } from "../domain";
export type { Outcome, TradeSide };

/** One trade fill as the analytics see it. `usd` is price × size unless the source said otherwise. */
export interface Fill {
  wallet: string;
  marketId: number;
  outcome: Outcome;
  side: TradeSide;
  /** 0..1, the price of `outcome`. */
  price: number;
  /** Shares. */
  size: number;
  usd: number;
  /** Epoch milliseconds. */
  ts: number;
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

export function otherOutcome(outcome: Outcome): Outcome {
  return outcome === "YES" ? "NO" : "YES";
}

/**
 * The outcome a fill bets on: buying YES and selling NO both gain when YES wins (a NO share sold
 * is a YES share held, since one YES plus one NO always pays 1).
 */
export function directionOf(fill: Pick<Fill, "outcome" | "side">): Outcome {
  return fill.side === "BUY" ? fill.outcome : otherOutcome(fill.outcome);
}

export function clamp01(x: number): number {
  if (Number.isNaN(x)) return 0;
  return Math.min(1, Math.max(0, x));
}

/** Rounds to `digits` decimals; keeps served figures free of binary noise such as 0.30000000000000004. */
export function roundTo(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
