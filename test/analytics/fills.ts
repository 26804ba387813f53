import type { Fill, Outcome, TradeSide } from "../../src/analytics/fill";

export const T0 = Date.UTC(2026, 0, 1);
export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** A fill with usd = price × size, as the importer defaults it. */
export function fill(
  wallet: string,
  marketId: number,
  side: TradeSide,
  outcome: Outcome,
  size: number,
  price: number,
  ts: number,
): Fill {
  return { wallet, marketId, side, outcome, size, price, usd: price * size, ts };
}

/** Cents, the precision the hand-computed figures are written in. */
export const cents = (x: number): number => Math.round(x * 100) / 100;

/** Park–Miller: deterministic pseudo-random numbers for the reference comparisons. */
export function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 48_271) % 2_147_483_647;
    return s / 2_147_483_647;
  };
}
