import { randomBytes } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import type { Connection } from "../db/open";
import { decodedSql } from "../ingest/fill-codec";
import { type DuckDBConnection, sqlString, withEngine } from "./engine";
import type { TxPlaces } from "./tx-keys";

/**
 * The fill history (sql/0031; docs/architecture.md, "Where data lives"): immutable Parquet files
 * (zstd) in `<db>-history/`, beside the database, listed in SQLite's `history_partitions`. A file
 * is part of the history exactly when its manifest row is committed; the row commits in the same
 * transaction that deletes the file's fills from `fills`, so a fill is always in exactly one of
 * the two places. Any process reads the files through its own in-process DuckDB.
 */

/** The history folder of the database at `dbPath`. */
export function historyDir(dbPath: string): string {
  return `${dbPath}-history`;
}

/**
 * A new file's name: its time and random bytes, unique to the seal that writes it, so two seals
 * (the jobs process's and one run by hand) never write, or remove, each other's file. It ends in
 * WALLET_ID_FILE: the file holds the wallet's id (PARTITION_COLUMNS).
 */
export function newPartitionFile(
  now: number,
  kind: "fills" | "wallets" | "times" = "fills",
): string {
  return `${kind}-${now}-${randomBytes(6).toString("hex")}${WALLET_ID_FILE}`;
}

/**
 * How the name of a file that holds each fill's wallet as its id in wallet_ids ends. The address
 * as text took 19.5 bytes a fill in market order on the large world, the id takes 2.7 (and 0.5
 * in wallet order, against 3.4). A file named otherwise was sealed before: it holds the address,
 * and is read as it is until a compaction writes it again (src/refresh/retention.ts). The name
 * is the file's for good, so its layout is known without opening it.
 */
export const WALLET_ID_FILE = ".v2.parquet";

/** True when `file` holds wallet ids, false when addresses (sealed before WALLET_ID_FILE). */
export function holdsWalletIds(file: string): boolean {
  return file.endsWith(WALLET_ID_FILE);
}

/** An address's id in wallet_ids and back: what reads a file of wallet ids with. */
export interface WalletIds {
  idOf(address: string): number | undefined;
  addressOf(id: number): string | undefined;
}

/** WalletIds from the database's wallet_ids (append-only: an id once given is never reused). */
export function walletIds(db: Connection): WalletIds {
  const id = db.prepare<[string], number>("SELECT id FROM wallet_ids WHERE address = ?").pluck();
  const address = db
    .prepare<[number], string>("SELECT address FROM wallet_ids WHERE id = ?")
    .pluck();
  return { idOf: (a) => id.get(a), addressOf: (i) => address.get(i) };
}

/**
 * How old an unlisted file must be before a seal removes it: far longer than any seal takes
 * from its file's rename to its commit, so a file another seal has just written is left alone.
 */
export const UNLISTED_FILE_MIN_AGE_MS = 60 * 60_000;

export interface Partition {
  id: number;
  file: string;
  fills: number;
  bytes: number;
  min_ts: number;
  max_ts: number;
  /** The file's copy in wallet order (sql/0034), or null while it has none. */
  wallet_file: string | null;
  wallet_bytes: number | null;
  /** The file's copy in time order (sql/0037), or null while it has none. */
  time_file: string | null;
  time_bytes: number | null;
}

export function partitions(db: Connection): Partition[] {
  return db
    .prepare(
      `SELECT id, file, fills, bytes, min_ts, max_ts, wallet_file, wallet_bytes, time_file,
              time_bytes
         FROM history_partitions ORDER BY id`,
    )
    .all() as Partition[];
}

/** Every file the manifest lists, each sealed file and its copies, with its size. */
export function listedFiles(db: Connection): { file: string; bytes: number }[] {
  return partitions(db).flatMap((p) => {
    const files = [{ file: p.file, bytes: p.bytes }];
    if (p.wallet_file !== null) files.push({ file: p.wallet_file, bytes: p.wallet_bytes ?? 0 });
    if (p.time_file !== null) files.push({ file: p.time_file, bytes: p.time_bytes ?? 0 });
    return files;
  });
}

