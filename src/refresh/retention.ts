/**
 * Fill retention (SMARTMONEY_FILL_RETENTION; docs/architecture.md, "Fill retention"): markets
 * resolved before the window move their fills into the Parquet history (sql/0031), and their
 * read-model rows are frozen (sql/0023).
 */
import { mkdirSync, rmSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CACHE_MB, withCacheMb } from "../db/cache";
import type { Connection, Db } from "../db/open";
import { MIN_FILL_RETENTION_MS } from "../domain";
import { formatDuration } from "../duration";
import { isDiskFull } from "../history/engine";
import type { HistoryReplica } from "../history/replica";
import {
  historyDir,
  mergePartitions,
  PARTITION_SELECT,
  type Partition,
  readTxPlaces,
  removeUnlisted,
  WALLET_ID_FILE,
  type WrittenFile,
  type WrittenPartition,
  writePartition,
  writeTimeCopy,
} from "../history/store";
import { listTxKeys } from "../history/tx-keys";
import { NEXT_FILL_ID_SQL } from "../ingest/fill-codec";
import { contextFor, FILL_COLUMNS, FILLS_BY_MARKET, type FillRow, toFill } from "./pass";
import { keepRecent, packSealedTrades, sealedTradesReader } from "./sealed-trades";
import { tradesToSeal } from "./wallet-model";

/**
 * Markets compacted per transaction: a kill leaves each batch, and so each market, whole. Each
 * batch renders the timing buckets of its markets' traders again from all their fills, so fewer,
 * larger batches read fewer fills.
 */
export const COMPACTION_BATCH = 1_000;

export interface CompactionSummary {
  retention: string;
  /** Markets resolved, and last traded, before this moment are compacted. */
  cutoff: string;
  markets: number;
  /** Fills moved out of `fills` into the history's Parquet files. */
  fills_deleted: number;
  /** Fills of compacted markets kept because a signal names them. */
  fills_kept: number;
  /** Bets in the compacted markets, now frozen. */
  bets_frozen: number;
  /** Due, but with fills the read models have not counted yet: compacted after a refresh. */
  markets_waiting: number;
  /** Why the replica refused a file (the markets it held wait for the next run), else null. */
  replica_error: string | null;
  /** Why no file could be written to the history (its disk is full), else null. */
  history_error: string | null;
  /** Files sealed before sql/0034 or WALLET_ID_FILE written again as a seal writes them now. */
  files_rewritten: number;
  /** Copies in time order written and listed for files sealed before sql/0037. */
  time_copies_written: number;
  /** Files whose hash keys were listed again with the blocks that hold them (sql/0038). */
  tx_keys_placed: number;
  /** Files merged into fewer, larger ones (MERGE_TIERS). */
  files_merged: number;
  /** Files no longer listed deleted from the replica (REPLICA_DELETE_AFTER_MS). */
  replica_files_deleted: number;
  duration_ms: number;
}

/** The points of a seal a crash test stops at (test/history/seal.test.ts). */
export type SealStep =
  | "before-write"
  | "written"
  | "in-transaction"
  | "committed"
  | "merge-written"
  | "merge-committed";

export interface CompactionOptions {
  batch?: number;
  /** DuckDB's memory cap while a batch's file is written, MB. */
  memoryMb?: number;
  /** Called at each step of each batch's seal; a test kills the process there. */
  onStep?: (step: SealStep) => void;
  /** Unlisted files in the history this old are removed (UNLISTED_FILE_MIN_AGE_MS). */
  unlistedMinAgeMs?: number;
  /** Where each file goes before the transaction that lists it (SMARTMONEY_REPLICA_URL). */
  replica?: HistoryReplica;
  /** Markets gone through (compacted, or left for later) of those due, after each batch. */
  onProgress?: (done: number, total: number) => void;
  /** When files are merged, and into what (MERGE_TIERS). */
  mergeTiers?: readonly MergeTier[];
  /** The clock the replica's unlisted files are recorded and aged by (Date.now). */
  clock?: () => number;
  /** Listed files brought up to the current layout at most (UPGRADES_PER_RUN). */
  upgradesPerRun?: number;
}

/** A batch whose markets took fills between the file's write and the transaction: retried later. */
class StaleBatch extends Error {}

/**
 * Files merged into one, tier by tier: once `minFiles` listed files hold from `from` to under
 * `below` fills each, they are merged in manifest order into files of up to `below` fills.
 *
 * A page reads each file that may hold its rows, about a millisecond a file found or not (a
 * window's page reads every file with fills at its moment, a wallet's every file with its
 * fills), and batches of markets sealed apart overlap in time: fewer, larger files are fewer
 * reads. Within a file a read costs the same at any size: DuckDB skips row groups by market, by
 * wallet, by time and (a hash's blocks, sql/0038) by row number. The first tier gathers the
 * small files a seal writes into files of about 1M fills; the second gathers ten of those into
 * one, so a year (about 275M sealed fills) is some 40 files instead of 275, for one more write of
 * each fill. Merging stops at 10M, so a merge rewrites a bounded amount: ten files of the large
 * world's (9.4M fills) took 19 s and peaked at 670 MB, once every ten million sealed fills.
 */
