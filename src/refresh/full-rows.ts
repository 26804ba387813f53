/**
 * A full rebuild's rows, in two halves that run on different threads (src/refresh/full.ts): the
 * encoder turns each wallet's and market's model into the values of the rows it stores, and the
 * table writer inserts batches of such values into the emptied tables.
 */
import type { Db, Statement } from "../db/open";
import type { MarketHourRow, MarketStatsRow } from "./market-model";
import { hourDates, packPoints, storedHistory } from "./price-history";
import { EMPTY_TIMING, type WalletModel } from "./wallet-model";
import {
  addressPrefix,
  betValues,
  categoryValues,
  FULL_REBUILD_TABLES,
  type FullRebuildTable,
  hourValues,
  marketValues,
  statsValues,
} from "./writer";

/** Receives one row's values, in FULL_REBUILD_TABLES' column order for its table. */
export type RowSink = (table: FullRebuildTable, values: unknown[]) => void;

/**
 * Turns models into rows, as createModelWriter (writer.ts) writes them into empty tables: a
 * wallet's stats, every bet, its categories and its timing when not empty; a market's stats,
 * hours and stored price history (none for a market without hours).
 */
export function fullRowEncoder(emit: RowSink) {
  // Formatting each hour once made a full rebuild's rendering five times faster.
  const dateOf = hourDates();
  return {
    wallet(walletId: number, model: WalletModel): void {
      emit("wallet_stats", statsValues(model.stats));
      for (const bet of model.bets) emit("wallet_bets", betValues(walletId, bet));
      const prefix = addressPrefix(model.stats.address);
      for (const category of model.categories) {
        emit("wallet_category_stats", categoryValues(walletId, prefix, category));
      }
      if (model.timing !== null && model.timing !== EMPTY_TIMING) {
        emit("wallet_timing", [walletId, model.timing]);
      }
    },
    market(marketId: number, stats: MarketStatsRow, hours: readonly MarketHourRow[]): void {
      emit("market_stats", marketValues(marketId, stats));
      for (const hour of hours) emit("market_hours", hourValues(marketId, hour));
      if (hours.length === 0) return;
      const history = storedHistory(hours, hours.length, dateOf);
      emit("market_price_history", [
        marketId,
        history.through_hour,
        history.point_count,
        packPoints(history.points),
      ]);
    },
  };
}

/**
 * Rows per multi-row INSERT. Measured alone, a wallet_bets row (20 values) took 2.84 µs inserted
 * one statement at a time, 2.06 µs ten to a statement and 1.93 µs forty: each statement run has
 * a fixed cost (binding aside) that a batch shares.
 */
const INSERT_BATCH = 32;

/**
 * Inserts rows given as their values one after another (`FULL_REBUILD_TABLES`' columns, row
 * after row), INSERT_BATCH rows to a statement, on the writer. For empty tables: nothing is
 * compared or updated.
 */
export function fullTableWriter(db: Db) {
  const statements = new Map<
    FullRebuildTable,
    { one: Statement; many: Statement; width: number }
  >();
  const statementsOf = (table: FullRebuildTable) => {
    let found = statements.get(table);
    if (found === undefined) {
      const columns = FULL_REBUILD_TABLES[table];
      const tuple = `(${columns.map(() => "?").join(", ")})`;
      const insert = `INSERT INTO ${table} (${columns.join(", ")}) VALUES`;
      found = {
        one: db.writer.prepare(`${insert} ${tuple}`),
        many: db.writer.prepare(`${insert} ${Array(INSERT_BATCH).fill(tuple).join(", ")}`),
        width: columns.length,
      };
      statements.set(table, found);
    }
    return found;
  };
  return (table: FullRebuildTable, values: readonly unknown[]): void => {
    const { one, many, width } = statementsOf(table);
    if (values.length % width !== 0) {
      throw new Error(`${table}: ${values.length} values are not whole rows of ${width}`);
    }
    const batch = width * INSERT_BATCH;
    let at = 0;
    // Spread, not passed as one array: better-sqlite3 binds an array's elements several hundred
    // nanoseconds a row slower (measured on wallet_bets).
    for (; at + batch <= values.length; at += batch) many.run(...values.slice(at, at + batch));
    for (; at < values.length; at += width) one.run(...values.slice(at, at + width));
  };
}