export interface HistoryTotals {
  partitions: number;
  fills: number;
  bytes: number;
}

/** From the manifest alone: no file is opened. The bytes count the copies. */
export function historyTotals(db: Connection): HistoryTotals {
  return db
    .prepare(
      `SELECT count(*) AS partitions, coalesce(sum(fills), 0) AS fills,
              coalesce(sum(bytes + coalesce(wallet_bytes, 0) + coalesce(time_bytes, 0)), 0) AS bytes
         FROM history_partitions`,
    )
    .get() as HistoryTotals;
}

/**
 * The columns of a sealed file, in order: the fill as the API serves it (the trades view's
 * decoded values), keyed by its id in `fills`, so pages in (ts, id) order run on across the two
 * places. `tx_hash` is the 32 bytes; `wallet_id` the wallet's id in wallet_ids (its address in
 * a file sealed before WALLET_ID_FILE, column `wallet`); `outcome` and `side` are text
 * (Parquet's dictionary pages make them a bit or two a fill).
 */
export const PARTITION_COLUMNS = [
  ["id", "BIGINT"],
  ["tx_hash", "BLOB"],
  ["log_index", "BIGINT"],
  ["wallet_id", "BIGINT"],
  ["market_id", "BIGINT"],
  ["outcome", "VARCHAR"],
  ["side", "VARCHAR"],
  ["price", "DOUBLE"],
  ["size", "DOUBLE"],
  ["usd_value", "DOUBLE"],
  ["ts", "BIGINT"],
] as const;

/** Rows as `fills` rows in PARTITION_COLUMNS' order (the SELECT list for `fills f`). */
export const PARTITION_SELECT = `f.id, f.tx_hash, f.log_index, f.wallet_id,
  f.market_id, CASE WHEN f.kind & 1 THEN 'NO' ELSE 'YES' END,
  CASE WHEN f.kind & 2 THEN 'SELL' ELSE 'BUY' END,
  ${decodedSql("f.price")}, ${decodedSql("f.size")}, ${decodedSql("f.usd_value")}, f.ts`;

/**
 * Rows per row group of a sealed file, in market order: a market's page reads the row groups
 * that hold the market (DuckDB skips the others by their min and max market id), so the smaller
 * they are the less it reads. Measured on a large world's file: a market's page took 3.8 ms of
 * CPU at 16,384 rows against 12.8 ms at 122,880, for 67.7 bytes a fill against 66.2.
 */
export const PARTITION_ROW_GROUP = 16_384;
/**
 * Rows of a block of a file in market order, by row number, as its transaction keys place them
 * (src/history/tx-keys.ts): a row group (PARTITION_ROW_GROUP), so a lookup by hash reads one row
 * group for each block its key is in (DuckDB skips the others by row number). Stored in every
 * listed key's block (sql/0038): changed, every file's keys would have to be listed again.
 */
export const TX_BLOCK_ROWS = 16_384;
/** Rows per row group of a file's copy in wallet order: a wallet's page reads one or two. */
export const WALLET_ROW_GROUP = 16_384;
/**
 * Rows per row group of a file's copy in time order: a page of the trades window reads the row
 * group or two around its time in each file (DuckDB skips the others by their min and max ts).
 */
export const TIME_ROW_GROUP = 16_384;

/** A file written, synced and renamed into place: whole, and not yet listed. */
export interface WrittenFile {
  file: string;
  path: string;
  bytes: number;
}

export interface WrittenPartition {
  file: string;
  path: string;
  fills: number;
  bytes: number;
  /** The same rows in wallet order (WALLET_ROW_GROUP): listed with the file. */
  wallet: WrittenFile;
  /** The same rows in time order (TIME_ROW_GROUP): listed with the file. */
  time: WrittenFile;
  minTs: number;
  maxTs: number;
  /** Fills written, by market id. */
  perMarket: Map<number, number>;
  /** The file's transaction keys and where they sit (src/history/tx-keys.ts). */
  txPlaces: TxPlaces;
}

