import { HOUR_MS } from "../analytics/fill";
import type { Connection } from "../db/open";
import type { MarketHourRow } from "./market-model";

/**
 * The price_history of GET /v1/markets/{slug}, kept serialized per market in
 * market_price_history (sql/0017): the refresh renders it whenever the market's hours change,
 * so an answer reads one short row instead of 720 hourly rows and their dates.
 */

/** Hourly points of MarketDetail.price_history: the market's last 30 days of trading hours. */
export const PRICE_HISTORY_POINTS = 720;

export type PriceHour = Pick<MarketHourRow, "hour" | "close_yes" | "volume" | "trade_count">;

/**
 * The served JSON array of the last PRICE_HISTORY_POINTS of `hours` (in hour order), each hour
 * dated by `dateOf`.
 */
function priceHistoryJson(hours: readonly PriceHour[], dateOf: (hour: number) => string): string {
  return JSON.stringify(
    hours.slice(-PRICE_HISTORY_POINTS).map((h) => ({
      hour: dateOf(h.hour),
      price: h.close_yes,
      volume: h.volume,
      trade_count: h.trade_count,
    })),
  );
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
    else put.run(marketId, priceHistoryJson(hours, dateOf));
  };
  /** From the market's stored hours, read back (after an incremental write changed some). */
  const fromStored = (marketId: number): void =>
    fromHours(marketId, latestHours.all(marketId, PRICE_HISTORY_POINTS).reverse());
  return { fromHours, fromStored };
}
