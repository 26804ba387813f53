import type * as v from "valibot";
import { type Fill, HOUR_MS, type Outcome, roundTo, WHALE_VOLUME_USD } from "../analytics/fill";
import { marketFlow } from "../analytics/flow";
import {
  divergence,
  heldPosition,
  type MarketPosition,
  type SentimentLabel,
  smartMoneyProbability,
} from "../analytics/sentiment";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import { notFound } from "../errors";
import { SIDE_CODE_OF_OUTCOME } from "../refresh/pass";
import { createPriceHistoryReader } from "../refresh/price-history";
import type {
  ImpliedProbabilitySchema,
  MarketAnalysisSchema,
  MarketDetailSchema,
  MarketFlowSchema,
  MarketMoverSchema,
  MarketRankSchema,
  MarketSentimentSchema,
  MarketSignalSchema,
  SentimentSchema,
} from "../schemas/markets";
import { createSteppedReads } from "./stepped";

/**
 * Market read models as the API serves them: signal, sentiment, detail, flow, movers,
 * trending and moving rankings, and the live MarketAnalysis. Every query is index-backed and
 * bounded; only flow reads raw trades, and only one market's within a window of at most a day.
 */

/** MarketAnalysis is recomputed at most this often per market (about 30 seconds). */
export const ANALYSIS_TTL_MS = 30_000;
export const TOP_HOLDERS = 10;
export const TOP_POSITIONS = 10;
/** Positions MarketAnalysis weighs: the largest holders of each side by BUY USD (index order). */
export const ANALYSIS_POSITIONS_PER_SIDE = 100;
export const ANALYSIS_FLOW_MINUTES = 1440;
/** Markets need this many trades in the window to be ranked by price change. */
export const MOVING_MIN_TRADES = 3;
/**
 * Ranked lists kept per (generation, hour); each distinct filter is one entry. A list of the
 * large world's busiest week holds about 20k rows (a few MB), so this bounds what they hold.
 */
const MAX_CACHED_LISTS = 64;
/** Window totals kept to derive a window's other rankings from: only the latest few. */
const MAX_CACHED_TOTALS = 8;
const MAX_CACHED_ANALYSES = 1_000;

export interface MarketRef {
  slug: string;
  title: string | null;
  category: string | null;
  condition_id: string;
}

interface MarketRow extends MarketRef {
  id: number;
  end_date: number | null;
  created_at: number | null;
  resolved_outcome: Outcome | null;
  resolved_at: number | null;
  yes_name?: string | null;
  no_name?: string | null;
}

// The answer shapes are the response schemas' (src/schemas/markets.ts): declared once, there.
export type Sentiment = v.InferOutput<typeof SentimentSchema>;
export type ImpliedProbability = NonNullable<v.InferOutput<typeof ImpliedProbabilitySchema>>;
export type MarketSignal = v.InferOutput<typeof MarketSignalSchema>;
export type MarketSentiment = v.InferOutput<typeof MarketSentimentSchema>;

type Holder = MarketDetail["top_yes_holders"][number];

export type MarketDetail = v.InferOutput<typeof MarketDetailSchema>;

export type MarketFlow = v.InferOutput<typeof MarketFlowSchema>;

export type MarketMover = v.InferOutput<typeof MarketMoverSchema>;

export type MarketRank = v.InferOutput<typeof MarketRankSchema>;

export type MarketAnalysis = v.InferOutput<typeof MarketAnalysisSchema>;

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