/** The names of a new file of the history and of its copies in wallet and time order. */
export interface PartitionNames {
  file: string;
  wallet: string;
  time: string;
}

/** The three names, the file's first. */
export const partitionFileNames = (names: PartitionNames): string[] => [
  names.file,
  names.wallet,
  names.time,
];

/** Names for a file written at `now` and its copies, chosen before it is written. */
export function newPartitionNames(now: number): PartitionNames {
  return {
    file: newPartitionFile(now),
    wallet: newPartitionFile(now, "wallets"),
    time: newPartitionFile(now, "times"),
  };
}

/**
 * Writes `rows()` (PARTITION_COLUMNS' order, sorted as they should be stored) to a new file of
 * the history, and the same rows in wallet order and in time order to two more: each beside its
 * name first, synced, then renamed into place and the folder synced, so a file under its name is
 * whole. Under `names` when given (reserved before, src/ingest/past-markets.ts), else new ones.
 * The rows are read in one go once DuckDB is ready, with no await in between, so a statement
 * iterating the database's connection is never left open while other work uses it. Returns null
 * for no rows (no file is written).
 */
export async function writePartition(
  dir: string,
  rows: () => Iterable<unknown[]>,
  options: { memoryMb: number; now: number; names?: PartitionNames },
): Promise<WrittenPartition | null> {
  const names = options.names ?? newPartitionNames(options.now);
  const file = names.file;
  const path = join(dir, file);
  return withEngine({ memoryMb: options.memoryMb }, async (duck) => {
    await duck.run(
      `CREATE TABLE stage (${PARTITION_COLUMNS.map(([n, t]) => `${n} ${t}`).join(", ")})`,
    );
    const appender = await duck.createAppender("stage");
    const perMarket = new Map<number, number>();
    let fills = 0;
    let minTs = Number.POSITIVE_INFINITY;
    let maxTs = Number.NEGATIVE_INFINITY;
    for (const row of rows()) {
      const [fillId, hash, logIndex, wallet, marketId, outcome, side, price, size, usd, ts] =
        row as [
          number,
          Uint8Array,
          number,
          number,
          number,
          string,
          string,
          number,
          number,
          number,
          number,
        ];
      appender.appendBigInt(BigInt(fillId));
      appender.appendBlob(hash);
      appender.appendBigInt(BigInt(logIndex));
      appender.appendBigInt(BigInt(wallet));
      appender.appendBigInt(BigInt(marketId));
      appender.appendVarchar(outcome);
      appender.appendVarchar(side);
      appender.appendDouble(price);
      appender.appendDouble(size);
      appender.appendDouble(usd);
      appender.appendBigInt(BigInt(ts));
      appender.endRow();
      fills++;
      perMarket.set(marketId, (perMarket.get(marketId) ?? 0) + 1);
      if (ts < minTs) minTs = ts;
      if (ts > maxTs) maxTs = ts;
    }
    appender.closeSync();
    if (fills === 0) return null;
    try {
      const written = await copyTo(duck, "stage", dir, file, PARTITION_ROW_GROUP);
      const txPlaces = await txPlacesOf(duck, written.path);
      const copies = await writeCopies(duck, "stage", dir, names);
      return { ...written, fills, ...copies, minTs, maxTs, perMarket, txPlaces };
    } catch (error) {
      rmSync(path, { force: true });
      throw error;
    }
  });
}

/**
 * The transaction keys of a written file in market order, each with the block of rows that holds
 * it (src/history/tx-keys.ts): read back from the file, so the blocks are its rows' own numbers.
 * Read whole, then copied into typed arrays column by column: as JavaScript rows, a file of 1M
 * fills took about 350 MB more.
 */
async function txPlacesOf(duck: DuckDBConnection, path: string): Promise<TxPlaces> {
  const result = await duck.runAndReadAll(
    `SELECT DISTINCT ('0x' || left(hex(tx_hash), 8))::UBIGINT::UINTEGER,
            (file_row_number // ${TX_BLOCK_ROWS})::UINTEGER
       FROM read_parquet(${sqlString(path)}, file_row_number = true)`,
  );
  const [keys, blocks] = result.getColumns() as [number[], number[]];
  return { keys: Uint32Array.from(keys), blocks: Uint32Array.from(blocks) };
}

