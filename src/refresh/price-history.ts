import { deflateRawSync, inflateRawSync } from "node:zlib";
import { HOUR_MS } from "../analytics/fill";
import type { Connection } from "../db/open";
import type { MarketHourRow } from "./market-model";

/**
 * The price_history of GET /v1/markets/{slug}, kept serialized per market in
 * market_price_history (sql/0019) up to a cut hour: an answer reads that row and the market's
 * hours after the cut (at most TAIL_HOURS of them) instead of 720 hourly rows and their dates.
 *
 * The cut is where the newest hours start to move: every refresh after a market's trades changes
 * its newest hour, and a new hour moves the 720-point window on by one, so a history stored whole
 * (up to 65 KB a market) would be rendered and rewritten at each new hour of each traded market.
 * Storing all but the newest point still did that once per market and hour: a large world's
 * incremental refresh after 10,000 trades in a new hour rendered 4,461 histories, 4–6 s of it.
 * With the cut on every TAIL_HOURS-th trading hour of the market, a market's stored part is
 * rendered once per TAIL_HOURS of its trading hours, or when a stored hour changes (a late fill).
 *
 * The cut depends on the market's hours alone (their count), so a full rebuild and any sequence
 * of incremental refreshes store the same row: for a market with N trading hours, the cut C is the
 * largest multiple of TAIL_HOURS below N; the row holds the points of hours C − 719 to C − 1 (by
 * position, from 0) and the hour of the last of them, and answers read hours C to N − 1 after it.
 *
 * The points are stored deflated (sql/0020): the JSON of a market's hours repeats its keys and
 * the dates' common parts, and came to 44 bytes per fill on the fixture worlds, 7.5 times what it
 * takes deflated. An answer inflates one row (about 0.1 ms for 20 KB of JSON) and keeps the text
 * with the rest of the market's detail.
 */

/** Hourly points of MarketDetail.price_history: the market's last 720 trading hours. */
export const PRICE_HISTORY_POINTS = 720;
/** At most this many of a market's newest trading hours are read per answer, not stored. */
export const TAIL_HOURS = 24;

export type PriceHour = Pick<MarketHourRow, "hour" | "close_yes" | "volume" | "trade_count">;

/** What market_price_history holds for a market. */
export interface StoredHistory {
  /** The newest hour of the stored points; null when none are stored. */
  through_hour: number | null;
  point_count: number;
  /** JSON array of the points, oldest first. */
  points: string;
}

/**
 * The stored form of the points' JSON: raw DEFLATE (RFC 1951) at level 1. Level 6 made rows 13%
 * smaller and took 2.8 times as long (0.41 ms against 0.15 ms for a row of 20 KB), and a full
 * rebuild deflates every traded market's row.
 */
export const packPoints = (json: string): Buffer => deflateRawSync(json, { level: 1 });
/** The points' JSON from their stored form. */
export const unpackPoints = (stored: Uint8Array): string => inflateRawSync(stored).toString();

/** How many of a market's N hours (in hour order) are stored: all before the cut. */
export const cutOf = (hourCount: number) =>
  hourCount === 0 ? 0 : TAIL_HOURS * Math.floor((hourCount - 1) / TAIL_HOURS);

/** A market_price_history row as stored: the points packed (packPoints). */
export type PackedHistory = Omit<StoredHistory, "points"> & { points: Uint8Array };

/** One served point. */
function pointOf(h: PriceHour, dateOf: (hour: number) => string) {
  return { hour: dateOf(h.hour), price: h.close_yes, volume: h.volume, trade_count: h.trade_count };
}

export const isoHour = (hour: number) => new Date(hour * HOUR_MS).toISOString();

/**
 * isoHour, each hour formatted once: markets share their hours. One string per distinct hour
 * asked about: a year of hours is 8,760.
 */
export function hourDates(): (hour: number) => string {
  const dates = new Map<number, string>();
  return (hour) => {
    let date = dates.get(hour);
    if (date === undefined) {
      date = isoHour(hour);
      dates.set(hour, date);
    }
    return date;
  };
}

/**
 * The stored row of a market from its hours, in hour order: `hours` are its newest ones and
 * `hourCount` how many it has in all (the cut counts them all).
 */
export function storedHistory(
  hours: readonly PriceHour[],
  hourCount: number,
  dateOf: (hour: number) => string,
): StoredHistory {
  const cut = cutOf(hourCount);
  // Position in `hours` of the market's hour number `cut`.
  const end = hours.length - (hourCount - cut);
  const start = Math.max(0, end - (PRICE_HISTORY_POINTS - 1));
  const stored = hours.slice(start, end);
  return {
    through_hour: stored.at(-1)?.hour ?? null,
    point_count: stored.length,
    points: JSON.stringify(stored.map((h) => pointOf(h, dateOf))),
  };
}

/**
 * The served price_history: the last PRICE_HISTORY_POINTS of the stored points (none for a
 * market without a row) followed by the hours after them, in hour order.
 */
export function servedHistory(
  stored: StoredHistory | undefined,
  tail: readonly PriceHour[],
  dateOf: (hour: number) => string = isoHour,
): string {
  const tailJson = tail.map((h) => JSON.stringify(pointOf(h, dateOf))).join(",");
  if (stored === undefined || stored.point_count === 0) return `[${tailJson}]`;
  let points = stored.points;
  // Points are flat objects, so "},{" is found only between two of them.
  let drop = stored.point_count + tail.length - PRICE_HISTORY_POINTS;
  if (drop >= stored.point_count) return `[${tailJson}]`;
  let at = 0;
  while (drop > 0) {
    at = points.indexOf("},{", at) + 2;
    drop -= 1;
  }
  if (at > 0) points = `[${points.slice(at)}`;
  return tail.length === 0 ? points : `${points.slice(0, -1)},${tailJson}]`;
}

