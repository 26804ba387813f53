import { rmSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import type { Connection } from "../db/open";
import { sqlString, withEngine } from "./engine";
import type { HistoryReplica } from "./replica";
import { newPartitionFile, PARQUET, type Partition, partitions, placeFile } from "./store";
import { listTxKeys } from "./tx-keys";

/**
 * Merging the history's small files into larger ones (docs/architecture.md, "Where data lives").
 * Each compaction writes one file a batch, so a scheduled compaction after every refresh lists a
 * few small files a day: thousands a year, each one more footer to read and one more set of keys
 * to search for a hash. A merge rewrites a run of small files as one, sorted as a seal sorts
 * (market, time, id), and swaps it in atomically: the new file is written and synced first, then
 * one transaction lists it, points its markets at it and unlists the old ones. Listed files never
 * change; an unlisted one is removed by a later seal an hour after it was unlisted
 * (removeUnlisted), so a reader that chose it from an older snapshot still finds it.
 */

export interface MergePolicy {
  /** A file with fewer fills than this is small. */
  smallFills: number;
  /** A merged file holds at most this many fills. */
  mergedFills: number;
  /** A merge runs once at least this many small files are listed. */
  mergeAt: number;
}

export const MERGE_POLICY: MergePolicy = {
  smallFills: 1_000_000,
  mergedFills: 4_000_000,
  mergeAt: 8,
};

export interface MergeSummary {
  /** Listed files merged, and the files they became. */
  files_merged: number;
  merged_into: number;
  fills: number;
  bytes_before: number;
  bytes_after: number;
}

/** The points of a merge a crash test stops at (test/history/merge.test.ts). */
export type MergeStep = "merge-written" | "merge-committed";

/** A run whose files another merge took first: nothing is listed, its file is removed. */
class StaleMerge extends Error {}

/** The replica refused the merged file: nothing is listed, the files stay as they were. */
export class MergeReplicaError extends Error {}

/**
 * Merges runs of small listed files, oldest first, when at least `policy.mergeAt` are listed.
 * `db` is the writer connection; `dir` the history's folder.
 */
export async function mergeSmallPartitions(
  db: Connection,
  dir: string,
  options: {
    now: number;
    memoryMb: number;
    policy?: MergePolicy;
    replica?: HistoryReplica;
    onStep?: (step: MergeStep) => void;
  },
): Promise<MergeSummary> {
  const policy = options.policy ?? MERGE_POLICY;
  const summary: MergeSummary = {
    files_merged: 0,
    merged_into: 0,
    fills: 0,
    bytes_before: 0,
    bytes_after: 0,
  };
  const small = partitions(db).filter((p) => p.fills < policy.smallFills);
  if (small.length < policy.mergeAt) return summary;
  for (const run of runsOf(small, policy.mergedFills)) {
    const fills = run.reduce((n, p) => n + p.fills, 0);
    const file = newPartitionFile(options.now);
    const path = join(dir, file);
    const sources = `read_parquet([${run.map((p) => sqlString(join(dir, p.file))).join(", ")}])`;
    const written = await withEngine({ memoryMb: options.memoryMb, threads: 1 }, async (duck) => {
      await placeFile(path, (partial) =>
        duck.run(
          `COPY (SELECT * FROM ${sources} ORDER BY market_id, ts, id) TO ${sqlString(partial)} ${PARQUET}`,
        ),
      );
      const merged = `read_parquet(${sqlString(path)})`;
      const [totals] = (
        await duck.runAndReadAll(`SELECT count(*), min(ts), max(ts) FROM ${merged}`)
      ).getRowsJS() as [bigint, bigint, bigint][];
      const keys = (
        await duck.runAndReadAll(
          `SELECT DISTINCT ('0x' || left(hex(tx_hash), 8))::UBIGINT FROM ${merged}`,
        )
      )
        .getRowsJS()
        .map((r) => Number(r[0]));
      return {
        count: Number(totals![0]),
        minTs: Number(totals![1]),
        maxTs: Number(totals![2]),
        keys,
      };
    });
    if (written.count !== fills) {
      rmSync(path, { force: true });
      throw new Error(
        `merging ${run.length} history files gave ${written.count} fills, not the ${fills} they list: a file is damaged (smartmoney status names it)`,
      );
    }
    const bytes = statSync(path).size;
    options.onStep?.("merge-written");
    if (options.replica) {
      try {
        await options.replica.put(file, path);
      } catch (error) {
        rmSync(path, { force: true });
        throw new MergeReplicaError(`${options.replica.describe}: ${(error as Error).message}`);
      }
    }
    // An unlisted file goes once an hour old by its time (removeUnlisted): from now, not from
    // when it was sealed, so a reader that chose it from an older snapshot (an export, a
    // backtest reading for minutes) still finds it. Touching a listed file changes no byte.
    const touched = new Date();
    for (const p of run) utimesSync(join(dir, p.file), touched, touched);
    try {
      db.transaction(() => {
        const ids = run.map((p) => p.id);
        const listed = db
          .prepare(
            `SELECT count(*) FROM history_partitions WHERE id IN (${ids.map(() => "?").join(", ")})`,
          )
          .pluck()
          .get(...ids) as number;
        if (listed !== ids.length) throw new StaleMerge("another merge took these files");
        const id = Number(
          db
            .prepare(
              `INSERT INTO history_partitions (file, fills, bytes, min_ts, max_ts, created_at)
               VALUES (?, ?, ?, ?, ?, ?)`,
            )
            .run(file, fills, bytes, written.minTs, written.maxTs, options.now).lastInsertRowid,
        );
        listTxKeys(db, id, written.keys);
        const some = ids.map(() => "?").join(", ");
        db.prepare(
          `UPDATE history_markets SET partition_id = ? WHERE partition_id IN (${some})`,
        ).run(id, ...ids);
        db.prepare(`DELETE FROM history_tx_keys WHERE partition_id IN (${some})`).run(...ids);
        db.prepare(`DELETE FROM history_partitions WHERE id IN (${some})`).run(...ids);
      }).immediate();
    } catch (error) {
      rmSync(path, { force: true });
      if (error instanceof StaleMerge) continue;
      throw error;
    }
    options.onStep?.("merge-committed");
    summary.files_merged += run.length;
    summary.merged_into += 1;
    summary.fills += fills;
    summary.bytes_before += run.reduce((n, p) => n + p.bytes, 0);
    summary.bytes_after += bytes;
  }
  return summary;
}

/** Consecutive files (by id) grouped up to `maxFills` a group; groups of one are left alone. */
function runsOf(small: readonly Partition[], maxFills: number): Partition[][] {
  const runs: Partition[][] = [];
  let run: Partition[] = [];
  let fills = 0;
  for (const p of small) {
    if (run.length > 0 && fills + p.fills > maxFills) {
      runs.push(run);
      run = [];
      fills = 0;
    }
    run.push(p);
    fills += p.fills;
  }
  runs.push(run);
  return runs.filter((r) => r.length > 1);
}
