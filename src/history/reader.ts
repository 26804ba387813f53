import { availableParallelism } from "node:os";
import { join } from "node:path";
import { ApiError } from "../errors";
import type { Log } from "../log";
import {
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBValue,
  type Engine,
  openEngine,
  sqlString,
} from "./engine";
import { holdsWalletIds, readParquet, TX_BLOCK_ROWS, type WalletIds } from "./store";
import type { TxFile } from "./tx-keys";

/**
 * Fills read back from the history's Parquet files for the trade pages and the trade by hash
 * (src/read/trades.ts decides which files may hold matching fills, from the manifest, in the same
 * SQLite snapshot as its page of recent fills). One DuckDB instance per process, opened on the
 * first read that needs a file, with a connection per query (duckdb-node-neo#235).
 */

/** A sealed fill, decoded as the trades view decodes a stored one. */
export interface SealedFill {
  id: number;
  tx_hash: string;
  log_index: number;
  wallet: string;
  market_id: number;
  outcome: "YES" | "NO";
  side: "BUY" | "SELL";
  price: number;
  size: number;
  usd_value: number;
  ts: number;
}

export interface SealedFilter {
  wallet?: string;
  marketId?: number;
  side?: "BUY" | "SELL";
  minUsd?: number;
  /** Inclusive epoch-ms bounds. */
  from?: number;
  to?: number;
  /** Keyset position: only fills before (ts, id), newest first. */
  before?: [ts: number, id: number];
  /** Keyset floor: only fills after (ts, id) (a page's recent fills already reach down to it). */
  after?: [ts: number, id: number];
}

export interface HistoryReader {
  /**
   * Up to `limit` fills of `files` matching the filter, newest first by (ts, id). `continuing`:
   * the page already read from the history once, so this query goes before those of pages not
   * yet begun (inTurn).
   */
  page(
    files: readonly string[],
    filter: SealedFilter,
    limit: number,
    options?: { continuing?: boolean },
  ): Promise<SealedFill[]>;
  /**
   * The fill with this hash and the lowest log index, among `files` (in the blocks each names,
   * src/history/tx-keys.ts).
   */
  byTxHash(files: readonly TxFile[], txHash: string): Promise<SealedFill | undefined>;
  close(): void;
}

/**
 * The columns read from a file: its wallet as the address (a file sealed before WALLET_ID_FILE)
 * or the id, whichever it holds, the other null.
 */
const select = (ids: boolean) =>
  `SELECT id, '0x' || lower(hex(tx_hash)) AS tx_hash, log_index,
     ${ids ? "NULL::VARCHAR AS wallet, wallet_id" : "wallet, NULL::BIGINT AS wallet_id"}, market_id,
     outcome, side, price, size, usd_value, ts`;

/**
 * What a caller is told when a listed file cannot be read (deleted, truncated, damaged): the
 * answers that need it fail with this, everything else is served as usual, and `smartmoney
 * status` names the file.
 */
export const HISTORY_UNREADABLE =
  "older fills cannot be read right now: a file of the fill history is missing or damaged (smartmoney status names it); quote the request id when reporting it";

/** Idle DuckDB connections kept for the next query: about the requests that wait on the history. */
const IDLE_CONNECTIONS = 4;

/**
 * Statements each connection keeps prepared, by their text. Parsing and planning a query took
 * about a sixth of a history page's CPU time (extract, prepare and destroy in a profile of
 * `npm run bench:history-pages -- --cpu-prof`); a page's text differs only by its list of files
 * and its filter's shape, and its values are bound.
 */
const PREPARED_PER_CONNECTION = 32;

/** A connection and the statements prepared on it, oldest first (a Map keeps insertion order). */
interface Session {
  connection: DuckDBConnection;
  prepared: Map<string, DuckDBPreparedStatement>;
}

async function preparedOn(session: Session, sql: string): Promise<DuckDBPreparedStatement> {
  const kept = session.prepared.get(sql);
  if (kept !== undefined) {
    // Used again: the newest, last to be dropped.
    session.prepared.delete(sql);
    session.prepared.set(sql, kept);
    return kept;
  }
  const statement = await session.connection.prepare(sql);
  session.prepared.set(sql, statement);
  if (session.prepared.size > PREPARED_PER_CONNECTION) {
    const [oldest, dropped] = session.prepared.entries().next().value!;
    session.prepared.delete(oldest);
    dropped.destroySync();
  }
  return statement;
}

