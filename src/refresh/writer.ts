import type { Db, Statement } from "../db/open";
import { units } from "../ingest/fill-codec";
import type { MarketHourRow, MarketStatsRow } from "./market-model";
import { createPriceHistoryWriter } from "./price-history";
import {
  EMPTY_TIMING,
  type WalletBetRow,
  type WalletCategoryRow,
  type WalletModel,
  type WalletStatsRow,
} from "./wallet-model";

/**
 * The address's first 8 hex digits, after "0x": wallet_category_stats' rankings order ties by
 * it, then by the whole address (sql/0024). The migration and the readers write it in SQL as
 * `substr(address, 3, 8)`.
 */
export function addressPrefix(address: string): string {
  return address.slice(2, 10);
}

/** wallet_stats' columns: its key (the address), then the others. */
const STATS_COLUMNS = [
  "address",
  "platform_name",
  "trade_count",
  "total_bets",
  "resolved_bets",
  "wins",
  "win_rate",
  "bayesian_win_rate",
  "total_volume",
  "ledger_pnl",
  "total_pnl",
  "pnl_source",
  "pnl_as_of",
  "markets_traded",
  "expected_wins",
  "p_value",
  "z_score",
  "counter_consensus_wins",
  "smart_money_score",
  "confidence",
  "breakdown",
  "wallet_type",
  "first_trade_at",
  "last_trade_at",
  "refreshed_at",
  "log10_p_value",
];
const CATEGORY_COLUMNS = [
  "category",
  "address_prefix",
  "bets",
  "resolved_bets",
  "wins",
  "win_rate",
  "global_win_rate",
  "edge",
  "pnl",
  "volume",
  "counter_consensus_wins",
];
const MARKET_COLUMNS = [
  "volume",
  "trade_count",
  "unique_wallets",
  "last_yes_price",
  "last_trade_at",
  "sentiment",
  "yes_ratio",
  "yes_volume",
  "no_volume",
  "total_whale_volume",
  "unique_whales",
  "yes_implied_prob",
  "no_implied_prob",
  "implied_edge",
  "implied_samples",
  "implied_wallets",
  "last_yes_trade",
  "last_no_trade",
];
/** A wallet's wallet_stats values, in STATS_COLUMNS order. */
export const statsValues = byName(STATS_COLUMNS);

const categoryCounts = byName(CATEGORY_COLUMNS.slice(2));
/** A wallet's category record as wallet_category_stats stores it: its key, then CATEGORY_COLUMNS. */
export function categoryValues(walletId: number, prefix: string, row: WalletCategoryRow): Values {
  return [walletId, row.category, prefix, ...categoryCounts(row)];
}

const marketFields = byName(MARKET_COLUMNS);
/** A market's market_stats values: its id, then MARKET_COLUMNS. */
export function marketValues(marketId: number, stats: MarketStatsRow): Values {
  return [marketId, ...marketFields(stats)];
}

