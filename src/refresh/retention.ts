/**
 * Fill retention (SMARTMONEY_FILL_RETENTION; docs/architecture.md, "Fill retention"): markets
 * resolved before the window move their fills into the Parquet history (sql/0031), and their
 * read-model rows are frozen (sql/0023).
 */
import { mkdirSync, rmSync } from "node:fs";
import type { Db } from "../db/open";
import { MIN_FILL_RETENTION_MS } from "../domain";
import { formatDuration } from "../duration";
import { isDiskFull } from "../history/engine";
import {
  type MergePolicy,
  MergeReplicaError,
  type MergeStep,
  type MergeSummary,
  mergeSmallPartitions,
} from "../history/merge";
import type { HistoryReplica } from "../history/replica";
import {
  historyDir,
  PARTITION_SELECT,
  removeUnlisted,
  type WrittenPartition,
  writePartition,
} from "../history/store";
import { listTxKeys } from "../history/tx-keys";
import { contextFor, FILL_COLUMNS, FILLS_BY_WALLET, type FillRow, toFill } from "./pass";
import { keepRecent, packSealedTrades, sealedTradesReader } from "./sealed-trades";
import { timingOf, tradesToSeal } from "./wallet-model";
import { createModelWriter } from "./writer";

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
  /** Small files of the history merged into larger ones after the seal (src/history/merge.ts). */
  merge: MergeSummary | null;
  duration_ms: number;
}

/** The points of a seal a crash test stops at (test/history/seal.test.ts). */
export type SealStep = "before-write" | "written" | "in-transaction" | "committed" | MergeStep;

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
  /** When small files of the history are merged; MERGE_POLICY by default. */
  mergePolicy?: MergePolicy;
}

/** A batch whose markets took fills between the file's write and the transaction: retried later. */
class StaleBatch extends Error {}

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
 *   recent), from which their timing buckets count them from then on, and renders those buckets
 *   again, as a full rebuild would: the same buckets as before the move.
 * The read models are unchanged.
 */
export async function compactResolvedMarkets(
  db: Db,
  now: number,
  retentionMs: number,
  options: CompactionOptions = {},
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
    merge: null,
    duration_ms: 0,
  };
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
  // What a killed seal left: files no manifest row lists, once surely not another seal's.
  removeUnlisted(w, dir, Date.now(), options.unlistedMinAgeMs);
  if (ready.length === 0) {
    // Nothing to seal; small files may still be due a merge (a run that merged is recorded).
    await mergeFiles();
    return (summary.merge?.merged_into ?? 0) > 0 || summary.history_error ? recorded() : finish();
  }

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
  const stillDirty = w
    .prepare<[number], number>("SELECT 1 FROM dirty_markets WHERE market_id = ?")
    .pluck();
  const markCompacted = w.prepare<[number, number]>(
    "UPDATE markets SET compacted_at = ? WHERE id = ?",
  );
  // On the writer: the reader's snapshot still holds the fills this transaction deletes.
  const walletFills = w
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_WALLET} WHERE f.wallet_id = ? ORDER BY f.ts, f.id`,
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
           FROM fills f JOIN wallet_ids w ON w.id = f.wallet_id
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
  const listPartition = w.prepare(
    `INSERT INTO history_partitions (file, fills, bytes, min_ts, max_ts, created_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const markSealed = w.prepare<[number, number]>(
    "INSERT INTO history_markets (partition_id, market_id) VALUES (?, ?)",
  );
  mkdirSync(dir, { recursive: true });
  const writer = createModelWriter(db);
  const batch = options.batch ?? COMPACTION_BATCH;
  // Read once: each market is flagged compacted in it as it is, so the timing buckets below
  // leave its kept fills out.
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
        memoryMb: options.memoryMb ?? 256,
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
    if (sealed && options.replica) {
      // On the replica before it is listed: a database restored from there finds every file.
      try {
        await options.replica.put(sealed.file, sealed.path);
      } catch (error) {
        rmSync(sealed.path, { force: true });
        summary.replica_error = `${options.replica.describe}: ${(error as Error).message}`;
        summary.markets_waiting += markets.length + Math.max(0, ready.length - start - batch);
        break;
      }
    }
    try {
      compactBatch(markets, sealed);
    } catch (error) {
      if (sealed) rmSync(sealed.path, { force: true });
      if (!(error instanceof StaleBatch)) throw error;
      summary.markets_waiting += markets.length;
      continue;
    }
    step("committed");
  }
  progress(ready.length, ready.length);
  await mergeFiles();
  return recorded();

  /** Merges the history's small files once the batches are sealed (src/history/merge.ts). */
  async function mergeFiles(): Promise<void> {
    if (summary.history_error !== null || summary.replica_error !== null) return;
    try {
      summary.merge = await mergeSmallPartitions(w, dir, {
        now,
        memoryMb: options.memoryMb ?? 256,
        policy: options.mergePolicy,
        replica: options.replica,
        onStep: step,
      });
    } catch (error) {
      // The files stay as they are, listed and whole: the next run tries again.
      if (isDiskFull(error)) {
        summary.history_error = `the disk holding the fill history (${dir}) is full: its small files were not merged`;
      } else if (error instanceof MergeReplicaError) {
        summary.replica_error = error.message;
      } else throw error;
    }
  }

  /** The summary, recorded for `status`. */
  function recorded(): CompactionSummary {
    w.prepare(
      "INSERT INTO compaction_runs (started_at, finished_at, summary) VALUES (?, ?, ?)",
    ).run(now, now, JSON.stringify(finish()));
    return summary;
  }

  function compactBatch(markets: number[], sealed: WrittenPartition | null): void {
    w.transaction(() => {
      const touched = new Set<number>();
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
      const id = sealed
        ? Number(
            listPartition.run(
              sealed.file,
              sealed.fills,
              sealed.bytes,
              sealed.minTs,
              sealed.maxTs,
              now,
            ).lastInsertRowid,
          )
        : null;
      if (id !== null && sealed) listTxKeys(w, id, sealed.txKeys);
      step("in-transaction");
      for (const marketId of markets) {
        // One bet per wallet in the market: its holders are its frozen bets.
        const holderIds = holders.all(marketId);
        for (const walletId of holderIds) touched.add(walletId);
        frozen += holderIds.length;
      }
      // Flagged first, so the timing below counts the batch's trades as sealed ones; unflagged
      // again if the transaction fails.
      const flagged = markets.flatMap((marketId) => ctx.market(marketId) ?? []);
      for (const info of flagged) info.compacted = true;
      try {
        const batch = new Set(markets);
        // The wallets' timing buckets: their fills outside compacted markets and their trades in
        // them (sql/0033), this batch's taken from its fills before they are deleted.
        for (const walletId of touched) {
          const fills = (walletFills.all(walletId) as FillRow[]).map(toFill);
          const trades = keepRecent(sealedOf(walletId), tradesToSeal(fills, ctx, batch));
          if (trades.length > 0) storeSealed.run(walletId, packSealedTrades(trades));
          writer.timing(walletId, timingOf(fills, ctx, trades));
        }
        for (const marketId of markets) {
          kept += keptFills.get(marketId) ?? 0;
          deleted += deleteFills.run(marketId).changes;
          markCompacted.run(now, marketId);
          if (id !== null && sealed?.perMarket.has(marketId)) markSealed.run(id, marketId);
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
