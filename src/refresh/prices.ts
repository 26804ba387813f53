import type { Outcome } from "../analytics/fill";
import type { Db } from "../db/open";
import { decodedSql } from "../ingest/fill-codec";

/**
 * Point-in-time prices for one refresh: the last trade of an outcome (the mark of open positions)
 * and the YES-equivalent price at a moment (for the timing signal). Both lookups give the same
 * answers; they differ in cost:
 * - `seriesLookup` answers from every market's fills, read once up front (readPriceSeries), by
 *   binary search: a full rebuild asks about nearly every market, and one index seek per bet was
 *   a quarter of its time;
 * - `seekLookup` asks the fills_by_market index each time (answers for marks are kept for the run): an
 *   incremental refresh asks about few moments in many markets, and reading whole series would
 *   cost more than the rest of the run.
 */
export interface PriceLookup {
  /** The outcome's last trade price, or null when that outcome never traded. */
  lastPrice(marketId: number, outcome: Outcome): number | null;
  /** The YES price implied by the last trade at or before `ts`, or null before the first. */
  yesPriceAt(marketId: number, ts: number): number | null;
}

// Decoding of fills' columns (sql/0010), as the trades view does it.
const OUTCOME = "CASE WHEN kind & 1 THEN 'NO' ELSE 'YES' END";
const PRICE = decodedSql("price");

const yesEquivalent = (outcome: Outcome, price: number) => (outcome === "YES" ? price : 1 - price);

/** One market's fills in (ts, id) order, reduced to what price lookups need. */
export interface PriceSeries {
  ts: Float64Array<ArrayBuffer>;
  /** The YES-equivalent price of each fill (a NO fill at p means 1 − p). */
  yes: Float64Array<ArrayBuffer>;
  lastYes: number | null;
  lastNo: number | null;
}

/** A market's series as readPriceSeries fills it in. */
interface SeriesInProgress {
  ts: Float64Array<ArrayBuffer>;
  yes: Float64Array<ArrayBuffer>;
  count: number;
  /** Whether the fills came in time order so far (ids come in order: ties are in id order). */
  inOrder: boolean;
  lastYes: number | null;
  lastYesTs: number;
  lastNo: number | null;
  lastNoTs: number;
}

/**
 * Every market's series, about 16 bytes per fill, in two passes and no sort: each market's fill
 * count from fills_by_market alone (no table visit), so its arrays are made at their final size,
 * then every fill in the table's own order, which is id order, into its market's arrays. Fills
 * mostly arrive in time order, so a market's fills in id order are usually in (ts, id) order
 * already; a market whose are not (a back-dated fill) is sorted by time alone, with ties left in
 * id order. The caller's transaction keeps the two passes on one snapshot (a full rebuild holds
 * the write lock throughout).
 *
 * Before, one statement sorted every fill by (market, ts, id) with SQLite's sorter, on disk and
 * with the connection's helper threads, while the wallet worker sorted every fill by wallet on
 * the same two cores: 32–35 s on the large world. Seeking each market's fills along
 * fills_by_market on first use was slower still (38 s of a 364 s rebuild): one table lookup per
 * fill, in index order.
 */
export function readPriceSeries(db: Pick<Db, "writer">): Map<number, PriceSeries> {
  // By market id: the markets table's integer keys, dense, so an array rather than a Map (one
  // lookup per fill).
  const building: (SeriesInProgress | undefined)[] = [];
  for (const [marketId, count] of db.writer
    .prepare<[], [number, number]>("SELECT market_id, count(*) FROM fills GROUP BY market_id")
    .raw()
    .iterate()) {
    building[marketId] = {
      ts: new Float64Array(count),
      yes: new Float64Array(count),
      count: 0,
      inOrder: true,
      lastYes: null,
      lastYesTs: Number.NEGATIVE_INFINITY,
      lastNo: null,
      lastNoTs: Number.NEGATIVE_INFINITY,
    };
  }
  // The market and the outcome's bit in one integer (market × 2 + 1 for NO): one value fewer to
  // hand to JavaScript per fill, and no string made.
  for (const [marketAndNo, price, at] of db.writer
    .prepare<[], [number, number, number]>(
      `SELECT market_id * 2 + (kind & 1), ${PRICE}, ts FROM fills NOT INDEXED`,
    )
    .raw()
    .iterate()) {
    const no = marketAndNo & 1;
    const s = building[marketAndNo >>> 1];
    if (s === undefined || s.count === s.ts.length) {
      throw new Error("the fills changed while their price series were read");
    }
    if (s.count > 0 && at < s.ts[s.count - 1]!) s.inOrder = false;
    s.ts[s.count] = at;
    s.yes[s.count] = yesEquivalent(no ? "NO" : "YES", price);
    s.count += 1;
    // In id order, a fill at the same time as the outcome's last so far comes after it.
    if (no) {
      if (at >= s.lastNoTs) {
        s.lastNoTs = at;
        s.lastNo = price;
      }
    } else if (at >= s.lastYesTs) {
      s.lastYesTs = at;
      s.lastYes = price;
    }
  }
  const series = new Map<number, PriceSeries>();
  // forEach visits the markets that have fills (an array's holes are skipped).
  building.forEach((s, marketId) => {
    if (s === undefined) return;
    if (s.count !== s.ts.length) {
      throw new Error("the fills changed while their price series were read");
    }
    const { ts, yes } = s.inOrder ? s : inTimeOrder(s.ts, s.yes);
    series.set(marketId, { ts, yes, lastYes: s.lastYes, lastNo: s.lastNo });
  });
  return series;
}