interface StatsRow {
  volume: number;
  trade_count: number;
  unique_wallets: number;
  last_yes_price: number | null;
  last_trade_at: number | null;
  /** Written by the refresh from sentimentLabel(), so one of its labels. */
  sentiment: SentimentLabel | null;
  yes_ratio: number | null;
  yes_volume: number | null;
  no_volume: number | null;
  total_whale_volume: number | null;
  unique_whales: number | null;
  yes_implied_prob: number | null;
  no_implied_prob: number | null;
  implied_edge: number | null;
  implied_samples: number | null;
  implied_wallets: number | null;
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

interface PositionRow {
  wallet: string;
  side: Outcome;
  entry_price: number | null;
  buy_usd: number;
  volume: number;
  yes_shares: number;
  no_shares: number;
  trade_count: number;
  pnl: number;
  smart_money_score: number | null;
  confidence: number | null;
  wallet_type: string | null;
  win_rate: number | null;
  total_pnl: number | null;
  pnl_source: string | null;
  platform_name: string | null;
}

function sentimentOf(stats: StatsRow | undefined): Sentiment {
  return {
    sentiment: stats?.sentiment ?? null,
    yes_ratio: stats?.yes_ratio ?? null,
    yes_volume: stats?.yes_volume ?? null,
    no_volume: stats?.no_volume ?? null,
    total_whale_volume: stats?.total_whale_volume ?? null,
    unique_whales: stats?.unique_whales ?? null,
  };
}

/** Null when the refresh has not seen the market trade yet. */
function impliedOf(stats: StatsRow | undefined): ImpliedProbability | null {
  if (!stats) return null;
  return {
    yes_implied_prob: stats.yes_implied_prob,
    no_implied_prob: stats.no_implied_prob,
    current_price: stats.last_yes_price,
    edge: stats.implied_edge,
    samples: stats.implied_samples,
    unique_wallets: stats.implied_wallets,
  };
}

const refOf = (m: MarketRow): MarketRef => ({
  slug: m.slug,
  title: m.title,
  category: m.category,
  condition_id: m.condition_id,
});

function holderOf(p: PositionRow): Holder {
  return {
    address: p.wallet,
    shares: p.side === "YES" ? p.yes_shares : p.no_shares,
    entry_price: p.entry_price,
    position_usd: p.buy_usd,
    volume: p.volume,
    trade_count: p.trade_count,
    // Per-market ledger PnL is shown only where the ledger is the wallet's trusted figure
    // (docs/methodology.md, pnl_source): for market makers and whales it misses splits and merges.
    pnl: p.pnl_source === "ledger" ? p.pnl : null,
    wallet_type: p.wallet_type,
    platform_name: p.platform_name,
    smart_money_score: p.smart_money_score,
  };
}

/** A holder row as the smart-money share weighs it (heldPosition, src/analytics/sentiment.ts). */
function positionOf(p: PositionRow): MarketPosition {
  return heldPosition({
    wallet: p.wallet,
    side: p.side,
    entryPrice: p.entry_price,
    yesShares: p.yes_shares,
    noShares: p.no_shares,
    volume: p.volume,
    trades: p.trade_count,
  });
}

function flowOut(
  slug: string,
  whalesOnly: boolean,
  figures: ReturnType<typeof marketFlow>,
): MarketFlow {
  return {
    slug,
    window_minutes: figures.windowMinutes,
    whales_only: whalesOnly,
    total_volume: figures.totalVolume,
    net_yes: figures.netYes,
    net_no: figures.netNo,
    buckets: figures.buckets.map((b) => ({
      start: new Date(b.start).toISOString(),
      end: new Date(b.end).toISOString(),
      yes_buy_usd: b.yesBuyUsd,
      yes_sell_usd: b.yesSellUsd,
      no_buy_usd: b.noBuyUsd,
      no_sell_usd: b.noSellUsd,
      net_flow: b.netFlow,
      unique_wallets: b.uniqueWallets,
      avg_price: b.avgPrice,
      trades: b.trades,
    })),
  };
}

export type MarketQueries = ReturnType<typeof createMarketQueries>;

/**
 * A market side's holders in `order`, walking wallet_bets_by_market (sql/0027) for the side: each
 * position's ledger PnL marked at the market's last trade prices as of the latest refresh, or
 * settled at its outcome (betPnl in src/refresh/wallet-model.ts, in SQL). Exported for the test
 * that holds it to that index.
 */
export function marketHoldersSql(order: string): string {
  return `SELECT w.address AS wallet, b.side, b.entry_price, b.buy_usd, b.volume, b.yes_shares, b.no_shares,
            b.trade_count,
            b.pnl_base
              + b.yes_shares * CASE WHEN m.resolved_outcome IS NULL
                  THEN coalesce(ms.last_yes_trade, 0) ELSE m.resolved_outcome = 'YES' END
              + b.no_shares * CASE WHEN m.resolved_outcome IS NULL
                  THEN coalesce(ms.last_no_trade, 0) ELSE m.resolved_outcome = 'NO' END AS pnl,
            s.smart_money_score, s.confidence, s.wallet_type, s.win_rate,
            s.total_pnl, s.pnl_source, s.platform_name
       FROM wallet_bets b INDEXED BY wallet_bets_by_market
       CROSS JOIN wallet_ids w ON w.id = b.wallet_id
       LEFT JOIN wallet_stats s ON s.address = w.address
       JOIN markets m ON m.id = b.market_id
       LEFT JOIN market_stats ms ON ms.market_id = b.market_id
      WHERE b.market_id = +? AND b.side_code = ${SIDE_CODE_OF_OUTCOME}
      ORDER BY ${order} LIMIT +?`;
}

export function createMarketQueries(
  db: Db,
  options: {
    /** Market ids per statement of a window's read; tests pick a few to have many chunks. */
    windowChunkMarkets?: number;
  } = {},
) {
  const chunkMarkets = options.windowChunkMarkets ?? WINDOW_CHUNK_MARKETS;
  const r = db.reader;
  const marketBySlug = r.prepare<[string], MarketRow>(
    `SELECT m.id, m.slug, m.title, m.category, m.condition_id, m.end_date, m.created_at,
            m.resolved_outcome, m.resolved_at, o.yes_name, o.no_name
       FROM markets m LEFT JOIN market_outcomes o ON o.market_id = m.id WHERE m.slug = +?`,
  );
  const statsOf = r.prepare<[number], StatsRow>("SELECT * FROM market_stats WHERE market_id = ?");
  const holders = r.prepare<[number, Outcome, number], PositionRow>(
    marketHoldersSql("b.buy_usd DESC, w.address"),
  );
  /** The same rows in index order alone: equal sizes come in no particular order. */
  const holdersBySize = r.prepare<[number, Outcome, number], PositionRow>(
    marketHoldersSql("b.buy_usd DESC"),
  );
  const priceHistoryOf = createPriceHistoryReader(r);
  const hoursSince = r.prepare<[number, number], { volume: number; trade_count: number }>(
    `SELECT coalesce(sum(volume), 0) AS volume, coalesce(sum(trade_count), 0) AS trade_count
       FROM market_hours WHERE market_id = ? AND hour >= ?`,
  );
  const FILL = "wallet, market_id AS marketId, outcome, side, price, size, usd_value AS usd, ts";
  const fillsIn = r.prepare<[number, number, number], Fill>(
    `SELECT ${FILL} FROM trades WHERE market_id = +? AND ts >= +? AND ts <= +? ORDER BY ts, id`,
  );
  const whaleFillsIn = r.prepare<[number, number, number, number], Fill>(
    `SELECT ${FILL} FROM trades t
      WHERE t.market_id = +? AND t.ts >= +? AND t.ts <= +?
        AND EXISTS (SELECT 1 FROM wallet_stats s WHERE s.address = t.wallet AND s.total_volume > +?)
      ORDER BY t.ts, t.id`,
  );
  const steppedRead = createSteppedReads(db);
  const lastMarketId = r.prepare<[], number | null>("SELECT max(id) FROM markets").pluck();
  const windowSql = marketWindowSql();
  type WindowArgs = { from: number; to: number; first: number; end: number; category?: string };
  const windowStatements = {
    all: r.prepare<WindowArgs, WindowRow>(windowSql.all),
    category: r.prepare<WindowArgs, WindowRow>(windowSql.category),
  };

  /**
   * The TOP_HOLDERS largest holders of a side, by BUY USD, then address. Ordering by address too
   * makes SQLite sort every row it reads (about 45 µs a side on the medium world's busiest market);
   * unless the last holder's size ties with the next one's, the index's order picks the same
   * holders, and only they need sorting.
   */
  function topHolders(marketId: number, side: Outcome): PositionRow[] {
    const rows = holdersBySize.all(marketId, side, TOP_HOLDERS + 1);
    if (rows.length > TOP_HOLDERS) {
      if (rows[TOP_HOLDERS - 1]!.buy_usd === rows[TOP_HOLDERS]!.buy_usd) {
        return holders.all(marketId, side, TOP_HOLDERS);
      }
      rows.length = TOP_HOLDERS;
    }
    // Addresses are lowercase hex, so < orders them as SQLite's binary collation does.
    return rows.sort((a, b) => b.buy_usd - a.buy_usd || (a.wallet < b.wallet ? -1 : 1));
  }

  function flowOf(market: MarketRow, minutes: number, whalesOnly: boolean, now: number) {
    const from = now - minutes * 60_000;
    const fills = whalesOnly
      ? whaleFillsIn.iterate(market.id, from, now, WHALE_VOLUME_USD)
      : fillsIn.iterate(market.id, from, now);
    return marketFlow(fills, { to: now, minutes });
  }

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
  const analyses = new Map<string, { at: number; value: MarketAnalysis }>();

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

  function analyse(market: MarketRow, now: number): MarketAnalysis {
    const stats = statsOf.get(market.id);
    const rows = [
      ...holders.all(market.id, "YES", ANALYSIS_POSITIONS_PER_SIDE),
      ...holders.all(market.id, "NO", ANALYSIS_POSITIONS_PER_SIDE),
    ];
    const byWallet = new Map(rows.map((p) => [p.wallet, p]));
    const smart = smartMoneyProbability(rows.map(positionOf), (wallet) => {
      const p = byWallet.get(wallet);
      return p?.smart_money_score == null || p.confidence == null
        ? null
        : { score: p.smart_money_score, confidence: p.confidence };
    });
    const marketPrice = stats?.last_yes_price ?? null;
    const top = [...rows]
      .sort((a, b) => b.volume - a.volume || (a.wallet < b.wallet ? -1 : 1))
      .slice(0, TOP_POSITIONS);
    // Whale-only flow over a quiet day says nothing; fall back to every wallet and say so.
    let whalesOnly = true;
    let figures = flowOf(market, ANALYSIS_FLOW_MINUTES, true, now);
    if (figures.totalVolume <= 0) {
      whalesOnly = false;
      figures = flowOf(market, ANALYSIS_FLOW_MINUTES, false, now);
    }
    return {
      market_slug: market.slug,
      market_title: market.title,
      market_category: market.category,
      condition_id: market.condition_id,
      smart_money_prob: smart.probability,
      market_price: marketPrice,
      divergence: divergence(smart.probability, marketPrice),
      sample_wallets: smart.sampleWallets,
      top_positions: top.map((p) => ({
        address: p.wallet,
        market_side: p.side,
        volume: p.volume,
        trade_count: p.trade_count,
        wallet_type: p.wallet_type,
        win_rate: p.win_rate,
        total_pnl: p.total_pnl,
        platform_name: p.platform_name,
      })),
      sentiment: sentimentOf(stats),
      flow_24h: { ...flowOut(market.slug, whalesOnly, figures), relaxed: !whalesOnly },
    };
  }

  return {
    signal(slug: string): MarketSignal | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      const { sentiment, ...figures } = sentimentOf(stats);
      return {
        market: refOf(market),
        sentiment: { direction: sentiment, ...figures },
        smart_money_probability: impliedOf(stats),
      };
    },

    sentiment(slug: string): MarketSentiment | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      return { ...sentimentOf(stats), implied_probability: impliedOf(stats) };
    },

