/**
 * A full rebuild's models: every trade streamed twice (by wallet, and by market), each time
 * sorted by SQLite's sorter (ALL_FILLS in pass.ts), each wallet's and market's model built and
 * handed to `rows` (full-rows.ts). Each pass only reads, on a read-only connection of its own, in
 * a worker thread of its own (workers/full.ts), while the writer stores the rows they send.
 */

import type { Connection } from "../db/open";
import { WHALE_VOLUME_USD } from "../domain";
import type { fullRowEncoder } from "./full-rows";
import { type MarketHourRow, type MarketStatsRow, marketModel } from "./market-model";
import {
  ALL_FILLS,
  BET_FIELDS,
  betFromValues,
  type CountingWallet,
  completeSortedFill,
  contextFor,
  type FillRow,
  type Stopwatch,
  stopwatch,
  toFill,
} from "./pass";
import type { PriceLookup } from "./prices";
import { unpackSealedTrades } from "./sealed-trades";
import { type TradeFill, type WalletBetRow, walletModel } from "./wallet-model";

/**
 * Streams fills grouped by a key column, calling `each` once per group with its fills as read.
 * The rows are ALL_FILLS' (pass.ts), without their wallet's name: `walletOf` gives it.
 */
function forEachGroup<K extends string | number>(
  rows: IterableIterator<FillRow>,
  keyOf: (row: FillRow) => K,
  walletOf: (row: FillRow) => string,
  each: (key: K, fills: TradeFill[]) => void,
): number {
  let current: K | undefined;
  let group: TradeFill[] = [];
  let count = 0;
  for (const row of rows) {
    count += 1;
    const key = keyOf(row);
    if (key !== current) {
      if (current !== undefined) each(current, group);
      current = key;
      group = [];
    }
    group.push(toFill(completeSortedFill(row, walletOf(row))));
  }
  if (current !== undefined) each(current, group);
  return count;
}

/** An iterator that can look at its next value without taking it. */
function peekable<T>(items: Iterator<T>) {
  let next = items.next();
  return {
    peek: (): T | undefined => (next.done ? undefined : next.value),
    take(): T {
      const value = next.value as T;
      next = items.next();
      return value;
    },
  };
}

/** The rows of an iterator whose first has been taken already (`first`). */
function* startingWith<T>(first: IteratorResult<T>, rest: Iterator<T>): IterableIterator<T> {
  if (first.done) return;
  yield first.value;
  for (let next = rest.next(); !next.done; next = rest.next()) yield next.value;
}

/** market_hours as served: the key and MarketHourRow's fields. */
const SERVED_HOUR_COLUMNS =
  "market_id, hour, volume, whale_volume, trade_count, net_flow, open_yes, close_yes";

const COMPACTED = "SELECT id FROM markets WHERE compacted_at IS NOT NULL";

/** A category's resolved bets and wins over every wallet's bets: a category_base_rates row. */
export interface CategoryTally {
  category: string;
  resolvedBets: number;
  wins: number;
}

/** What the wallet pass hands over: the market pass's input and the rebuild's counts. */
export interface WalletModelsResult {
  /** Whales' and insiders' standings by wallet id (as a string), for the market models. */
  standing: Map<string, CountingWallet>;
  fillsRead: number;
  /** Resolved bets and wins by category, counted as the bets were built. */
  categories: CategoryTally[];
  /** Where the pass's time went, ms (stopwatch in pass.ts). */
  phases: Record<string, number>;
}

export interface MarketModelsResult {
  markets: number;
  fillsRead: number;
  phases: Record<string, number>;
}

/**
 * Builds every wallet's model from all trades, as of `now`, and hands each to `rows`. `prices`
 * gives the lookup of every market's price series (prices.ts), asked for once the pass's sort is
 * done. `connection` reads the database as it was before the rebuild began: the writer holds the
 * write lock for the whole rebuild, so every read here sees the same committed state, including
 * the read models that the writer's uncommitted transaction has dropped.
 *
 * Markets compacted by fill retention (src/refresh/retention.ts) have lost their fills: their
 * bets are read from those previous read models and passed on as they were.
 */
export function buildWalletModels(
  connection: Connection,
  now: number,
  rows: ModelRows,
  prices: () => PriceLookup,
): WalletModelsResult {
  const watch = stopwatch();
  const hasFrozen = connection.prepare(`${COMPACTED} LIMIT 1`).get() !== undefined;
  const wallets = walletPass(connection, now, rows, prices, hasFrozen, watch);
  watch.lap("wallets");
  return {
    standing: wallets.standing,
    fillsRead: wallets.fillsRead,
    categories: [...wallets.categories.values()],
    phases: watch.phases,
  };
}