/** The transaction keys of a listed file of the history, with their blocks (txPlacesOf). */
export function readTxPlaces(
  dir: string,
  file: string,
  options: { memoryMb: number },
): Promise<TxPlaces> {
  return withEngine(options, (duck) => txPlacesOf(duck, join(dir, file)));
}

/**
 * COPY `source` to `<dir>/<file>` as a zstd Parquet file: beside its name first, synced, then
 * renamed into place and the folder synced.
 */
async function copyTo(
  duck: DuckDBConnection,
  source: string,
  dir: string,
  file: string,
  rowGroup: number,
): Promise<WrittenFile> {
  const path = join(dir, file);
  const partial = `${path}.partial`;
  try {
    await duck.run(
      `COPY ${source} TO ${sqlString(partial)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroup})`,
    );
    syncFile(partial);
    renameSync(partial, path);
    syncFile(dir);
  } finally {
    rmSync(partial, { force: true });
  }
  return { file, path, bytes: statSync(path).size };
}

/**
 * The rows of `relation` in wallet order and in time order, to two new files of the history (not
 * listed); if the second fails, the first is removed.
 */
async function writeCopies(
  duck: DuckDBConnection,
  relation: string,
  dir: string,
  names: Pick<PartitionNames, "wallet" | "time">,
): Promise<{ wallet: WrittenFile; time: WrittenFile }> {
  // Named apart, so `fills-*.parquet` still names each fill once (docs/scaling.md).
  const wallet = await copyTo(
    duck,
    `(SELECT * FROM ${relation} ORDER BY wallet_id, ts, id)`,
    dir,
    names.wallet,
    WALLET_ROW_GROUP,
  );
  try {
    const time = await copyTo(
      duck,
      `(SELECT * FROM ${relation} ORDER BY ts, id)`,
      dir,
      names.time,
      TIME_ROW_GROUP,
    );
    return { wallet, time };
  } catch (error) {
    rmSync(wallet.path, { force: true });
    throw error;
  }
}

/**
 * Listed files merged into one (or one file sealed before sql/0034 or WALLET_ID_FILE written
 * again), written as a seal writes a file, in market order, with its copies in wallet and time
 * order; a file of addresses gets its wallets' ids from `wallets`. None is listed yet: the caller
 * lists them in place of the old files (src/refresh/retention.ts).
 */
export async function mergePartitions(
  dir: string,
  files: readonly string[],
  options: { memoryMb: number; now: number; wallets: Connection },
): Promise<{ file: WrittenFile; wallet: WrittenFile; time: WrittenFile; txPlaces: TxPlaces }> {
  return withEngine({ memoryMb: options.memoryMb }, async (duck) => {
    await duck.run(
      `CREATE TEMP VIEW merged AS ${await withWalletIds(duck, dir, files, options.wallets)}`,
    );
    const names = newPartitionNames(options.now);
    const file = await copyTo(
      duck,
      "(SELECT * FROM merged ORDER BY market_id, ts, id)",
      dir,
      names.file,
      PARTITION_ROW_GROUP,
    );
    try {
      const txPlaces = await txPlacesOf(duck, file.path);
      return { file, ...(await writeCopies(duck, "merged", dir, names)), txPlaces };
    } catch (error) {
      rmSync(file.path, { force: true });
      throw error;
    }
  });
}

/**
 * The rows of a listed file of wallet ids (WALLET_ID_FILE) in time order, to a new file of the
 * history, not listed: the copy in time order of a file sealed before sql/0037.
 */
export async function writeTimeCopy(
  dir: string,
  file: string,
  options: { memoryMb: number; now: number },
): Promise<WrittenFile> {
  return withEngine({ memoryMb: options.memoryMb }, async (duck) =>
    copyTo(
      duck,
      `(SELECT * FROM ${readParquet(dir, [file])} ORDER BY ts, id)`,
      dir,
      newPartitionFile(options.now, "times"),
      TIME_ROW_GROUP,
    ),
  );
}

