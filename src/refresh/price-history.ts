import { HOUR_MS } from "../analytics/fill";
import type { Connection } from "../db/open";
import type { MarketHourRow } from "./market-model";

/**
 * The price_history of GET /v1/markets/{slug}, kept serialized per market in
 * market_price_history (sql/0017), all but its newest point: an answer reads that row and the
 * market's newest hour (historyWithNewest), instead of 720 hourly rows and their dates.
 *
 * The newest point is left out because it is the one that moves: every refresh after a market's
 * trades changes its newest hour, and rendering and rewriting the whole history then (up to
 * 65 KB a market) cost a large world's incremental refresh after 10,000 trades about 3 s and as
 * many megabytes of WAL. The stored part changes only when a new hour begins (the newest point
 * joins it and the oldest may fall off), or when an older hour changes (a late fill).
 */

/** Hourly points of MarketDetail.price_history: the market's last 30 days of trading hours. */
export const PRICE_HISTORY_POINTS = 720;

export type PriceHour = Pick<MarketHourRow, "hour" | "close_yes" | "volume" | "trade_count">;

/** One served point. */
function pointOf(h: PriceHour, dateOf: (hour: number) => string) {
  return { hour: dateOf(h.hour), price: h.close_yes, volume: h.volume, trade_count: h.trade_count };
}

/**
 * The stored JSON array: the served history (the last PRICE_HISTORY_POINTS of `hours`, in hour
 * order) without its newest point.
 */
function storedHistoryJson(hours: readonly PriceHour[], dateOf: (hour: number) => string): string {
  return JSON.stringify(hours.slice(-PRICE_HISTORY_POINTS, -1).map((h) => pointOf(h, dateOf)));
}

const isoHour = (hour: number) => new Date(hour * HOUR_MS).toISOString();

/**
 * The served price_history: the stored array (null for a market without one) and the market's
 * newest hour (undefined for a market that never traded).
 */
export function historyWithNewest(stored: string | null, newest: PriceHour | undefined): string {
  if (newest === undefined) return "[]";
  const point = JSON.stringify(pointOf(newest, isoHour));
  return stored === null || stored === "[]" ? `[${point}]` : `${stored.slice(0, -1)},${point}]`;
}

/** Renders markets' histories from their stored hours, on `connection` (the writer). */
export function createPriceHistoryWriter(connection: Connection) {
  const latestHours = connection.prepare<[number, number], PriceHour>(
    `SELECT hour, close_yes, volume, trade_count FROM market_hours
      WHERE market_id = ? ORDER BY hour DESC LIMIT +?`,
  );
  const put = connection.prepare<[number, string]>(
    "INSERT OR REPLACE INTO market_price_history (market_id, points) VALUES (?, ?)",
  );
  const drop = connection.prepare<[number]>("DELETE FROM market_price_history WHERE market_id = ?");
  // Markets share their hours: formatting each hour once made a full rebuild's rendering five
  // times faster. One string per distinct hour of the data: a year of hours is 8,760.
  const dates = new Map<number, string>();
  const dateOf = (hour: number) => {
    let date = dates.get(hour);
    if (date === undefined) {
      date = new Date(hour * HOUR_MS).toISOString();
      dates.set(hour, date);
    }
    return date;
  };
  /** From the hours given: all of the market's, in hour order (a full rebuild has them). */
  const fromHours = (marketId: number, hours: readonly PriceHour[]): void => {
    if (hours.length === 0) drop.run(marketId);
    else put.run(marketId, storedHistoryJson(hours, dateOf));
  };
  /** From the market's stored hours, read back (after an incremental write changed some). */
  const fromStored = (marketId: number): void =>
    fromHours(marketId, latestHours.all(marketId, PRICE_HISTORY_POINTS).reverse());
  return { fromHours, fromStored };
}