/**
 * Builds every market's model from all trades, as of `now`, and hands each to `rows`. It sorts
 * every fill by market first, then asks `standing` for the whales' and insiders' standings (the
 * wallet pass's, which may still be running meanwhile on another thread). Compacted markets'
 * stats and hours are read from the previous read models, as buildWalletModels reads their bets.
 */
export function buildMarketModels(
  connection: Connection,
  now: number,
  rows: ModelRows,
  standing: () => ReadonlyMap<string, CountingWallet>,
): MarketModelsResult {
  const watch = stopwatch();
  const compacted = new Set(connection.prepare(COMPACTED).pluck().all() as number[]);
  const markets = marketPass(connection, now, rows, standing, compacted, watch);
  watch.lap("markets");
  return { markets: markets.count, fillsRead: markets.fillsRead, phases: watch.phases };
}

/** What the writer's side takes: the rows of each model. */
type ModelRows = ReturnType<typeof fullRowEncoder>;

/**
 * Builds every wallet's model, in wallet id order, and returns the whales' and insiders'
 * standings for the market pass. Its own function, so that the price series (about 16 bytes a
 * fill) can be collected as soon as it returns: the market pass does not need them.
 */
function walletPass(
  connection: Connection,
  now: number,
  rows: ModelRows,
  prices: () => PriceLookup,
  hasFrozen: boolean,
  watch: Stopwatch,
) {
  // In wallet id order, which is wallet_bets' key order: the writer appends its rows, never
  // inserts into the middle of a page. The first row comes when the sort is done: it runs
  // before the price series are asked for, which the writer's thread reads meanwhile.
  const byWallet = connection
    .prepare(`${ALL_FILLS} ORDER BY f.wallet_id, f.market_id, f.ts, f.id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  const first = byWallet.next();
  watch.lap("wallet_sort");
  // Everything here reads: contextFor takes a Db for its writer.
  const ctx = contextFor({ writer: connection }, now, prices());
  watch.lap("context");
  // Whales and insiders by wallet id (as a string), for the market models: what standings()
  // in pass.ts reads back from wallet_stats after an incremental run.
  const standing = new Map<string, CountingWallet>();
  // Every stored bet passes here, so the category base rates need no second read of them.
  const categories = new Map<string, CategoryTally>();
  // Wallets' trades in compacted markets (sql/0033), in wallet id order, for their timing.
  const sealed = peekable<[number, Buffer]>(
    hasFrozen
      ? (connection
          .prepare("SELECT wallet_id, trades FROM wallet_sealed_trades ORDER BY wallet_id")
          .raw()
          .iterate() as IterableIterator<[number, Buffer]>)
      : [][Symbol.iterator](),
  );
  const sealedOf = (walletId: number) => {
    while ((sealed.peek()?.[0] ?? Number.POSITIVE_INFINITY) < walletId) sealed.take();
    return sealed.peek()?.[0] === walletId ? unpackSealedTrades(sealed.take()[1]) : [];
  };
  const buildWallet = (
    walletId: number,
    wallet: string,
    fills: TradeFill[],
    frozenBets: WalletBetRow[],
  ) => {
    const model = walletModel(wallet, fills, ctx, frozenBets, sealedOf(walletId));
    // A wallet whose only fills are kept ones of compacted markets has only frozen bets.
    if (model.bets.length === 0) return;
    rows.wallet(walletId, model);
    for (const bet of model.bets) {
      if (bet.resolved !== 1 || bet.category === null) continue;
      let tally = categories.get(bet.category);
      if (tally === undefined) {
        tally = { category: bet.category, resolvedBets: 0, wins: 0 };
        categories.set(bet.category, tally);
      }
      tally.resolvedBets += 1;
      tally.wins += bet.won ?? 0;
    }
    const { stats } = model;
    if (stats.total_volume > WHALE_VOLUME_USD || stats.wallet_type === "insider") {
      standing.set(String(walletId), {
        bayesianWinRate: stats.bayesian_win_rate,
        whale: stats.total_volume > WHALE_VOLUME_USD,
        insider: stats.wallet_type === "insider",
        walletId,
      });
    }
  };
  // Compacted markets' bets, in wallet_bets' key order, merged into the stream in wallet id
  // order, so each wallet's model sees all its bets. Their served columns, as the rebuild
  // reads bets back (sql/0021).
  const frozen = peekable<[number, string, ...unknown[]]>(
    hasFrozen
      ? (connection
          .prepare(
            `SELECT b.wallet_id, w.address, ${BET_FIELDS.map((c) => `b.${c}`).join(", ")}
               FROM wallet_bets b CROSS JOIN wallet_ids w ON w.id = b.wallet_id
              WHERE b.market_id IN (${COMPACTED}) ORDER BY b.wallet_id, b.market_id`,
          )
          .raw()
          .iterate() as IterableIterator<[number, string, ...unknown[]]>)
      : [][Symbol.iterator](),
  );
  const frozenUpTo = (walletId: number) => {
    while ((frozen.peek()?.[0] ?? Number.POSITIVE_INFINITY) < walletId) {
      const [id, address] = frozen.peek()!;
      const bets: WalletBetRow[] = [];
      while (frozen.peek()?.[0] === id) bets.push(betFromValues(frozen.take().slice(2)));
      buildWallet(id, address, [], bets);
    }
    const bets: WalletBetRow[] = [];
    while (frozen.peek()?.[0] === walletId) bets.push(betFromValues(frozen.take().slice(2)));
    return bets;
  };
  // Each wallet's address, once: its fills come together.
  const addressOf = connection
    .prepare<[number], string>("SELECT address FROM wallet_ids WHERE id = ?")
    .pluck();
  let addressFor = -1;
  let address = "";
  const walletAddress = (row: FillRow) => {
    if (row[9] !== addressFor) {
      addressFor = row[9];
      address = addressOf.get(addressFor)!;
    }
    return address;
  };
  const fillsRead = forEachGroup(
    startingWith(first, byWallet),
    (r) => r[9],
    walletAddress,
    (walletId, fills) => buildWallet(walletId, fills[0]!.wallet, fills, frozenUpTo(walletId)),
  );
  frozenUpTo(Number.POSITIVE_INFINITY);
  return { standing, fillsRead, categories };
}
/** Builds every market's model, in market id order, from its fills and the wallets' standings. */
function marketPass(
  connection: Connection,
  now: number,
  rows: ModelRows,
  standingOf: () => ReadonlyMap<string, CountingWallet>,
  compacted: ReadonlySet<number>,
  watch: Stopwatch,
) {
  const hasFrozen = compacted.size > 0;
  let markets = 0;
  // Compacted markets' stats and hours, in market id order with the others.
  type FrozenStats = MarketStatsRow & { market_id: number };
  type FrozenHour = MarketHourRow & { market_id: number };
  const frozenMarkets = peekable<FrozenStats>(
    hasFrozen
      ? connection
          .prepare<[], FrozenStats>(
            `SELECT * FROM market_stats WHERE market_id IN (${COMPACTED}) ORDER BY market_id`,
          )
          .iterate()
      : [][Symbol.iterator](),
  );
  const frozenHours = peekable<FrozenHour>(
    hasFrozen
      ? connection
          .prepare<[], FrozenHour>(
            `SELECT ${SERVED_HOUR_COLUMNS} FROM market_hours
              WHERE market_id IN (${COMPACTED}) ORDER BY market_id, hour`,
          )
          .iterate()
      : [][Symbol.iterator](),
  );
  const frozenMarketsBefore = (marketId: number) => {
    while ((frozenMarkets.peek()?.market_id ?? Number.POSITIVE_INFINITY) < marketId) {
      const { market_id, ...stats } = frozenMarkets.take();
      const hours: MarketHourRow[] = [];
      while ((frozenHours.peek()?.market_id ?? Number.POSITIVE_INFINITY) <= market_id) {
        const { market_id: of, ...hour } = frozenHours.take();
        if (of === market_id) hours.push(hour);
      }
      rows.market(market_id, stats, hours);
      markets += 1;
    }
  };
  // The market pass names each fill's wallet by its id (as a string): a market's model only
  // counts distinct wallets and looks up their standing, so any one name per wallet does, and
  // the id needs no lookup per fill.
  const byMarket = connection
    .prepare(`${ALL_FILLS} ORDER BY f.market_id, f.ts, f.id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  // The first row comes when the sort is done, which may be before the wallet pass is.
  const first = byMarket.next();
  watch.lap("market_sort");
  const standing = standingOf();
  watch.lap("standing");
  const fillsRead = forEachGroup(
    startingWith(first, byMarket),
    (r) => r[1],
    (r) => String(r[9]),
    (marketId, fills) => {
      frozenMarketsBefore(marketId);
      // A compacted market's kept fills (named by signals): its rows are the frozen ones.
      if (compacted.has(marketId)) return;
      const model = marketModel(fills, now, (wallet) => standing.get(wallet));
      rows.market(marketId, model.stats, model.hours);
      markets += 1;
    },
  );
  frozenMarketsBefore(Number.POSITIVE_INFINITY);
  return { count: markets, fillsRead };
}