/**
 * One market's series from its fills in (ts, id) order, as readPriceSeries reads it from the
 * stored ones: for fills that are not in `fills` (src/ingest/past-markets.ts).
 */
export function seriesOfFills(
  fills: readonly { outcome: Outcome; price: number; ts: number }[],
): PriceSeries {
  const ts = new Float64Array(fills.length);
  const yes = new Float64Array(fills.length);
  let lastYes: number | null = null;
  let lastNo: number | null = null;
  fills.forEach((fill, i) => {
    ts[i] = fill.ts;
    yes[i] = yesEquivalent(fill.outcome, fill.price);
    if (fill.outcome === "YES") lastYes = fill.price;
    else lastNo = fill.price;
  });
  return { ts, yes, lastYes, lastNo };
}

/** A market's fills read in id order, put in (ts, id) order: by time, ties kept in id order. */
function inTimeOrder(
  ts: Float64Array<ArrayBuffer>,
  yes: Float64Array<ArrayBuffer>,
): { ts: Float64Array<ArrayBuffer>; yes: Float64Array<ArrayBuffer> } {
  const order = Array.from({ length: ts.length }, (_, i) => i).sort(
    (a, b) => ts[a]! - ts[b]! || a - b,
  );
  return {
    ts: Float64Array.from(order, (i) => ts[i]!),
    yes: Float64Array.from(order, (i) => yes[i]!),
  };
}

/**
 * Every market's series as `ArrayBuffer`s, to move them to another thread without a copy
 * (postMessage's transfer list): about 16 bytes a fill.
 */
export function seriesBuffers(series: ReadonlyMap<number, PriceSeries>): ArrayBuffer[] {
  const buffers: ArrayBuffer[] = [];
  for (const { ts, yes } of series.values()) buffers.push(ts.buffer, yes.buffer);
  return buffers;
}

/** Entries of a series per block of its sampled index (seriesLookup). */
const BLOCK = 32;

/**
 * Answers from every market's series (readPriceSeries), by binary search. A full rebuild asks
 * the price 24 hours after each bet's entry: nine million asks on the large world, each into a
 * random market of 160 MB of series, so each ask's cost is its misses of the CPU's caches. Each
 * series is found by market id in an array, not a Map, and gets a sampled index (the time of
 * every BLOCK-th entry, 1/32 of its times), so the search ends in one block of 32 times, a few
 * cache lines. Nine million asks into the large world's series, in proportion to each market's
 * fills, took 4.7–5.2 s, against 7.1–7.7 s with a Map and one binary search (two rounds each,
 * the same asks). Same answers: the same position, the first entry after `ts`.
 */
