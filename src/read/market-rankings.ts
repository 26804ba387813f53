import type * as v from "valibot";
import { HOUR_MS, roundTo } from "../analytics/fill";
import type { Db } from "../db/open";
import type { MarketMoverSchema, MarketRankSchema } from "../schemas/markets";
import { createSteppedReads } from "./stepped";

/**
 * The market rankings (movers, trending, moving): every market that traded in a window of hours,
 * its hourly figures summed and ranked, cached per read-model generation and hour.
 */

export type MarketMover = v.InferOutput<typeof MarketMoverSchema>;
export type MarketRank = v.InferOutput<typeof MarketRankSchema>;

/** Markets need this many trades in the window to be ranked by price change. */
export const MOVING_MIN_TRADES = 3;
/**
 * Ranked lists kept per (generation, hour); each distinct filter is one entry. A list of the
 * large world's busiest week holds about 20k rows (a few MB), so this bounds what they hold.
 */
const MAX_CACHED_LISTS = 64;
/** Window totals kept to derive a window's other rankings from: only the latest few. */
const MAX_CACHED_TOTALS = 8;

/**
 * A ranked row's sort key: two numbers, larger first, then the slug, ascending. It is also the
 * keyset of the page cursors, so paging continues correctly even when the list is rebuilt.
 */
export type RankKey = [number, number, string];
export interface Ranked<T> {
  row: T;
  key: RankKey;
}

/** Negative when `a` ranks before `b`. */
export function compareRankKeys(a: RankKey, b: RankKey): number {
  return b[0] - a[0] || b[1] - a[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

/** The `limit` rows ranked after `after` (from the top without it). */
export function pageAfter<T>(
  list: readonly Ranked<T>[],
  after: RankKey | undefined,
  limit: number,
): { rows: Ranked<T>[]; more: boolean } {
  let lo = 0;
  if (after !== undefined) {
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareRankKeys(list[mid]!.key, after) <= 0) lo = mid + 1;
      else hi = mid;
    }
  }
  return { rows: list.slice(lo, lo + limit), more: lo + limit < list.length };
}

export interface WindowFilter {
  periodHours: number;
  category?: string;
  /** Case-insensitive substring of the title. */
  search?: string;
}

/** What the caller knows about freshness: ranked lists are reused while both stay the same. */
export interface ReadContext {
  generation: number;
  now: number;
}

/**
 * The hours a `period_hours` window covers: the `periodHours` whole clock hours before the
 * current one, plus the current hour so far. The window therefore spans at least `periodHours`
 * hours (at most one more), and it moves on the hour, which is what lets a ranking be cached
 * for the rest of the hour.
 */
export function windowHours(now: number, periodHours: number): { from: number; to: number } {
  const current = Math.floor(now / HOUR_MS);
  return { from: current - periodHours, to: current };
}

/** One market's figures over a window of hours (marketWindowSql). */
interface WindowRow {
  market_id: number;
  slug: string;
  title: string | null;
  category: string | null;
  volume: number;
  whale_volume: number;
  trade_count: number;
  net_flow: number;
  /** The first hour's open and the last hour's close in the window. */
  open_yes: number | null;
  close_yes: number | null;
  /** The close of the market's last hour before the window, if it had one. */
  close_before: number | null;
}

/**
 * Market ids per statement when a ranking reads its window. On the large world (20k markets) the
 * whole window was one statement of about 120 ms (a day) to 170 ms (a week) that held every
 * other request waiting; in chunks of 500 the longest the event loop waits is 3–7 ms, for the
 * same total time (docs/architecture.md, "Long reads in steps").
 */
export const WINDOW_CHUNK_MARKETS = 500;

/**
 * Every market with an id in [@first, @end) that traded in the window [@from, @to] (hours), with
 * its hourly figures summed by SQLite, one row per market in id order: all markets, or one
 * category's. Exported so a test can hold it to the hours read one by one. The id range lets a
 * ranking read its window in chunks (WINDOW_CHUNK_MARKETS), giving the event loop back between
 * them.
 *
 * The markets probed are those whose last trade (market_stats.last_trade_at, written with their
 * hours by the same refresh) is not before the window opens: a market with an hour in the window
 * traded then, so none is missed, and the join below keeps only those with hours in it. Each
 * market's hours are one range of market_hours' key (market_id, hour): no sort, and no hour row
 * crosses into JavaScript. Found through an index on the hour instead (before sql/0029), a week's
 * 470k hour rows were each looked up in the table, joined to their market and sorted, then
 * summed in JavaScript: 2.3 s of SQLite alone on the large world, against 0.19 s this way
 * (sqlite3 shell, one run each). docs/architecture.md, "Trending".
 *
 * sum() is SQLite's compensated sum, as in the market detail's volume_24h (hoursSince), where
 * JavaScript's running sum differed from it in the last bits.
 */
