import type { Outcome } from "../analytics/fill";
import type { Db } from "../db/open";

/**
 * Point-in-time prices from the trades index (market_id, ts, id): the last trade of an outcome
 * (for marking open positions) and the YES-equivalent price at a moment (for the timing signal).
 * Each answer is one index seek; the last prices are memoised for the length of one refresh.
 */
export function createPriceLookup(db: Db) {
  const w = db.writer;
  const lastOfOutcome = w.prepare<[number, string], { price: number }>(
    "SELECT price FROM trades WHERE market_id = ? AND outcome = ? ORDER BY ts DESC, id DESC LIMIT 1",
  );
  const lastAtOrBefore = w.prepare<[number, number], { outcome: Outcome; price: number }>(
    "SELECT outcome, price FROM trades WHERE market_id = ? AND ts <= ? ORDER BY ts DESC, id DESC LIMIT 1",
  );
  const last = new Map<number, number | null>();
  return {
    /** The outcome's last trade price, or null when that outcome never traded. */
    lastPrice(marketId: number, outcome: Outcome): number | null {
      const key = marketId * 2 + (outcome === "YES" ? 0 : 1);
      let price = last.get(key);
      if (price === undefined) {
        price = lastOfOutcome.get(marketId, outcome)?.price ?? null;
        last.set(key, price);
      }
      return price;
    },
    /** The YES price implied by the last trade at or before `ts` (a NO trade at p means 1 − p). */
    yesPriceAt(marketId: number, ts: number): number | null {
      const row = lastAtOrBefore.get(marketId, ts);
      if (!row) return null;
      return row.outcome === "YES" ? row.price : 1 - row.price;
    },
  };
}

export type PriceLookup = ReturnType<typeof createPriceLookup>;