export function seriesLookup(series: ReadonlyMap<number, PriceSeries>): PriceLookup {
  type Indexed = PriceSeries & { sampled: Float64Array };
  // Market ids are the markets table's integer keys: dense, so a plain array.
  const byId: (Indexed | undefined)[] = [];
  for (const [marketId, s] of series) {
    const sampled = new Float64Array(Math.ceil(s.ts.length / BLOCK));
    for (let k = 0; k < sampled.length; k++) sampled[k] = s.ts[k * BLOCK]!;
    byId[marketId] = { ...s, sampled };
  }

  return {
    lastPrice(marketId, outcome) {
      const s = byId[marketId];
      if (s === undefined) return null;
      return outcome === "YES" ? s.lastYes : s.lastNo;
    },
    yesPriceAt(marketId, ts) {
      const s = byId[marketId];
      if (s === undefined) return null;
      // The blocks whose first time is at or before `ts`...
      const blocks = firstAfter(s.sampled, ts, 0, s.sampled.length);
      if (blocks === 0) return null;
      // ...and the first entry after `ts` is in the last of them, or just past it.
      const after = firstAfter(
        s.ts,
        ts,
        (blocks - 1) * BLOCK,
        Math.min(blocks * BLOCK, s.ts.length),
      );
      return s.yes[after - 1]!;
    },
  };
}

/** The first position in `times[from, to)` (sorted) whose time is after `ts`; `to` if none is. */
function firstAfter(times: Float64Array, ts: number, from: number, to: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid]! <= ts) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Answers from the fills_by_market index, as asked. */
export function seekLookup(db: Pick<Db, "writer">): PriceLookup {
  // LIMIT 1 is written out: a bound LIMIT makes this SQLite re-prepare the statement per call.
  const last = db.writer
    .prepare<[number, Outcome], number>(
      `SELECT ${PRICE} FROM fills INDEXED BY fills_by_market
        WHERE market_id = +? AND (kind & 1) = (? = 'NO') ORDER BY ts DESC, id DESC LIMIT 1`,
    )
    .pluck();
  const at = db.writer
    .prepare<[number, number], [Outcome, number]>(
      `SELECT ${OUTCOME}, ${PRICE} FROM fills INDEXED BY fills_by_market
        WHERE market_id = +? AND ts <= +? ORDER BY ts DESC, id DESC LIMIT 1`,
    )
    .raw();
  const marks = new Map<number, number | null>();
  return {
    lastPrice(marketId, outcome) {
      const key = marketId * 2 + (outcome === "YES" ? 0 : 1);
      let price = marks.get(key);
      if (price === undefined) {
        price = last.get(marketId, outcome) ?? null;
        marks.set(key, price);
      }
      return price;
    },
    yesPriceAt(marketId, ts) {
      const row = at.get(marketId, ts);
      return row === undefined ? null : yesEquivalent(row[0], row[1]);
    },
  };
}

/** A market's newest fill of each outcome among those since the last refresh, in (ts, id) order. */
export type NewestFills = Partial<Record<Outcome, { ts: number; id: number; price: number }>>;

/**
 * `lookup` with each outcome's last trade price (the mark of open positions) worked out from
 * what the last refresh stored in market_stats, where it can be: fills are only ever added, so a
 * market's last fill of an outcome is the one stored then unless a new fill of that outcome came
 * after it. A new fill dated at or after the stored last_trade_at comes after every earlier fill
 * (and a larger id breaks a tie of times); for a back-dated one, which fill is last is asked of
 * `lookup`. An incremental refresh marks the open bets of every wallet it recomputes (about
 * 18,000 markets on the large world), and seeking each market's last fills in fills_by_market
 * was more than a tenth of it.
 */
export function withStoredMarks(
  db: Pick<Db, "writer">,
  lookup: PriceLookup,
  newest: ReadonlyMap<number, NewestFills>,
): PriceLookup {
  const stored = new Map<number, [number | null, number | null, number | null]>();
  for (const [marketId, yes, no, lastTradeAt] of db.writer
    .prepare<[], [number, number | null, number | null, number | null]>(
      "SELECT market_id, last_yes_trade, last_no_trade, last_trade_at FROM market_stats",
    )
    .raw()
    .iterate()) {
    stored.set(marketId, [yes, no, lastTradeAt]);
  }
  return {
    lastPrice(marketId, outcome) {
      const marks = stored.get(marketId);
      // A market the last refresh did not see.
      if (marks === undefined) return lookup.lastPrice(marketId, outcome);
      const storedMark = outcome === "YES" ? marks[0] : marks[1];
      const last = newest.get(marketId)?.[outcome];
      if (last === undefined) return storedMark;
      const lastTradeAt = marks[2];
      if (lastTradeAt === null || last.ts >= lastTradeAt) return last.price;
      return lookup.lastPrice(marketId, outcome);
    },
    yesPriceAt: (marketId, ts) => lookup.yesPriceAt(marketId, ts),
  };
}