    /**
     * The market's detail as JSON text. Its price_history is stored serialized by the refresh
     * (market_price_history, all but its newest hours: src/refresh/price-history.ts), so it is
     * spliced in as the last field rather than parsed and serialized again: that array is most
     * of the answer's bytes.
     */
    detailJson(slug: string, now: number): string | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      const day = hoursSince.get(market.id, windowHours(now, 24).from)!;
      const head: Omit<MarketDetail, "price_history"> = {
        ...refOf(market),
        resolved_outcome: market.resolved_outcome,
        outcome_names:
          market.yes_name && market.no_name ? { yes: market.yes_name, no: market.no_name } : null,
        stats: {
          volume: stats?.volume ?? 0,
          trade_count: stats?.trade_count ?? 0,
          unique_wallets: stats?.unique_wallets ?? 0,
          last_price: stats?.last_yes_price ?? null,
          last_trade_at: iso(stats?.last_trade_at ?? null),
          volume_24h: day.volume,
          trade_count_24h: day.trade_count,
          end_date: iso(market.end_date),
          created_at: iso(market.created_at),
          resolved_at: iso(market.resolved_at),
        },
        top_yes_holders: topHolders(market.id, "YES").map(holderOf),
        top_no_holders: topHolders(market.id, "NO").map(holderOf),
      };
      return `${JSON.stringify(head).slice(0, -1)},"price_history":${priceHistoryOf(market.id)}}`;
    },

    /** Fills of [now − minutes, now], optionally only by wallets over WHALE_VOLUME_USD of volume. */
    flow(
      slug: string,
      options: { minutes: number; whalesOnly: boolean; now: number },
    ): MarketFlow | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const figures = flowOf(market, options.minutes, options.whalesOnly, options.now);
      return flowOut(market.slug, options.whalesOnly, figures);
    },

    /**
     * Every market that traded in the window, ranked; cached per generation and hour. Read in
     * chunks of market ids (WINDOW_CHUNK_MARKETS), so other requests are answered meanwhile.
     */
    movers: (filter: WindowFilter, ctx: ReadContext) => ranked("movers", filter, ctx),
    trending: (filter: WindowFilter, ctx: ReadContext) => ranked("trending", filter, ctx),
    moving: (filter: WindowFilter, ctx: ReadContext) => ranked("moving", filter, ctx),

    /**
     * MarketAnalysis, computed live and reused for ANALYSIS_TTL_MS per market whatever
     * refreshes in between, so a burst of calls costs one computation.
     */
    analysis(slug: string, now: number): MarketAnalysis | undefined {
      const hit = analyses.get(slug);
      if (hit && now >= hit.at && now - hit.at < ANALYSIS_TTL_MS) return hit.value;
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const value = analyse(market, now);
      analyses.delete(slug);
      if (analyses.size >= MAX_CACHED_ANALYSES) {
        for (const [key, entry] of analyses) {
          if (now - entry.at >= ANALYSIS_TTL_MS || analyses.size >= MAX_CACHED_ANALYSES) {
            analyses.delete(key);
          }
        }
      }
      analyses.set(slug, { at: now, value });
      return value;
    },
  };
}

/** The one wording of an unknown market, for REST's 404 and MCP's tool error alike. */
export const marketNotFound = (slug: string) => notFound(`no market with slug '${slug}'`);