export function marketWindowSql(): { all: string; category: string } {
  const sql = (byCategory: boolean) => `
        SELECT m.id AS market_id, m.slug, m.title, m.category,
               sum(h.volume) AS volume, sum(h.whale_volume) AS whale_volume,
               sum(h.trade_count) AS trade_count, sum(h.net_flow) AS net_flow,
               (SELECT open_yes FROM market_hours
                 WHERE market_id = m.id AND hour >= @from AND hour <= @to
                 ORDER BY hour LIMIT 1) AS open_yes,
               (SELECT close_yes FROM market_hours
                 WHERE market_id = m.id AND hour >= @from AND hour <= @to
                 ORDER BY hour DESC LIMIT 1) AS close_yes,
               (SELECT close_yes FROM market_hours
                 WHERE market_id = m.id AND hour < @from
                 ORDER BY hour DESC LIMIT 1) AS close_before
          FROM markets m CROSS JOIN market_hours h ON h.market_id = m.id
         WHERE h.hour >= @from AND h.hour <= @to AND m.id >= @first AND m.id < @end
           AND m.id IN (SELECT market_id FROM market_stats
                         WHERE last_trade_at >= @from * ${HOUR_MS}
                           AND market_id >= @first AND market_id < @end)
           ${byCategory ? "AND m.category = @category" : ""}
         GROUP BY m.id ORDER BY m.id`;
  return { all: sql(false), category: sql(true) };
}

interface WindowTotals {
  slug: string;
  title: string | null;
  category: string | null;
  volume: number;
  whaleVolume: number;
  tradeCount: number;
  netFlow: number;
  priceChange: number | null;
}

export type MarketRankings = ReturnType<typeof createMarketRankings>;

export interface MarketRankingsOptions {
  /** Market ids per statement of a window's read; tests pick a few to have many chunks. */
  windowChunkMarkets?: number;
}