/** `read_parquet` of `files` in `dir`. */
export function readParquet(dir: string, files: readonly string[]): string {
  return `read_parquet([${files.map((f) => sqlString(join(dir, f))).join(", ")}])`;
}

/**
 * The rows of `files` in PARTITION_COLUMNS (a SELECT): a file of addresses joined to its
 * wallets' ids, staged from `db` (every address there: each was a fill's in `fills`).
 */
async function withWalletIds(
  duck: DuckDBConnection,
  dir: string,
  files: readonly string[],
  db: Connection,
): Promise<string> {
  const columns = PARTITION_COLUMNS.map(([name]) => name);
  const parts: string[] = [];
  const ids = files.filter(holdsWalletIds);
  if (ids.length > 0) parts.push(`SELECT ${columns.join(", ")} FROM ${readParquet(dir, ids)}`);
  const addresses = files.filter((f) => !holdsWalletIds(f));
  if (addresses.length > 0) {
    const relation = readParquet(dir, addresses);
    await duck.run("CREATE TEMP TABLE wallet_ids_of (address VARCHAR, id BIGINT)");
    const appender = await duck.createAppender("wallet_ids_of");
    const idOf = walletIds(db).idOf;
    const distinct = await duck.runAndReadAll(`SELECT DISTINCT wallet FROM ${relation}`);
    for (const [address] of distinct.getRowsJS() as [string][]) {
      const id = idOf(address);
      if (id === undefined) throw new Error(`sealed wallet ${address} is not in wallet_ids`);
      appender.appendVarchar(address);
      appender.appendBigInt(BigInt(id));
      appender.endRow();
    }
    appender.closeSync();
    const select = columns.map((c) => (c === "wallet_id" ? "k.id AS wallet_id" : `h.${c}`));
    parts.push(
      `SELECT ${select.join(", ")} FROM ${relation} h JOIN wallet_ids_of k ON k.address = h.wallet`,
    );
  }
  return parts.join(" UNION ALL ");
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes what a killed seal left in the folder: files the manifest does not list (a seal killed
 * before its commit, or a `.partial` killed while written) once they are `minAgeMs` old. An
 * unlisted file is no part of the history meanwhile: no reader opens it. Returns the names
 * removed.
 */
export function removeUnlisted(
  db: Connection,
  dir: string,
  now: number,
  minAgeMs = UNLISTED_FILE_MIN_AGE_MS,
): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const listed = new Set(listedFiles(db).map((p) => p.file));
  const removed = names.filter(
    (name) =>
      (name.startsWith("fills-") || name.startsWith("wallets-") || name.startsWith("times-")) &&
      !listed.has(name) &&
      now - statSync(join(dir, name)).mtimeMs >= minAgeMs,
  );
  for (const name of removed) rmSync(join(dir, name), { force: true });
  return removed;
}

/**
 * A DuckDB relation over the listed files, or null for none: PARTITION_COLUMNS with `wallet`, the
 * address, in place of `wallet_id`. For files of wallet ids, the addresses are staged from `db`
 * into the connection's table `wallet_keys` first.
 */
export async function historyRelation(
  duck: DuckDBConnection,
  db: Connection,
  dir: string,
  listed: readonly Partition[],
): Promise<string | null> {
  if (listed.length === 0) return null;
  const columns = PARTITION_COLUMNS.map(([name]) => (name === "wallet_id" ? "wallet" : name));
  const parts: string[] = [];
  const addresses = listed.filter((p) => !holdsWalletIds(p.file)).map((p) => p.file);
  if (addresses.length > 0)
    parts.push(`SELECT ${columns.join(", ")} FROM ${readParquet(dir, addresses)}`);
  const ids = listed.filter((p) => holdsWalletIds(p.file)).map((p) => p.file);
  if (ids.length > 0) {
    await duck.run(
      "CREATE OR REPLACE TEMP TABLE wallet_keys (id BIGINT PRIMARY KEY, address VARCHAR)",
    );
    const appender = await duck.createAppender("wallet_keys");
    for (const [id, address] of db
      .prepare("SELECT id, address FROM wallet_ids")
      .raw()
      .iterate() as Iterable<[number, string]>) {
      appender.appendBigInt(BigInt(id));
      appender.appendVarchar(address);
      appender.endRow();
    }
    appender.closeSync();
    const select = columns.map((c) => (c === "wallet" ? "k.address AS wallet" : `h.${c}`));
    parts.push(
      `SELECT ${select.join(", ")} FROM ${readParquet(dir, ids)} h JOIN wallet_keys k ON k.id = h.wallet_id`,
    );
  }
  return `(${parts.join(" UNION ALL ")})`;
}

