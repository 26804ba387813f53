/**
 * A full rebuild's rows, in two halves that run on different threads (src/refresh/full.ts): the
 * encoder turns each wallet's and market's model into the values of the rows it stores, which
 * cross packed into typed arrays (RowPack), and the table writer inserts them into the emptied
 * tables.
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
 * Rows of one table on their way to the writer's thread, their values packed into typed arrays,
 * which `postMessage` moves without a copy (their buffers in its transfer list). Sent as plain
 * arrays, which postMessage copies value by value, they cost the large world's rebuild about
 * 13.7 s of the worker's time (packing and posting) and 8.8 s of the writer's (taking them in).
 */
export interface RowPack {
  /** Each value's number: the value itself, an integer's value, or its index in `texts`. */
  numbers: Float64Array<ArrayBuffer>;
  /** Each value's kind: NUMBER, INTEGER (bound as a BigInt), NULL or TEXT. */
  kinds: Uint8Array<ArrayBuffer>;
  /** The pack's strings and byte arrays (a price history's points). */
  texts: (string | Uint8Array)[];
  /** Values held. */
  length: number;
}

const NUMBER = 0;
const INTEGER = 1;
const NULL = 2;
const TEXT = 3;
/** The largest integer a double holds exactly, as a BigInt. */
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function newRowPack(capacity: number): RowPack {
  return {
    numbers: new Float64Array(capacity),
    kinds: new Uint8Array(capacity),
    texts: [],
    length: 0,
  };
}

/** Appends a row's values to `pack`, which must have room for them. */
export function packValues(pack: RowPack, values: readonly unknown[]): void {
  for (const value of values) {
    const at = pack.length;
    if (typeof value === "number") {
      pack.numbers[at] = value;
      pack.kinds[at] = NUMBER;
    } else if (typeof value === "bigint") {
      // A stored amount in millionths (units in src/ingest/fill-codec.ts): below 2^53 always.
      if (value > MAX_SAFE || value < -MAX_SAFE) {
        throw new Error(`cannot pack the integer ${value}: beyond 2^53`);
      }
      pack.numbers[at] = Number(value);
      pack.kinds[at] = INTEGER;
    } else if (value === null) {
      pack.kinds[at] = NULL;
    } else if (typeof value === "string" || value instanceof Uint8Array) {
      pack.numbers[at] = pack.texts.length;
      pack.texts.push(value);
      pack.kinds[at] = TEXT;
    } else {
      throw new Error(`cannot pack a value of type ${typeof value}`);
    }
    pack.length = at + 1;
  }
}

/** The value at `at` in `pack`, as packValues was given it. */
export function packedValue(pack: RowPack, at: number): unknown {
  switch (pack.kinds[at]) {
    case NUMBER:
      return pack.numbers[at];
    case INTEGER:
      return BigInt(pack.numbers[at]!);
    case NULL:
      return null;
    default:
      return pack.texts[pack.numbers[at]!];
  }
}

/**
 * Inserts packed rows (`FULL_REBUILD_TABLES`' columns, row after row), INSERT_BATCH rows to a
 * statement, on the writer. For empty tables: nothing is compared or updated.
 */
export function fullTableWriter(db: Db) {
  const statements = new Map<
    FullRebuildTable,
    { one: Statement; many: Statement; row: unknown[]; rows: unknown[] }
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
        row: new Array(columns.length),
        rows: new Array(columns.length * INSERT_BATCH),
      };
      statements.set(table, found);
    }
    return found;
  };
  return (table: FullRebuildTable, pack: RowPack): void => {
    const { one, many, row, rows } = statementsOf(table);
    if (pack.length % row.length !== 0) {
      throw new Error(`${table}: ${pack.length} values are not whole rows of ${row.length}`);
    }
    let at = 0;
    // Spread, not passed as one array: better-sqlite3 binds an array's elements several hundred
    // nanoseconds a row slower (measured on wallet_bets).
    for (; at + rows.length <= pack.length; at += rows.length) {
      for (let i = 0; i < rows.length; i += 1) rows[i] = packedValue(pack, at + i);
      many.run(...rows);
    }
    for (; at < pack.length; at += row.length) {
      for (let i = 0; i < row.length; i += 1) row[i] = packedValue(pack, at + i);
      one.run(...row);
    }
  };
}