export interface MergeTier {
  from: number;
  below: number;
  minFiles: number;
}

export const MERGE_TIERS: readonly MergeTier[] = [
  { from: 0, below: 1_000_000, minFiles: 4 },
  { from: 500_000, below: 10_000_000, minFiles: 10 },
];
/**
 * Listed files a run brings up to the current layout at most (written again, given their copy
 * in time order, or their hash keys' blocks): the scheduled refresh waits for its compaction.
 * On the large world a file of 1M fills took 2.5 s to write again and 0.6 s to copy, so a year's
 * history (about 275 files) at once would hold the refresh for 3 to 12 minutes; 8 files, for 5
 * to 20 seconds.
 */
export const UPGRADES_PER_RUN = 8;

/**
 * How long a file stays on the replica once no listed row names it (history_replica_unlisted,
 * sql/0035): `smartmoney restore --timestamp` restores the database as of any moment within
 * Litestream's retention (its default, 24 hours, which we keep), and that database may list it.
 * The hour beyond is for a restore begun at the edge of the retention, still fetching its files,
 * and for this machine's clock and the replica's differing.
 */
export const REPLICA_DELETE_AFTER_MS = 25 * 3_600_000;

/** A file with its copies, in one manifest row: a seal's, or a merge's in place of its files. */
const LIST_PARTITION = `INSERT INTO history_partitions (file, fills, bytes, min_ts, max_ts,
    created_at, wallet_file, wallet_bytes, time_file, time_bytes)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * Where each wallet's sealed fills are (sql/0036), from the frozen bets of the file's markets:
 * bound to the file's id and its markets' ids as a JSON array.
 */
const LIST_WALLET_SPANS = `INSERT INTO history_wallets (wallet_id, partition_id, first_ts,
    last_ts, fills)
  SELECT b.wallet_id, ?, min(b.first_ts), max(b.last_ts), sum(b.trade_count)
    FROM wallet_bets b INDEXED BY wallet_bets_by_market
   WHERE b.market_id IN (SELECT value FROM json_each(?))
   GROUP BY b.wallet_id`;

/**
 * Lists a sealed file and its copies in the manifest (sql/0031, sql/0034, sql/0037), with its
 * hash keys (sql/0032, sql/0038), in the caller's transaction; gives the file's id.
 */
export function listSealed(w: Connection, sealed: WrittenPartition, now: number): number {
  const id = Number(
    w
      .prepare(LIST_PARTITION)
      .run(
        sealed.file,
        sealed.fills,
        sealed.bytes,
        sealed.minTs,
        sealed.maxTs,
        now,
        sealed.wallet.file,
        sealed.wallet.bytes,
        sealed.time.file,
        sealed.time.bytes,
      ).lastInsertRowid,
  );
  listTxKeys(w, id, sealed.txPlaces);
  return id;
}

/** A listed file and its copies (sql/0034, sql/0037), those it has. */
function filesOf(p: { file: string; wallet_file: string | null; time_file: string | null }) {
  return [p.file, p.wallet_file, p.time_file].filter((f) => f !== null);
}

/** A written file and its copies in wallet and time order: what one manifest row lists. */
export function withCopies(
  file: WrittenFile,
  copies: { wallet: WrittenFile; time: WrittenFile },
): WrittenFile[] {
  return [file, copies.wallet, copies.time];
}

const namesOf = (files: readonly WrittenFile[]) => files.map((f) => f.file);

/** Removes written files, none of them listed. */
export function removeWritten(files: readonly WrittenFile[]): void {
  for (const file of files) rmSync(file.path, { force: true });
}

/**
 * Puts a written file and its copies on the replica before they are listed, so a database
 * restored from there finds every file it lists. They are recorded as unlisted first
 * (sql/0035), and the transaction that lists them drops the records: put but never listed (the
 * process killed, the batch stale, the put refused), they are deleted from the replica in time.
 * Refused: all are removed, and the answer says why; null once they are there (or with no
 * replica).
 */
async function putOnReplica(
  w: Connection,
  replica: HistoryReplica | undefined,
  files: readonly WrittenFile[],
  at: number,
): Promise<string | null> {
  if (!replica) return null;
  recordUnlisted(w, namesOf(files), at);
  return putRecorded(replica, files);
}

/**
 * Puts files already recorded as unlisted (recordUnlisted) on the replica. Refused: all are
 * removed here, and the answer says why; null once they are there.
 */
export async function putRecorded(
  replica: HistoryReplica,
  files: readonly WrittenFile[],
): Promise<string | null> {
  try {
    for (const file of files) await replica.put(file.file, file.path);
    return null;
  } catch (error) {
    removeWritten(files);
    return `${replica.describe}: ${(error as Error).message}`;
  }
}

/**
 * Records `files` as on the replica but not listed since `at` (sql/0035), committed at once
 * unless the caller's transaction is open.
 */
export function recordUnlisted(w: Connection, files: readonly string[], at: number): void {
  const record = w.prepare<[string, number]>(
    "INSERT OR REPLACE INTO history_replica_unlisted (file, at) VALUES (?, ?)",
  );
  w.transaction(() => {
    for (const file of files) record.run(file, at);
  })();
}

/**
 * Compacts every market resolved, and last traded, before now − retention whose fills the read
 * models have all counted (not in dirty_markets, and a refresh has run): in batches of
 * COMPACTION_BATCH markets it
 * - seals the market's fills, except those a signal names, into one Parquet file of the history
 *   (written and synced before the transaction; src/history/store.ts), then, in one transaction,
 * - lists the file in the manifest and deletes those fills from `fills`,
 * - marks it compacted (markets.compacted_at): from then on every refresh leaves its
 *   wallet_bets, market_stats, market_hours and market_price_history rows as they are,
 * - keeps each of its traders' trades in it (wallet_sealed_trades, sql/0033, the 500 most
 *   recent), from which their timing buckets count them from then on: the same buckets as
 *   before the move.
 * The read models are unchanged.
 */
export function compactResolvedMarkets(
  db: Db,
  now: number,
  retentionMs: number,
  options: CompactionOptions = {},
): Promise<CompactionSummary> {
  // A seal reads and deletes its batches' fills all over the table and its indexes. Read through
  // the writer's memory map (256 MB, src/db/open.ts), each page stays in the process's RSS,
  // which took a seal of the large world to 1.09 GB; through the page cache alone, to 700 MB, in
  // the same time.
  return withCacheMb(db.writer, DEFAULT_CACHE_MB, () => compact(db, now, retentionMs, options));
}

async function compact(
  db: Db,
  now: number,
  retentionMs: number,
  options: CompactionOptions,
): Promise<CompactionSummary> {
  if (!(retentionMs >= MIN_FILL_RETENTION_MS)) {
    throw new Error(
      `fill retention must be at least ${formatDuration(MIN_FILL_RETENTION_MS)}, not ${formatDuration(retentionMs)}`,
    );
  }
  const started = performance.now();
  const cutoff = now - retentionMs;
  const w = db.writer;
  const summary: CompactionSummary = {
    retention: formatDuration(retentionMs),
    cutoff: new Date(cutoff).toISOString(),
    markets: 0,
    fills_deleted: 0,
    fills_kept: 0,
    bets_frozen: 0,
    markets_waiting: 0,
    replica_error: null,
    history_error: null,
    files_rewritten: 0,
    time_copies_written: 0,
    tx_keys_placed: 0,
    files_merged: 0,
    replica_files_deleted: 0,
    duration_ms: 0,
  };
  const clock = options.clock ?? Date.now;
  const { replica } = options;
  const dropRecord = w.prepare<[string]>("DELETE FROM history_replica_unlisted WHERE file = ?");
  // Files put on the replica, and kept there, only for the restores that may list them: whatever
  // else this run does (an import refused after its put leaves some in a database with no fill).
  if (replica) await deleteFromReplica(replica);
  const refreshed = w
    .prepare("SELECT max_trade_id IS NOT NULL FROM refresh_runs ORDER BY id DESC LIMIT 1")
    .pluck()
    .get() as number | undefined;
  if (refreshed !== 1) return finish();

  // Resolved before the cut, with fills, none of them at or after it. The newest fill is one seek
  // down fills_by_market.
  const due = w
    .prepare<[number, number], { id: number; dirty: number }>(
      `SELECT m.id, EXISTS (SELECT 1 FROM dirty_markets d WHERE d.market_id = m.id) AS dirty
         FROM markets m INDEXED BY markets_by_resolution
        WHERE m.resolved_at < ? AND m.compacted_at IS NULL
          AND (SELECT f.ts FROM fills f INDEXED BY fills_by_market WHERE f.market_id = m.id
                ORDER BY f.ts DESC LIMIT 1) < ?
        ORDER BY m.id`,
    )
    .all(cutoff, cutoff);
  const ready = due.filter((m) => m.dirty === 0).map((m) => m.id);
  summary.markets_waiting = due.length - ready.length;
  const dir = historyDir(db.path);
  const step = options.onStep ?? (() => {});
  // DuckDB's memory cap for every file this run writes or reads.
  const duckMemoryMb = options.memoryMb ?? 256;
  /** Listed files this run may still bring up to the current layout (UPGRADES_PER_RUN). */
  const upgradesLeft = () =>
    (options.upgradesPerRun ?? UPGRADES_PER_RUN) -
    summary.files_rewritten -
    summary.time_copies_written -
    summary.tx_keys_placed;
  // What a killed seal left: files no manifest row lists, once surely not another seal's.
  removeUnlisted(w, dir, Date.now(), options.unlistedMinAgeMs);
  const listPartition = w.prepare(LIST_PARTITION);
  const isRecorded = w
    .prepare<[string], number>("SELECT 1 FROM history_replica_unlisted WHERE file = ? AND at > 0")
    .pluck();
  /**
   * Whether `files`, put on the replica, may be listed: their records are there, not taken by a
   * run deleting them (deleteFromReplica, REPLICA_DELETE_AFTER_MS after the put). Changes nothing.
   */
  const mayList = (files: readonly string[]) =>
    !replica || files.every((file) => isRecorded.get(file) !== undefined);
  /** In the transaction that lists `files`: they are listed, no longer recorded as unlisted. */
  const listed = (files: readonly string[]) => {
    if (replica) for (const file of files) dropRecord.run(file);
  };
  /** In the transaction that unlists `files`: recorded, so they leave the replica in time. */
  const unlisted = (files: readonly string[]) => {
    if (replica) recordUnlisted(w, files, clock());
  };
  /**
   * Older files brought up to the current layout (`upgrade`), then merged: before a seal, and
   * the merge alone again after it.
   */
  const tidyHistory = async (upgrade: boolean) => {
    try {
      if (upgrade) {
        await rewriteOlderFiles();
        await addTimeCopies();
        await placeTxKeys();
      }
      for (const tier of options.mergeTiers ?? MERGE_TIERS) await mergeFiles(tier);
    } catch (error) {
      // The listed files stay as they are, whole: the next run tries again.
      if (!isDiskFull(error)) throw error;
      summary.history_error ??= `the disk holding the fill history (${dir}) is full: its older files were not rewritten or merged`;
    }
  };
  await tidyHistory(true);
  if (ready.length === 0) return finish();

  const holders = w
    .prepare<[number], number>(
      "SELECT wallet_id FROM wallet_bets INDEXED BY wallet_bets_by_market WHERE market_id = ?",
    )
    .pluck();
  // A signal's fill is kept: the signal refers to it (signals.trade_id), and its trade page stays.
  const named =
    "EXISTS (SELECT 1 FROM signals s WHERE s.type IN ('whale', 'insider') AND s.trade_id = f.id)";
  const keptFills = w
    .prepare<[number], number>(`SELECT count(*) FROM fills f WHERE f.market_id = ? AND ${named}`)
    .pluck();
  const deleteFills = w.prepare<[number]>(
    `DELETE FROM fills WHERE id IN
       (SELECT f.id FROM fills f INDEXED BY fills_by_market WHERE f.market_id = ? AND NOT ${named})`,
  );
  // No later fill may take the id of one sealed here (sql/0040): SQLite gives max(id) + 1.
  const raiseIdFloor = w.prepare(`UPDATE fill_id_floor SET next_id = ${NEXT_FILL_ID_SQL}`);
  const stillDirty = w
    .prepare<[number], number>("SELECT 1 FROM dirty_markets WHERE market_id = ?")
    .pluck();
  const markCompacted = w.prepare<[number, number]>(
    "UPDATE markets SET compacted_at = ? WHERE id = ?",
  );
  // A batch's fills (those kept for signals too) by wallet id, each wallet's in (ts, id) order.
  // On the writer: the reader's snapshot still holds the fills this transaction deletes.
  const batchFills = w
    .prepare(
      `SELECT ${FILL_COLUMNS}, f.wallet_id FROM ${FILLS_BY_MARKET}
        WHERE f.market_id IN (SELECT value FROM json_each(?)) ORDER BY f.wallet_id, f.ts, f.id`,
    )
    .raw();
  const countSealable = w
    .prepare<[number], number>(
      `SELECT count(*) FROM fills f WHERE f.market_id = ? AND NOT ${named}`,
    )
    .pluck();
  const sealable = (markets: readonly number[]) =>
    w
      .prepare(
        `SELECT ${PARTITION_SELECT}
           FROM fills f
          WHERE f.market_id IN (${markets.map(() => "?").join(", ")}) AND NOT ${named}
          ORDER BY f.market_id, f.ts, f.id`,
      )
      .raw()
      .iterate(...markets) as Iterable<unknown[]>;
  const sealedOf = sealedTradesReader(w);
  const storeSealed = w.prepare<[number, Buffer]>(
    "INSERT OR REPLACE INTO wallet_sealed_trades (wallet_id, trades) VALUES (?, ?)",
  );
  const compactedAt = w
    .prepare<[number], number | null>("SELECT compacted_at FROM markets WHERE id = ?")
    .pluck();
  const markSealed = w.prepare<[number, number]>(
    "INSERT INTO history_markets (partition_id, market_id) VALUES (?, ?)",
  );
  const listWallets = w.prepare<[number, string]>(LIST_WALLET_SPANS);
  mkdirSync(dir, { recursive: true });
  const batch = options.batch ?? COMPACTION_BATCH;
  // Read once, for the markets' resolutions that the sealed trades keep; each batch's markets are
  // flagged compacted in it as the batch commits.
  const ctx = contextFor(db, now, "seek");
  const progress = options.onProgress ?? (() => {});
  progress(0, ready.length);

  for (let start = 0; start < ready.length; start += batch) {
    progress(Math.min(start, ready.length), ready.length);
    const markets = ready
      .slice(start, start + batch)
      .filter((marketId) => stillDirty.get(marketId) === undefined);
    summary.markets_waiting += Math.min(batch, ready.length - start) - markets.length;
    if (markets.length === 0) continue;
    step("before-write");
    // Read on the writer: the file holds exactly the fills the transaction below deletes, unless
    // a market took more meanwhile, which the transaction checks.
    let sealed: WrittenPartition | null;
    try {
      sealed = await writePartition(dir, () => sealable(markets), {
        memoryMb: duckMemoryMb,
        now: Date.now(),
      });
    } catch (error) {
      if (!isDiskFull(error)) throw error;
      // Nothing was listed or deleted: these markets and the rest keep their fills, and wait.
      const waiting = ready.length - start;
      summary.history_error = `the disk holding the fill history (${dir}) is full: ${waiting} markets keep their fills in the database until space is freed`;
      summary.markets_waiting += waiting;
      break;
    }
    step("written");
    const refused = sealed && (await putOnReplica(w, replica, withCopies(sealed, sealed), clock()));
    if (refused) {
      summary.replica_error = refused;
      summary.markets_waiting += markets.length + Math.max(0, ready.length - start - batch);
      break;
    }
    try {
      compactBatch(markets, sealed);
    } catch (error) {
      if (sealed) removeWritten(withCopies(sealed, sealed));
      if (!(error instanceof StaleBatch)) throw error;
      summary.markets_waiting += markets.length;
      continue;
    }
    step("committed");
  }
  // The files just sealed merge in this run, not the next: until then a page reads each of them
  // (a first compaction of the large world wrote 10, and its window pages took 9 ms of CPU).
  // With none sealed, a tier's one query finds nothing more to merge than before the seal.
  await tidyHistory(false);
  progress(ready.length, ready.length);
  w.prepare("INSERT INTO compaction_runs (started_at, finished_at, summary) VALUES (?, ?, ?)").run(
    now,
    now,
    JSON.stringify(finish()),
  );
  return summary;

  function compactBatch(markets: number[], sealed: WrittenPartition | null): void {
    w.transaction(() => {
      let deleted = 0;
      let kept = 0;
      let frozen = 0;
      for (const marketId of markets) {
        // Another process may have stored a fill for the market since its file was written (an
        // import beside `serve`: its fill is neither counted nor sealed), or compacted it (a
        // compaction run by hand beside the scheduled one): the batch waits for the next run.
        if (
          stillDirty.get(marketId) !== undefined ||
          compactedAt.get(marketId) !== null ||
          countSealable.get(marketId) !== (sealed?.perMarket.get(marketId) ?? 0)
        ) {
          throw new StaleBatch(`market ${marketId} took fills while its batch was sealed`);
        }
      }
      const names = sealed ? namesOf(withCopies(sealed, sealed)) : [];
      if (!mayList(names)) {
        throw new StaleBatch(`${names[0]} was taken for an orphan on the replica`);
      }
      const id = sealed ? listSealed(w, sealed, now) : null;
      if (id !== null) listed(names);
      step("in-transaction");
      for (const marketId of markets) {
        // One bet per wallet in the market: its holders are its frozen bets.
        frozen += holders.all(marketId).length;
      }
      // Flagged as compacted, as the next batches and the refresh see them; unflagged again if
      // the transaction fails.
      const flagged = markets.flatMap((marketId) => ctx.market(marketId) ?? []);
      for (const info of flagged) info.compacted = true;
      try {
        const batch = new Set(markets);
        // Each wallet's trades in the batch join its sealed trades (sql/0033), taken from its
        // fills before they are deleted. Its timing buckets do not move: they count the 500
        // newest of its trades in its fills and its sealed trades, and a trade only goes from
        // one to the other, the 500 newest of the sealed ones kept (keepRecent). Reading each
        // touched wallet's every fill to count them again took 22 s of a 56 s batch on the large
        // world.
        const rows = batchFills.all(JSON.stringify(markets)) as [...FillRow, walletId: number][];
        for (let at = 0; at < rows.length; ) {
          const walletId = rows[at]![10];
          let end = at;
          while (end < rows.length && rows[end]![10] === walletId) end++;
          const fills = rows.slice(at, end).map((row) => toFill(row as unknown as FillRow));
          const trades = keepRecent(sealedOf(walletId), tradesToSeal(fills, ctx, batch));
          if (trades.length > 0) storeSealed.run(walletId, packSealedTrades(trades));
          at = end;
        }
        raiseIdFloor.run();
        for (const marketId of markets) {
          kept += keptFills.get(marketId) ?? 0;
          deleted += deleteFills.run(marketId).changes;
          markCompacted.run(now, marketId);
          if (id !== null && sealed?.perMarket.has(marketId)) markSealed.run(id, marketId);
        }
        if (id !== null && sealed) {
          listWallets.run(id, JSON.stringify(markets.filter((m) => sealed.perMarket.has(m))));
        }
        if (deleted !== (sealed?.fills ?? 0)) {
          throw new Error(`sealed ${sealed?.fills ?? 0} fills but deleted ${deleted}`);
        }
      } catch (error) {
        for (const info of flagged) info.compacted = false;
        throw error;
      }
      summary.markets += markets.length;
      summary.fills_deleted += deleted;
      summary.fills_kept += kept;
      summary.bets_frozen += frozen;
    }).immediate();
  }

  /**
   * Each listed file sealed before sql/0034 (in larger row groups, without copies) or before
   * WALLET_ID_FILE (wallets as addresses) is written again as a seal writes it now, all three
   * files synced (and put on the replica), then swapped in for it in one UPDATE of its
   * manifest row, in the transaction that lists its hash keys and their blocks (sql/0038) in
   * place of the old file's. The old files, unlisted, are removed as any unlisted file is, an
   * hour after the swap (their time is set just before, for a page still reading them). Killed
   * before the UPDATE, the new files are unlisted and removed alike.
   */
  async function rewriteOlderFiles(): Promise<void> {
    const older = w
      .prepare(
        `SELECT id, file, wallet_file, time_file FROM history_partitions
          WHERE wallet_file IS NULL OR file NOT LIKE '%' || ? ORDER BY id LIMIT +?`,
      )
      .all(WALLET_ID_FILE, upgradesLeft()) as {
      id: number;
      file: string;
      wallet_file: string | null;
      time_file: string | null;
    }[];
    const swap = w.prepare<[string, number, string, number, string, number, number, string]>(
      `UPDATE history_partitions
          SET file = ?, bytes = ?, wallet_file = ?, wallet_bytes = ?, time_file = ?, time_bytes = ?
        WHERE id = ? AND file = ?`,
    );
    for (const partition of older) {
      const { id, file } = partition;
      const old = filesOf(partition);
      const rewritten = await writeReplacement([file], old);
      if (rewritten === null) return;
      const { file: f, wallet, time } = rewritten;
      const files = withCopies(f, rewritten);
      const names = namesOf(files);
      const swapped = w
        .transaction(() => {
          if (!mayList(names)) return false;
          const row = [f.file, f.bytes, wallet.file, wallet.bytes, time.file, time.bytes] as const;
          if (swap.run(...row, id, file).changes === 0) return false;
          listed(names);
          unlisted(old);
          // The rewritten file's hash keys, in place of the old file's: its rows have other
          // numbers, and a file listed before sql/0032 had none (every lookup by hash opened it).
          listTxKeys(w, id, rewritten.txPlaces);
          return true;
        })
        .immediate();
      // Another run may have swapped it meanwhile: these files are then no part of the history.
      if (swapped) summary.files_rewritten++;
      else removeWritten(files);
    }
  }

  /**
   * Each listed file otherwise as a seal writes it now but sealed before sql/0037 gets its copy
   * in time order, written from the file (a third of what writing it again costs), synced, put
   * on the replica, then listed in one UPDATE of its row. Killed before it, the copy is unlisted
   * and removed as any unlisted file. At most UPGRADES_PER_RUN files a run, with those written
   * again by rewriteOlderFiles.
   */
  async function addTimeCopies(): Promise<void> {
    const budget = upgradesLeft();
    if (budget <= 0) return;
    const lacking = w
      .prepare(
        `SELECT id, file FROM history_partitions
          WHERE time_file IS NULL AND wallet_file IS NOT NULL AND file LIKE '%' || ?
          ORDER BY id LIMIT +?`,
      )
      .all(WALLET_ID_FILE, budget) as { id: number; file: string }[];
    const list = w.prepare<[string, number, number, string]>(
      `UPDATE history_partitions SET time_file = ?, time_bytes = ?
        WHERE id = ? AND file = ? AND time_file IS NULL`,
    );
    for (const { id, file } of lacking) {
      const copy = await writeTimeCopy(dir, file, {
        memoryMb: duckMemoryMb,
        now: Date.now(),
      });
      const refused = await putOnReplica(w, replica, [copy], clock());
      if (refused !== null) {
        summary.replica_error = refused;
        return;
      }
      const added = w
        .transaction(() => {
          if (!mayList([copy.file])) return false;
          if (list.run(copy.file, copy.bytes, id, file).changes === 0) return false;
          listed([copy.file]);
          return true;
        })
        .immediate();
      // Another run may have listed one meanwhile, or merged the file away.
      if (added) summary.time_copies_written++;
      else removeWritten([copy]);
    }
  }

  /**
   * Each listed file as a seal writes it now but whose hash keys were listed before sql/0038,
   * without the blocks of rows that hold them, has them listed again with their blocks, read from
   * the file (its hash column: 1.2 s for the large world's two files of 0.94M fills), in one
   * transaction that checks the file is still listed. At most UPGRADES_PER_RUN files a run, with
   * those upgraded above.
   */
  async function placeTxKeys(): Promise<void> {
    const budget = upgradesLeft();
    if (budget <= 0) return;
    const unplaced = w
      .prepare(
        `SELECT p.id, p.file FROM history_partitions p
          WHERE p.file LIKE '%' || ?
            AND (EXISTS (SELECT 1 FROM history_tx_keys k
                          WHERE k.partition_id = p.id AND k.blocks IS NULL)
                 OR NOT EXISTS (SELECT 1 FROM history_tx_keys k WHERE k.partition_id = p.id))
          ORDER BY p.id LIMIT +?`,
      )
      .all(WALLET_ID_FILE, budget) as { id: number; file: string }[];
    const stillListed = w
      .prepare<[number, string], number>(
        "SELECT 1 FROM history_partitions WHERE id = ? AND file = ?",
      )
      .pluck();
    for (const { id, file } of unplaced) {
      const places = await readTxPlaces(dir, file, { memoryMb: duckMemoryMb });
      const placed = w
        .transaction(() => {
          // Merged away meanwhile by another run: its keys went with it.
          if (stillListed.get(id, file) === undefined) return false;
          listTxKeys(w, id, places);
          return true;
        })
        .immediate();
      if (placed) summary.tx_keys_placed++;
    }
  }

  /**
   * `files` written again as one (mergePartitions) and put on the replica, ready to be swapped
   * in for the listed files `unlisting`, whose times are set now: once unlisted, each stays an
   * hour from then for a page still reading it. Null when the replica refused (recorded).
   */
  async function writeReplacement(files: readonly string[], unlisting: readonly string[]) {
    const written = await mergePartitions(dir, files, {
      memoryMb: duckMemoryMb,
      now: Date.now(),
      wallets: w,
    });
    const refused = await putOnReplica(w, replica, withCopies(written.file, written), clock());
    if (refused !== null) {
      summary.replica_error = refused;
      return null;
    }
    const at = new Date();
    for (const name of unlisting) utimesSync(join(dir, name), at, at);
    return written;
  }

  /**
   * Once `tier.minFiles` listed files hold from `tier.from` to under `tier.below` fills each, they
   * are merged, in manifest order, into files of up to `tier.below`: each merged file and its
   * copies are written and synced (and put on the replica), then ONE transaction lists them,
   * points the old files' markets at them and unlists the old files, whose time is set just
   * before, so they are removed an hour after (as any unlisted file). Killed before the
   * transaction, the new files are unlisted and removed alike; a file another run merged or
   * swapped meanwhile leaves its group for the next run.
   */
  async function mergeFiles(tier: MergeTier): Promise<void> {
    const small = w
      .prepare(
        `SELECT id, file, fills, bytes, min_ts, max_ts, wallet_file, wallet_bytes, time_file,
                time_bytes
           FROM history_partitions
          WHERE fills >= ? AND fills < ? AND wallet_file IS NOT NULL AND time_file IS NOT NULL
          ORDER BY id`,
      )
      .all(tier.from, tier.below) as Partition[];
    if (small.length < tier.minFiles) return;
    const groups: Partition[][] = [[]];
    for (const p of small) {
      const group = groups[groups.length - 1]!;
      if (group.reduce((n, q) => n + q.fills, 0) + p.fills > tier.below) groups.push([p]);
      else group.push(p);
    }
    const stillListed = w.prepare<[number, string, string | null], number>(
      "SELECT 1 FROM history_partitions WHERE id = ? AND file = ? AND wallet_file IS ?",
    );
    for (const group of groups.filter((g) => g.length >= 2)) {
      const old = group.flatMap(filesOf);
      const merged = await writeReplacement(
        group.map((p) => p.file),
        old,
      );
      if (merged === null) return;
      step("merge-written");
      const files = withCopies(merged.file, merged);
      const ids = group.map((p) => p.id);
      const marks = ids.map(() => "?").join(", ");
      const swapped = w
        .transaction(() => {
          if (group.some((p) => stillListed.get(p.id, p.file, p.wallet_file) === undefined))
            return false;
          if (!mayList(namesOf(files))) return false;
          const id = listPartition.run(
            merged.file.file,
            group.reduce((n, p) => n + p.fills, 0),
            merged.file.bytes,
            Math.min(...group.map((p) => p.min_ts)),
            Math.max(...group.map((p) => p.max_ts)),
            now,
            merged.wallet.file,
            merged.wallet.bytes,
            merged.time.file,
            merged.time.bytes,
          ).lastInsertRowid;
          listTxKeys(w, Number(id), merged.txPlaces);
          // A market in two of the files (sql/0041) is in the merged one once.
          w.prepare(
            `INSERT OR IGNORE INTO history_markets (market_id, partition_id)
             SELECT market_id, ? FROM history_markets WHERE partition_id IN (${marks})`,
          ).run(id, ...ids);
          w.prepare(`DELETE FROM history_markets WHERE partition_id IN (${marks})`).run(...ids);
          w.prepare(`DELETE FROM history_tx_keys WHERE partition_id IN (${marks})`).run(...ids);
          w.prepare(
            `INSERT INTO history_wallets (wallet_id, partition_id, first_ts, last_ts, fills)
             SELECT wallet_id, ?, min(first_ts), max(last_ts), sum(fills) FROM history_wallets
              WHERE partition_id IN (${marks}) GROUP BY wallet_id`,
          ).run(id, ...ids);
          w.prepare(`DELETE FROM history_wallets WHERE partition_id IN (${marks})`).run(...ids);
          w.prepare(`DELETE FROM history_partitions WHERE id IN (${marks})`).run(...ids);
          listed(namesOf(files));
          unlisted(old);
          return true;
        })
        .immediate();
      if (swapped) {
        summary.files_merged += group.length;
        step("merge-committed");
      } else removeWritten(files);
    }
  }

  /**
   * Deletes from the replica each file recorded as unlisted (sql/0035) more than
   * REPLICA_DELETE_AFTER_MS ago that no row lists, then drops its record. Each record is first
   * taken (its time set to 0, still due) in a statement that checks again that no row lists the
   * file, so a seal listing it then refuses (mayList) instead of listing a file being deleted.
   * Refused: the error is the summary's replica_error, and the records left wait for the next run.
   */
  async function deleteFromReplica(replica: HistoryReplica): Promise<void> {
    const unlisted = `NOT EXISTS (SELECT 1 FROM history_partitions p WHERE p.file = u.file)
      AND NOT EXISTS (SELECT 1 FROM history_partitions p WHERE p.wallet_file = u.file)
      AND NOT EXISTS (SELECT 1 FROM history_partitions p WHERE p.time_file = u.file)`;
    const due = w
      .prepare<[number], string>(
        `SELECT u.file FROM history_replica_unlisted u WHERE u.at < ? AND ${unlisted}
          ORDER BY u.at, u.file`,
      )
      .pluck()
      .all(clock() - REPLICA_DELETE_AFTER_MS);
    const take = w.prepare<[string]>(
      `UPDATE history_replica_unlisted AS u SET at = 0 WHERE u.file = ? AND ${unlisted}`,
    );
    try {
      for (const file of due) {
        if (take.run(file).changes === 0) continue;
        await replica.delete(file);
        dropRecord.run(file);
        summary.replica_files_deleted++;
      }
    } catch (error) {
      summary.replica_error = `${replica.describe}: ${(error as Error).message}`;
    }
  }

  function finish(): CompactionSummary {
    summary.duration_ms = Math.round(performance.now() - started);
    return summary;
  }
}

/** What `smartmoney status` says about retention: compacted markets and the latest run. */
export function retentionStatus(db: Db): {
  compacted_markets: number;
  last_run: (CompactionSummary & { at: string }) | null;
} {
  const r = db.reader;
  const compacted = r
    .prepare("SELECT count(*) FROM markets WHERE compacted_at IS NOT NULL")
    .pluck()
    .get() as number;
  const last = r
    .prepare<[], { started_at: number; summary: string }>(
      "SELECT started_at, summary FROM compaction_runs ORDER BY id DESC LIMIT 1",
    )
    .get();
  return {
    compacted_markets: compacted,
    last_run: last
      ? {
          at: new Date(last.started_at).toISOString(),
          ...(JSON.parse(last.summary) as CompactionSummary),
        }
      : null,
  };
}