/** The statements that replace one wallet's or one market's read-model rows. */
export function createModelWriter(db: Db) {
  const w = db.writer;
  const putStats = rowWriter(db, "wallet_stats");
  const putBet = rowWriter(db, "wallet_bets");
  const putCategory = rowWriter(db, "wallet_category_stats");
  const dropCategory = w.prepare(
    "DELETE FROM wallet_category_stats WHERE wallet_id = ? AND category = ?",
  );
  const putTiming = w.prepare(
    "INSERT OR REPLACE INTO wallet_timing (wallet_id, counts) VALUES (?, ?)",
  );
  const dropTiming = w.prepare("DELETE FROM wallet_timing WHERE wallet_id = ?");
  /**
   * Replaces a wallet's stored timing buckets (timingOf). Empty buckets are not stored
   * (EMPTY_TIMING): readers answer them for a wallet without a row.
   */
  const storeTiming = (walletId: number, timing: string): void => {
    if (timing === EMPTY_TIMING) dropTiming.run(walletId);
    else putTiming.run(walletId, timing);
  };
  const putMarket = rowWriter(db, "market_stats");
  const putHour = rowWriter(db, "market_hours");
  const dropHour = w.prepare("DELETE FROM market_hours WHERE market_id = ? AND hour = ?");
  const history = createPriceHistoryWriter(w);

  return {
    /**
     * Writes the wallet's rows: its stats, the bets given (all of them in a full rebuild, the
     * recomputed ones otherwise), its categories, and its timing buckets when the model has
     * them. `walletId` is the wallet's id in wallet_ids, which keys its bets, categories and
     * timing. `previous` holds the rows stored before (none in a full rebuild), so only what
     * changed is written.
     */
    wallet(
      walletId: number,
      model: WalletModel,
      bets: readonly WalletBetRow[],
      previous?: PreviousWalletRows,
    ): void {
      const address = model.stats.address;
      putStats(statsValues(model.stats), previous?.stats && statsValues(previous.stats));
      for (const bet of bets) {
        const old = previous?.bets.get(bet.market_id);
        putBet(betValues(walletId, bet), old && betValues(walletId, old));
      }
      const kept = new Set<string>();
      const prefix = addressPrefix(address);
      for (const category of model.categories) {
        kept.add(category.category);
        const old = previous?.categories.get(category.category);
        putCategory(
          categoryValues(walletId, prefix, category),
          old && categoryValues(walletId, prefix, old),
        );
      }
      for (const category of previous?.categories.keys() ?? []) {
        if (!kept.has(category)) dropCategory.run(walletId, category);
      }
      // A full rebuild starts from no rows: an empty timing has none to delete.
      if (model.timing !== null && !(model.timing === EMPTY_TIMING && previous === undefined)) {
        storeTiming(walletId, model.timing);
      }
    },

    timing: storeTiming,

    /**
     * Writes the market's stats and its hours from `fromHour` on. `previous` holds the rows
     * stored before (none in a full rebuild, which passes every hour of the market), so only
     * what changed is written, and stored hours from `fromHour` on that the model no longer has
     * are deleted. The market's stored price history is rendered again when its stored part
     * changed (all but the newest hours: price-history.ts).
     */
    market(
      marketId: number,
      stats: MarketStatsRow,
      hours: readonly MarketHourRow[],
      previous?: { stats: MarketStatsRow | undefined; hours: ReadonlyMap<number, MarketHourRow> },
    ): void {
      putMarket(
        marketValues(marketId, stats),
        previous?.stats && marketValues(marketId, previous.stats),
      );
      if (previous === undefined) {
        for (const hour of hours) putHour(hourValues(marketId, hour), undefined);
        history.fromHours(marketId, hours);
        return;
      }
      const kept = new Set<number>();
      for (const hour of hours) {
        kept.add(hour.hour);
        const old = previous.hours.get(hour.hour);
        putHour(hourValues(marketId, hour), old && hourValues(marketId, old));
      }
      for (const hour of previous.hours.keys()) {
        if (!kept.has(hour)) dropHour.run(marketId, hour);
      }
      history.afterWrite(marketId, previous.hours, hours);
    },
  };
}

/** A wallet's rows as stored before this refresh recomputed it. */
export interface PreviousWalletRows {
  stats: WalletStatsRow | undefined;
  bets: ReadonlyMap<number, WalletBetRow>;
  categories: ReadonlyMap<string, WalletCategoryRow>;
}

/**
 * wallet_bets' stored columns after its key (sql/0021). The served columns (BET_FIELDS in
 * pass.ts) are generated from them: side from side_code, each amount from its *_units column
 * (millionths when exact, the fill store's rule), entry_ts and last_ts from their offsets after
 * first_ts.
 */
const STORED_BET_COLUMNS = [
  "category",
  "side_code",
  "entry_price_units",
  "buy_usd_units",
  "volume_units",
  "yes_flow_units",
  "no_flow_units",
  "yes_shares_units",
  "no_shares_units",
  "trade_count",
  "two_sided",
  "first_ts",
  "entry_offset",
  "last_offset",
  "resolved",
  "won",
  "pnl_base",
  "move_24h",
];

/** A bet's values as wallet_bets stores them: its key, then STORED_BET_COLUMNS. */
export function betValues(walletId: number, bet: WalletBetRow): Values {
  return [
    walletId,
    bet.market_id,
    bet.category,
    bet.side === "NO" ? 1 : 0,
    bet.entry_price === null ? null : units(bet.entry_price),
    units(bet.buy_usd),
    units(bet.volume),
    units(bet.yes_flow),
    units(bet.no_flow),
    units(bet.yes_shares),
    units(bet.no_shares),
    bet.trade_count,
    bet.two_sided,
    bet.first_ts,
    bet.entry_ts - bet.first_ts,
    bet.last_ts - bet.first_ts,
    bet.resolved,
    bet.won,
    bet.pnl_base,
    bet.move_24h,
  ];
}

/** market_hours' stored columns after its key (sql/0022): amounts and prices as *_units. */
const STORED_HOUR_COLUMNS = [
  "trade_count",
  "volume_units",
  "whale_volume_units",
  "net_flow_units",
  "open_yes_units",
  "close_yes_units",
];

