import { HOUR_MS } from "../analytics/fill";
import type { Connection } from "../db/open";
import type { MarketHourRow } from "./market-model";

/**
 * The price_history of GET /v1/markets/{slug}, kept serialized per market in
 * market_price_history (sql/0017), all but its newest point: an answer reads that row and the
 * market's newest hour (createPriceHistoryReader), instead of 720 hourly rows and their dates.
 *
 * The newest point is left out because it is the one that moves: every refresh after a market's
 * trades changes its newest hour, and the whole history (up to 65 KB a market) would be rendered
 * and rewritten each time. Rendering every traded market's history took a large world's
 * incremental refresh after 10,000 trades in a new hour from 2.0–2.6 s to 4.7–5.1 s in its
 * markets phase; stored without the newest point, that happens once per market and hour, when a
 * new hour begins (the newest point joins the stored part and the oldest may fall off), or when
 * an older hour changes (a late fill).
 */

/** Hourly points of MarketDetail.price_history: the market's last 30 days of trading hours. */
export const PRICE_HISTORY_POINTS = 720;

export type PriceHour = Pick<MarketHourRow, "hour" | "close_yes" | "volume" | "trade_count">;

/** A market's hours as the history shows them, newest first. */
const LATEST_HOURS = `SELECT hour, close_yes, volume, trade_count FROM market_hours
  WHERE market_id = ? ORDER BY hour DESC`;

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
function historyWithNewest(stored: string | null, newest: PriceHour | undefined): string {
  if (newest === undefined) return "[]";
  const point = JSON.stringify(pointOf(newest, isoHour));
  return stored === null || stored === "[]" ? `[${point}]` : `${stored.slice(0, -1)},${point}]`;
}

/**
 * Whether a market's stored history changes when its hours from some hour on go from `before`
 * to `after` (in hour order): when the newest hour is another one, or an hour before it was
 * added, dropped or changed. A change to the newest hour alone leaves the stored part as it is.
 */
export function storedHistoryMoved(
  before: ReadonlyMap<number, PriceHour>,
  after: readonly PriceHour[],
): boolean {
  const newest = after.at(-1)?.hour;
  let beforeNewest: number | undefined;
  for (const hour of before.keys()) {
    if (beforeNewest === undefined || hour > beforeNewest) beforeNewest = hour;
  }
  if (newest !== beforeNewest || before.size !== after.length) return true;
  for (const h of after) {
    if (h.hour === newest) continue;
    const old = before.get(h.hour);
    if (
      old === undefined ||
      old.close_yes !== h.close_yes ||
      old.volume !== h.volume ||
      old.trade_count !== h.trade_count
    ) {
      return true;
    }
  }
  return false;
}

/** Reads the served price_history of a market (GET /v1/markets/{slug}) on `connection`. */
export function createPriceHistoryReader(connection: Connection) {
  const stored = connection
    .prepare<[number], string>("SELECT points FROM market_price_history WHERE market_id = ?")
    .pluck();
  const newest = connection.prepare<[number], PriceHour>(`${LATEST_HOURS} LIMIT 1`);
  return (marketId: number): string =>
    historyWithNewest(stored.get(marketId) ?? null, newest.get(marketId));
}

/** Renders markets' histories from their stored hours, on `connection` (the writer). */
export function createPriceHistoryWriter(connection: Connection) {
  const latestHours = connection.prepare<[number, number], PriceHour>(`${LATEST_HOURS} LIMIT +?`);
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
      date = isoHour(hour);
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