/** A market's hours after the stored ones, newest first (for a market without a row, its newest). */
const HOURS_AFTER = `SELECT hour, close_yes, volume, trade_count FROM market_hours
  WHERE market_id = +? AND hour > +? ORDER BY hour DESC LIMIT ${PRICE_HISTORY_POINTS}`;
/** Below every hour: the stored hours of a market that has none stored end here. */
const NO_HOUR = Number.MIN_SAFE_INTEGER;

/** Reads the served price_history of a market (GET /v1/markets/{slug}) on `connection`. */
export function createPriceHistoryReader(connection: Connection) {
  const stored = connection.prepare<[number], PackedHistory>(
    "SELECT through_hour, point_count, points FROM market_price_history WHERE market_id = ?",
  );
  // Arrays: better-sqlite3 builds row objects several times slower, and these rows (a dozen
  // on average) were most of an answer's reading.
  const after = connection
    .prepare<[number, number], [number, number, number, number]>(HOURS_AFTER)
    .raw();
  // The newest hours of every market are the same few: formatted once, not once an answer.
  const dateOf = hourDates();
  return (marketId: number): string => {
    const row = stored.get(marketId);
    const tail: PriceHour[] = [];
    for (const [hour, close_yes, volume, trade_count] of after.all(
      marketId,
      row?.through_hour ?? NO_HOUR,
    )) {
      tail.push({ hour, close_yes, volume, trade_count });
    }
    const unpacked = row && { ...row, points: unpackPoints(row.points) };
    return servedHistory(unpacked, tail.reverse(), dateOf);
  };
}

/**
 * Whether a market's stored points change when its hours from some hour on go from `before` to
 * `after` (in hour order): when an hour up to `through` (the newest stored hour) was added,
 * dropped or changed. Changes after it are read by each answer.
 */
export function storedHoursMoved(
  before: ReadonlyMap<number, PriceHour>,
  after: readonly PriceHour[],
  through: number,
): boolean {
  let kept = 0;
  for (const h of after) {
    if (h.hour > through) continue;
    const old = before.get(h.hour);
    if (
      old === undefined ||
      old.close_yes !== h.close_yes ||
      old.volume !== h.volume ||
      old.trade_count !== h.trade_count
    ) {
      return true;
    }
    kept += 1;
  }
  for (const hour of before.keys()) if (hour <= through) kept -= 1;
  return kept !== 0;
}

/** Renders markets' histories from their hours, on `connection` (the writer). */
export function createPriceHistoryWriter(connection: Connection) {
  const storedThrough = connection
    .prepare<[number], number | null>(
      "SELECT through_hour FROM market_price_history WHERE market_id = ?",
    )
    .pluck();
  const hourCount = connection
    .prepare<[number], number>("SELECT count(*) FROM market_hours WHERE market_id = ?")
    .pluck();
  const hoursAfter = connection
    .prepare<[number, number], number>(
      "SELECT count(*) FROM market_hours WHERE market_id = ? AND hour > ?",
    )
    .pluck();
  const latestHours = connection.prepare<[number, number], PriceHour>(
    `SELECT hour, close_yes, volume, trade_count FROM market_hours
      WHERE market_id = +? ORDER BY hour DESC LIMIT +?`,
  );
  const put = connection.prepare<[number, number | null, number, Buffer]>(
    `INSERT OR REPLACE INTO market_price_history (market_id, through_hour, point_count, points)
     VALUES (?, ?, ?, ?)`,
  );
  const drop = connection.prepare<[number]>("DELETE FROM market_price_history WHERE market_id = ?");
  // Formatting each hour once made a full rebuild's rendering five times faster.
  const dateOf = hourDates();
  /** From the market's hours given: all of them, in hour order (a full rebuild has them). */
  const fromHours = (marketId: number, hours: readonly PriceHour[]): void => {
    if (hours.length === 0) drop.run(marketId);
    else {
      const row = storedHistory(hours, hours.length, dateOf);
      put.run(marketId, row.through_hour, row.point_count, packPoints(row.points));
    }
  };
  /** From the market's stored hours, read back: the newest up to the cut and 719 before it. */
  const fromStored = (marketId: number): void => {
    const count = hourCount.get(marketId) ?? 0;
    if (count === 0) {
      drop.run(marketId);
      return;
    }
    const wanted = count - cutOf(count) + PRICE_HISTORY_POINTS - 1;
    const hours = latestHours.all(marketId, wanted).reverse();
    const row = storedHistory(hours, count, dateOf);
    put.run(marketId, row.through_hour, row.point_count, packPoints(row.points));
  };
  /**
   * After an incremental write changed the market's hours from some hour on (`before`, as
   * stored, and `after`, as written): renders the stored part again when a stored hour changed
   * or the hours after the cut are no longer 1 to TAIL_HOURS (the cut moves on).
   */
  const afterWrite = (
    marketId: number,
    before: ReadonlyMap<number, PriceHour>,
    after: readonly PriceHour[],
  ): void => {
    const through = storedThrough.get(marketId);
    if (through !== undefined) {
      const from = through ?? NO_HOUR;
      if (!storedHoursMoved(before, after, from)) {
        const tail = hoursAfter.get(marketId, from) ?? 0;
        if (tail >= 1 && tail <= TAIL_HOURS) return;
      }
    }
    fromStored(marketId);
  };
  return { fromHours, fromStored, afterWrite };
}