/** An hour's values as market_hours stores them: its key, then STORED_HOUR_COLUMNS. */
export function hourValues(marketId: number, hour: MarketHourRow): Values {
  return [
    marketId,
    hour.hour,
    hour.trade_count,
    units(hour.volume),
    units(hour.whale_volume),
    units(hour.net_flow),
    hour.open_yes === null ? null : units(hour.open_yes),
    hour.close_yes === null ? null : units(hour.close_yes),
  ];
}

/** A row by column name (the read models' row interfaces, or SELECT * results). */
type Row = object;
const field = (row: Row, column: string) => (row as Record<string, unknown>)[column];

/** A row's values in a table's column order: its key columns, then the others. */
type Values = unknown[];

/**
 * Writes one table's rows, each given as its values (keys, then `columns`, in order): an INSERT
 * for a row that was not there, otherwise an UPDATE of only the columns whose values changed, or
 * nothing. SQLite rewrites an index only when an UPDATE sets one of its columns, and wallet_stats
 * alone has seven: rewriting whole rows made an incremental refresh dirty (and commit) most index
 * pages. Parameters are positional, which better-sqlite3 binds faster than named ones. Each table
 * turns its rows into values with a function written out for it (betValues, hourValues) or by
 * name (byName): a full rebuild writes nine million bets on the large world, and each used to be
 * spread into a keyed object, turned into its stored form, and read back column by column.
 */
function rowWriter(db: Db, table: keyof typeof ROW_LAYOUTS) {
  const w = db.writer;
  const { keys } = ROW_LAYOUTS[table];
  const all = columnsOf(table);
  const insert = w.prepare(
    `INSERT INTO ${table} (${all.join(", ")}) VALUES (${all.map(() => "?").join(", ")})`,
  );
  const where = keys.map((k) => `${k} = ?`).join(" AND ");
  /** UPDATE statements by the set of columns they change. */
  const updates = new Map<string, Statement>();
  return (row: Values, old: Values | undefined): void => {
    if (old === undefined) {
      // Spread, not passed as one array: better-sqlite3 binds an array's elements several
      // hundred nanoseconds a row slower (20 values, measured on wallet_bets).
      insert.run(...row);
      return;
    }
    const changed: number[] = [];
    for (let i = keys.length; i < all.length; i += 1) if (row[i] !== old[i]) changed.push(i);
    if (changed.length === 0) return;
    const signature = changed.join(",");
    let update = updates.get(signature);
    if (update === undefined) {
      update = w.prepare(
        `UPDATE ${table} SET ${changed.map((i) => `${all[i]} = ?`).join(", ")} WHERE ${where}`,
      );
      updates.set(signature, update);
    }
    update.run(...changed.map((i) => row[i]), ...row.slice(0, keys.length));
  };
}

/** A row's values in the order of `columns`, read by name. */
function byName(columns: readonly string[]): (row: Row) => Values {
  return (row) => columns.map((c) => field(row, c));
}

/**
 * The tables rowWriter writes: each row's key columns, then the others, in the order of the
 * values the functions above make for it (statsValues, betValues, categoryValues, marketValues,
 * hourValues).
 */
const ROW_LAYOUTS = {
  wallet_stats: { keys: ["address"], columns: STATS_COLUMNS.slice(1) },
  wallet_bets: { keys: ["wallet_id", "market_id"], columns: STORED_BET_COLUMNS },
  wallet_category_stats: { keys: ["wallet_id", "category"], columns: CATEGORY_COLUMNS.slice(1) },
  market_stats: { keys: ["market_id"], columns: MARKET_COLUMNS },
  market_hours: { keys: ["market_id", "hour"], columns: STORED_HOUR_COLUMNS },
};

/** A table's columns in the order of a row's values: its keys, then the others. */
const columnsOf = (table: keyof typeof ROW_LAYOUTS): string[] => [
  ...ROW_LAYOUTS[table].keys,
  ...ROW_LAYOUTS[table].columns,
];

/**
 * The tables a full rebuild writes (src/refresh/full-rows.ts), each with its columns in the order
 * of the values the functions above make for it.
 */
export const FULL_REBUILD_TABLES = {
  wallet_stats: columnsOf("wallet_stats"),
  wallet_bets: columnsOf("wallet_bets"),
  wallet_category_stats: columnsOf("wallet_category_stats"),
  wallet_timing: ["wallet_id", "counts"],
  market_stats: columnsOf("market_stats"),
  market_hours: columnsOf("market_hours"),
  market_price_history: ["market_id", "through_hour", "point_count", "points"],
};

export type FullRebuildTable = keyof typeof FULL_REBUILD_TABLES;