function closeSession(session: Session): void {
  for (const statement of session.prepared.values()) statement.destroySync();
  session.prepared.clear();
  session.connection.closeSync();
}

/**
 * Runs tasks at most `slots` at a time, the others in the order they came, but for `first` ones,
 * which go before every task waiting. History queries run this way, one per core: each takes a
 * thread of libuv's pool (four), and more at once than there are cores only share them, so
 * every page waits as long as all of them together, and the event loop answering the other
 * requests gets less of a core. A page's second query goes first: work begun is finished before
 * new work starts, and a page that needs two reads does not wait in the queue twice. A read
 * waiting on the disk holds its turn too: the history's files are local, and their pages stay in
 * the OS cache once read.
 */
export function inTurn(slots: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>, first = false): Promise<T> => {
    if (running >= slots) {
      await new Promise<void>((resolve) =>
        first ? waiting.unshift(resolve) : waiting.push(resolve),
      );
    } else running += 1;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

export function createHistoryReader(options: {
  dir: string;
  memoryMb: number;
  /** The addresses of the wallet ids a file holds (WALLET_ID_FILE). */
  wallets: WalletIds;
  log?: Log;
  /** History queries at once (inTurn); default one per core the process may use. */
  concurrency?: number;
}): HistoryReader {
  let engine: Promise<Engine> | undefined;
  // A connection runs one query at a time: each query takes one, and puts it back after.
  const idle: Session[] = [];
  const turn = inTurn(Math.max(1, options.concurrency ?? availableParallelism()));

  function query(sql: string, values: DuckDBValue[], files: readonly string[], first = false) {
    return turn(() => queryNow(sql, values, files), first);
  }

  async function queryNow(sql: string, values: DuckDBValue[], files: readonly string[]) {
    engine ??= openEngine({ memoryMb: options.memoryMb, threads: 1, pointReads: true });
    const opened = engine;
    const session = idle.pop() ?? {
      connection: await (await opened).connect(),
      prepared: new Map<string, DuckDBPreparedStatement>(),
    };
    let healthy = false;
    try {
      const statement = await preparedOn(session, sql);
      statement.clearBindings();
      if (values.length > 0) statement.bind(values);
      const result = await statement.runAndReadAll();
      healthy = true;
      // A wallet's page holds one wallet: each id is looked up once per query.
      const addresses = new Map<number, string | undefined>();
      const addressOf = (id: number) => {
        if (!addresses.has(id)) addresses.set(id, options.wallets.addressOf(id));
        return addresses.get(id);
      };
      return result.getRowObjectsJS().map((row) => toSealedFill(row, addressOf));
    } catch (error) {
      options.log?.error(
        { err: error, dir: options.dir, files },
        "the fill history cannot be read: a listed file is missing or damaged (smartmoney status)",
      );
      throw new ApiError("internal_error", HISTORY_UNREADABLE);
    } finally {
      if (healthy && engine === opened && idle.length < IDLE_CONNECTIONS) idle.push(session);
      else closeSession(session);
    }
  }

  /**
   * `files` as one relation, each read by its layout: those of each layout in one read_parquet,
   * under the conditions `where` gives for it (null: none of its rows can match).
   */
  const relation = (files: readonly string[], where: (ids: boolean) => string[] | null) =>
    [false, true]
      .flatMap((ids) => {
        const those = files.filter((f) => holdsWalletIds(f) === ids);
        const conditions = those.length > 0 ? where(ids) : null;
        if (conditions === null) return [];
        return [
          `${select(ids)} FROM ${readParquet(options.dir, those)}
            ${conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : ""}`,
        ];
      })
      .join(" UNION ALL ");

  return {
    async page(files, filter, limit, pageOptions = {}) {
      if (files.length === 0) return [];
      const where: string[] = [];
      const values: DuckDBValue[] = [];
      const bind = (value: DuckDBValue) => {
        values.push(value);
        return `$${values.length}`;
      };
      if (filter.marketId !== undefined) where.push(`market_id = ${bind(filter.marketId)}`);
      if (filter.side !== undefined) where.push(`side = ${bind(filter.side)}`);
      if (filter.minUsd !== undefined) where.push(`usd_value >= ${bind(filter.minUsd)}`);
      if (filter.from !== undefined) where.push(`ts >= ${bind(filter.from)}`);
      if (filter.to !== undefined) where.push(`ts <= ${bind(filter.to)}`);
      if (filter.before !== undefined) {
        const [ts, id] = filter.before;
        where.push(`(ts < ${bind(ts)} OR (ts = ${bind(ts)} AND id < ${bind(id)}))`);
      }
      if (filter.after !== undefined) {
        const [ts, id] = filter.after;
        where.push(`(ts > ${bind(ts)} OR (ts = ${bind(ts)} AND id > ${bind(id)}))`);
      }
      const { wallet } = filter;
      const walletId = wallet === undefined ? undefined : options.wallets.idOf(wallet);
      const sql = relation(files, (ids) => {
        if (wallet === undefined) return where;
        if (!ids) return [...where, `wallet = ${bind(wallet)}`];
        // A wallet without an id has no fill anywhere.
        return walletId === undefined ? null : [...where, `wallet_id = ${bind(walletId)}`];
      });
      if (sql === "") return [];
      return query(
        `${sql} ORDER BY ts DESC, id DESC LIMIT ${Math.max(0, Math.floor(limit))}`,
        values,
        files,
        pageOptions.continuing,
      );
    },

    async byTxHash(files, txHash) {
      if (files.length === 0) return undefined;
      const hashIs = "tx_hash = unhex($1)";
      // Files whose blocks are not known, each layout in one read, as a page reads its files.
      const whole = relation(
        files.flatMap((f) => (f.blocks === null ? [f.file] : [])),
        () => [hashIs],
      );
      // The others, a read for each run of a file's consecutive blocks: DuckDB skips the row
      // groups outside one range of row numbers, but reads them all for several ranges OR'd.
      const placed = files.flatMap(({ file, blocks }) =>
        runsOf(blocks ?? []).map(
          ([first, last]) =>
            `${select(holdsWalletIds(file))}
               FROM read_parquet(${sqlString(join(options.dir, file))}, file_row_number = true)
              WHERE ${hashIs} AND file_row_number BETWEEN ${first * TX_BLOCK_ROWS}
                AND ${(last + 1) * TX_BLOCK_ROWS - 1}`,
        ),
      );
      const [fill] = await query(
        `${[whole, ...placed].filter((part) => part !== "").join(" UNION ALL ")}
          ORDER BY log_index LIMIT 1`,
        [txHash.slice(2)],
        files.map((f) => f.file),
      );
      return fill;
    },

    close() {
      for (const session of idle.splice(0)) closeSession(session);
      void engine?.then((e) => e.close());
      engine = undefined;
    },
  };
}

/** Sorted distinct block numbers as runs of consecutive ones: [first, last] each. */
function runsOf(blocks: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const block of [...new Set(blocks)].sort((a, b) => a - b)) {
    const run = runs[runs.length - 1];
    if (run !== undefined && run[1] + 1 === block) run[1] = block;
    else runs.push([block, block]);
  }
  return runs;
}

function toSealedFill(
  row: Record<string, unknown>,
  addressOf: (walletId: number) => string | undefined,
): SealedFill {
  const n = (value: unknown) => (typeof value === "bigint" ? Number(value) : (value as number));
  let wallet = row.wallet as string | null;
  if (wallet === null) {
    wallet = addressOf(n(row.wallet_id)) ?? null;
    if (wallet === null) throw new Error(`sealed wallet id ${row.wallet_id} is not in wallet_ids`);
  }
  return {
    id: n(row.id),
    tx_hash: row.tx_hash as string,
    log_index: n(row.log_index),
    wallet,
    market_id: n(row.market_id),
    outcome: row.outcome as "YES" | "NO",
    side: row.side as "BUY" | "SELL",
    price: row.price as number,
    size: row.size as number,
    usd_value: row.usd_value as number,
    ts: n(row.ts),
  };
}