/** Runs `work` with a DuckDB connection and the relation over every sealed file. */
export async function withHistory<T>(
  db: Connection,
  dbPath: string,
  memoryMb: number,
  work: (duck: DuckDBConnection, relation: string | null) => Promise<T>,
): Promise<T> {
  return withEngine({ memoryMb, threads: 1 }, async (duck) =>
    work(duck, await historyRelation(duck, db, historyDir(dbPath), partitions(db))),
  );
}

/**
 * Copies the history files a database copy lists (`backup`): the copy's manifest is its snapshot,
 * and listed files are never changed, so these are exactly the files it needs. Returns the
 * bytes copied.
 */
export function copyHistory(fromDbPath: string, copy: Connection, copyPath: string): number {
  const listed = listedFiles(copy);
  if (listed.length === 0) return 0;
  const from = historyDir(fromDbPath);
  const to = historyDir(copyPath);
  mkdirSync(to, { recursive: true, mode: 0o700 });
  let bytes = 0;
  for (const p of listed) {
    copyFileSync(join(from, p.file), join(to, p.file));
    bytes += p.bytes;
  }
  return bytes;
}

export interface HistoryCheck {
  /** Listed files that are not in the folder. */
  missing: string[];
  /** Listed files whose size is not the size listed: truncated or replaced. */
  damaged: string[];
}

/** Every listed file is there, at its listed size (`status`); no file is read. */
export function checkHistory(db: Connection, dbPath: string): HistoryCheck {
  const dir = historyDir(dbPath);
  const check: HistoryCheck = { missing: [], damaged: [] };
  for (const p of listedFiles(db)) {
    let size: number;
    try {
      size = statSync(join(dir, p.file)).size;
    } catch {
      check.missing.push(p.file);
      continue;
    }
    if (size !== p.bytes) check.damaged.push(p.file);
  }
  return check;
}

/** The history files holding a sealed market's fills (sql/0041): none when none is sealed. */
export function sealedFilesOf(db: Connection, marketId: number): string[] {
  return db
    .prepare(
      `SELECT p.file FROM history_markets hm JOIN history_partitions p ON p.id = hm.partition_id
        WHERE hm.market_id = ? ORDER BY p.id`,
    )
    .pluck()
    .all(marketId) as string[];
}

/** The `read_parquet` list of files of the history. */
export function historyFiles(dbPath: string, files: readonly string[]): string {
  return `[${files.map((file) => sqlString(join(historyDir(dbPath), file))).join(", ")}]`;
}

/**
 * The (tx_hash, log_index) keys of a sealed market's fills, as `0x…:N` (an import's check that a
 * line repeats a sealed fill): each market's files are read once.
 */
export async function sealedKeys(
  dbPath: string,
  markets: ReadonlyMap<number, readonly string[]>,
  memoryMb: number,
): Promise<Map<number, Set<string>>> {
  const keys = new Map<number, Set<string>>();
  if (markets.size === 0) return keys;
  await withEngine({ memoryMb, threads: 1 }, async (duck) => {
    for (const [marketId, files] of markets) {
      const result = await duck.runAndReadAll(
        `SELECT '0x' || lower(hex(tx_hash)) || ':' || log_index
           FROM read_parquet(${historyFiles(dbPath, files)}) WHERE market_id = $1`,
        [marketId],
      );
      keys.set(marketId, new Set(result.getRowsJS().map((r) => String(r[0]))));
    }
  });
  return keys;
}