export function createMarketRankings(db: Db, options: MarketRankingsOptions = {}) {
  const chunkMarkets = options.windowChunkMarkets ?? WINDOW_CHUNK_MARKETS;
  const r = db.reader;
  const steppedRead = createSteppedReads(db);
  const lastMarketId = r.prepare<[], number | null>("SELECT max(id) FROM markets").pluck();
  const windowSql = marketWindowSql();
  type WindowArgs = { from: number; to: number; first: number; end: number; category?: string };
  const windowStatements = {
    all: r.prepare<WindowArgs, WindowRow>(windowSql.all),
    category: r.prepare<WindowArgs, WindowRow>(windowSql.category),
  };

  /**
   * Per market over the window: summed hourly figures, and the YES price change from the price
   * in force when the window opened (the last close before it, else the first trade in it) to
   * the last close in it. Read a chunk of market ids per step (stepped.ts).
   */
  function* windowSteps(filter: WindowFilter, now: number): Generator<void, WindowTotals[]> {
    const { from, to } = windowHours(now, filter.periodHours);
    const statement = windowStatements[filter.category === undefined ? "all" : "category"];
    const args = {
      from,
      to,
      ...(filter.category === undefined ? {} : { category: filter.category }),
    };
    const needle = filter.search?.toLowerCase();
    const end = (lastMarketId.get() ?? 0) + 1;
    const out: WindowTotals[] = [];
    for (let first = 0; first < end; first += chunkMarkets) {
      for (const m of statement.iterate({ ...args, first, end: first + chunkMarkets })) {
        if (needle === undefined || (m.title ?? "").toLowerCase().includes(needle)) {
          out.push(totalsOf(m));
        }
      }
      if (first + chunkMarkets < end) yield;
    }
    return out;
  }

  const windowTotals = (filter: WindowFilter, now: number) =>
    steppedRead(() => windowSteps(filter, now));

  function totalsOf(m: WindowRow): WindowTotals {
    const start = m.close_before ?? m.open_yes;
    return {
      slug: m.slug,
      title: m.title,
      category: m.category,
      volume: m.volume,
      whaleVolume: m.whale_volume,
      tradeCount: m.trade_count,
      netFlow: m.net_flow,
      // Rounded to a millionth: prices come in thousandths, so this only drops binary noise.
      priceChange: start === null || m.close_yes === null ? null : roundTo(m.close_yes - start, 6),
    };
  }

  const rankOf = (m: WindowTotals): MarketRank => ({
    slug: m.slug,
    title: m.title,
    category: m.category,
    whale_volume: m.whaleVolume,
    price_change: m.priceChange,
    trade_count: m.tradeCount,
  });
  const sortRanked = <T>(list: Ranked<T>[]) => list.sort((a, b) => compareRankKeys(a.key, b.key));

  const rankings = {
    /** Volume first (then whale volume, then slug). */
    movers: (totals: WindowTotals[]): Ranked<MarketMover>[] =>
      sortRanked(
        totals.map((m) => ({
          row: {
            slug: m.slug,
            title: m.title,
            category: m.category,
            volume: m.volume,
            trade_count: m.tradeCount,
            net_flow: m.netFlow,
          },
          key: [m.volume, m.whaleVolume, m.slug],
        })),
      ),
    /** Whale volume first (then all volume, then slug). */
    trending: (totals: WindowTotals[]): Ranked<MarketRank>[] =>
      sortRanked(totals.map((m) => ({ row: rankOf(m), key: [m.whaleVolume, m.volume, m.slug] }))),
    /** Absolute price change first (then whale volume, then slug); at least 3 trades. */
    moving: (totals: WindowTotals[]): Ranked<MarketRank>[] =>
      sortRanked(
        totals
          .filter((m) => m.tradeCount >= MOVING_MIN_TRADES && m.priceChange !== null)
          .map((m) => ({ row: rankOf(m), key: [Math.abs(m.priceChange!), m.whaleVolume, m.slug] })),
      ),
  };

  // Ranked lists depend only on the read models (generation) and the window (the hour). The
  // three rankings of one window share its totals, read once.
  let listEpoch = "";
  const totalsOfWindow = new Map<string, Promise<WindowTotals[]>>();
  const lists = new Map<string, Promise<Ranked<unknown>[]>>();

  function ranked<K extends keyof typeof rankings>(
    kind: K,
    filter: WindowFilter,
    ctx: ReadContext,
  ): Promise<ReturnType<(typeof rankings)[K]>> {
    const epoch = `${ctx.generation}:${Math.floor(ctx.now / HOUR_MS)}`;
    if (epoch !== listEpoch) {
      totalsOfWindow.clear();
      lists.clear();
      listEpoch = epoch;
    }
    const window = JSON.stringify([filter.periodHours, filter.category, filter.search]);
    const key = `${kind} ${window}`;
    let list = lists.get(key);
    if (!list) {
      let totals = totalsOfWindow.get(window);
      if (!totals) {
        totals = windowTotals(filter, ctx.now);
        keep(totalsOfWindow, window, totals, MAX_CACHED_TOTALS);
      }
      list = totals.then((t) => rankings[kind](t));
      keep(lists, key, list, MAX_CACHED_LISTS);
    }
    return list as Promise<ReturnType<(typeof rankings)[K]>>;
  }

  /** Caches a list being computed; one that fails is dropped, so the next request tries again. */
  function keep<T>(
    cache: Map<string, Promise<T>>,
    key: string,
    value: Promise<T>,
    max: number,
  ): void {
    if (cache.size >= max) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
    value.catch(() => {
      if (cache.get(key) === value) cache.delete(key);
    });
  }

  return {
    /**
     * Every market that traded in the window, ranked; cached per generation and hour. Read in
     * chunks of market ids (WINDOW_CHUNK_MARKETS), so other requests are answered meanwhile.
     */
    movers: (filter: WindowFilter, ctx: ReadContext) => ranked("movers", filter, ctx),
    trending: (filter: WindowFilter, ctx: ReadContext) => ranked("trending", filter, ctx),
    moving: (filter: WindowFilter, ctx: ReadContext) => ranked("moving", filter, ctx),
  };
}
