import type { Clock } from "../clock";
import { DEFAULT_CACHE_MB, withCacheMb } from "../db/cache";
import type { Db } from "../db/open";
import { deferFillIndexes } from "./deferred-fill-indexes";
import { createFileImport, type ImportCounts } from "./file-import";
import type { IngestHooks } from "./ingest";
import {
  createPastMarkets,
  type PastMarketsOptions,
  type PastMarketsSummary,
  PastMarketsTooLarge,
  reserveHistoryFile,
} from "./past-markets";
import { createRejectsFile, type RejectsFile } from "./rejects";
import type { ImportSource } from "./sources";

/**
 * `importJsonl` stores one interchange file (docs/import.md) as one all-or-nothing unit.
 *
 * Design: the whole file is read once, streaming, inside ONE write transaction (BEGIN
 * IMMEDIATE ... COMMIT). Each valid line is written as it is read, trades and transfers in
 * batches through the one ingest path (src/ingest/ingest.ts). When the file is refused (any
 * invalid line without --skip-invalid, or an empty file) the transaction is rolled back; a
 * crash or kill mid-file leaves an uncommitted transaction that SQLite discards on the next
 * open, so the database is exactly as it was before the file either way. One pass with a
 * rollback, rather than a validating pass and then an importing pass, parses each line once;
 * lines naming a market defined further down are the only ones read twice.
 *
 * Fills are immutable chain records: a fill whose key is already stored counts as "present"
 * and is left as stored, whatever the line says. Markets, wallets and labels are facts that can
 * change: a line that differs from the stored row updates it ("updated").
 *
 * Memory does not grow with the number of trades or transfers, but for past markets' trades,
 * held until the file is read (src/ingest/past-markets.ts): a batch is a few thousand rows,
 * and SQLite spills the transaction's dirty pages to the WAL once its page cache is full. The
 * checks that span lines use the database itself rather than sets in memory: a duplicate fill
 * is one whose key is already stored with an id above the table's maximum at the start of the
 * file, and duplicate markets, resolutions, wallets and labels are found through the
 * `import_seen` table, emptied before commit. What does grow is small: a cache of market ids
 * (one entry per market the file names), the line numbers of lines that name a market defined
 * further down (read a second time at the end, once their market exists), and at most
 * MAX_REPORTED_ERRORS stored reasons.
 *
 * The transaction stays open across the awaits that read the file: run imports in a process
 * (the CLI) where nothing else writes through the same connection meanwhile. Other processes'
 * writers wait for the lock (busy_timeout) while a large file imports.
 */

export interface ImportDeps {
  db: Db;
  clock: Clock;
  /** Passed to the ingest path; see IngestHooks. */
  hooks?: IngestHooks;
  /** The writer's page cache during the import, MB (bulkCacheMb); the connection's otherwise. */
  cacheMb?: number;
  /**
   * With fill retention on: fills of markets it would compact at once go straight to the fill
   * history (src/ingest/past-markets.ts). Null or absent: every fill is stored in `fills`.
   */
  pastMarkets?: PastMarketsOptions | null;
  /**
   * Into an empty store, build `fills_by_tx` and `fills_by_time` after the load (default true).
   * False keeps every index for the whole file: the tests compare the two.
   */
  deferFillIndexes?: boolean;
}

export interface ImportOptions {
  /** Import the valid lines, skip the invalid ones and copy them to `rejectsPath`. */
  skipInvalid?: boolean;
  /** Where skipped lines go; default `<source name>.rejects.jsonl`. */
  rejectsPath?: string;
  onProgress?(progress: ImportProgress): void;
}

export interface ImportProgress {
  /** Lines read so far (blank ones included) and the bytes they held. */
  lines: number;
  bytes: number;
  /** Non-blank lines handled so far. */
  rows: number;
  seconds: number;
  /** Set after the last line while an empty store's deferred fill index is built. */
  building?: string;
}

export interface LineError {
  line: number;
  reason: string;
}

export interface ImportSummary {
  source: string;
  /** Non-blank lines in the file. */
  rows: number;
  /** Per line type: stored as new, changed a stored row, or already stored as given. */
  counts: ImportCounts;
  /** Of the new trades, those of past markets written straight to the fill history. */
  history: PastMarketsSummary;
  /** Invalid lines skipped (only with skipInvalid). */
  rejected: number;
  /** The file the skipped lines were copied to, or null when none were skipped. */
  rejectsPath: string | null;
  /** Why lines were skipped, by line (the first MAX_REPORTED_ERRORS). */
  errors: LineError[];
  seconds: number;
  rowsPerSecond: number;
}

/** A refused file: `reason` is one line; `errors` every bad line (the first MAX_REPORTED_ERRORS). */
export type ImportResult =
  | { ok: true; value: ImportSummary }
  | { ok: false; reason: string; errors: LineError[]; errorCount: number };

export const MAX_REPORTED_ERRORS = 1000;
const PROGRESS_EVERY = 16_384;

export function formatLineError(source: string, error: LineError): string {
  return `${source}:${error.line}: ${error.reason}`;
}

export function importJsonl(
  deps: ImportDeps,
  source: ImportSource,
  options: ImportOptions = {},
): Promise<ImportResult> {
  return withCacheMb(deps.db.writer, deps.cacheMb, () => importFile(deps, source, options));
}

async function importFile(
  deps: ImportDeps,
  source: ImportSource,
  options: ImportOptions,
): Promise<ImportResult> {
  const started = performance.now();
  const writer = deps.db.writer;
  if (writer.inTransaction) throw new Error("importJsonl runs its own transaction");
  const skipInvalid = options.skipInvalid ?? false;
  const rejects: RejectsFile | null = skipInvalid
    ? createRejectsFile(options.rejectsPath ?? `${source.name}.rejects.jsonl`)
    : null;

  // Every reference the file's rows make (a fill's wallet and market, a signal's fill) is to a
  // row this path has just looked up or written in the same transaction, so SQLite's check of
  // each one (two parent lookups per fill, a tenth of the import's time) is left off for the
  // file, as the migrations do. It can only change outside a transaction; it is put back after.
  const foreignKeys = writer.pragma("foreign_keys", { simple: true }) as number;
  writer.pragma("foreign_keys = OFF");
  // With a replica, the history file's names are recorded before the transaction (past-markets.ts).
  const reserved = deps.pastMarkets?.replica ? reserveHistoryFile(writer, deps.clock.now()) : null;
  writer.exec("BEGIN IMMEDIATE");
  try {
    // Into an empty store, fills_by_tx and fills_by_time are built after the load
    // (src/ingest/deferred-fill-indexes.ts). Its key table takes at most half the bulk cache:
    // 128 MB, 12.5M fills, with the default memory cap.
    const deferred =
      deps.deferFillIndexes === false
        ? null
        : deferFillIndexes(writer, ((deps.cacheMb ?? DEFAULT_CACHE_MB) / 2) * 2 ** 20);
    const file = createFileImport(deps, {
      keepHooksWhile: () => skipInvalid || file.errorCount === 0,
      onReject: (_line, text) => rejects?.write(text),
      maxErrors: MAX_REPORTED_ERRORS,
      deferred,
      past: deps.pastMarkets
        ? createPastMarkets(deps.db, deps.clock.now(), deps.pastMarkets, reserved)
        : null,
    });
    let lines = 0;
    let bytes = 0;
    const progress = (): ImportProgress => ({
      lines,
      bytes,
      rows: file.rows,
      seconds: (performance.now() - started) / 1000,
    });
    try {
      for await (const text of source.open()) {
        lines++;
        bytes += text.length + 1;
        file.handle(text, lines);
        if (lines % PROGRESS_EVERY === 0) options.onProgress?.(progress());
      }
    } catch (error) {
      if (!(error instanceof PastMarketsTooLarge)) throw error;
      return refuse(`${source.name}: ${error.message}`, [], 0);
    }
    file.flush();
    await file.finish(source);
    options.onProgress?.(progress());

    if (file.rows === 0) {
      return refuse(`${source.name}: empty file: no lines to import`, [], 0);
    }
    if (file.errorCount > 0 && !skipInvalid) {
      const count = file.errorCount;
      return refuse(
        `${source.name}: refused, ${count} invalid line${count === 1 ? "" : "s"}; nothing was imported from it`,
        file.errors(),
        count,
      );
    }
    const history = await file.writePast();
    if (!history.ok) return refuse(`${source.name}: refused, ${history.reason}`, [], 0);
    file.close();
    if (deferred?.active) {
      options.onProgress?.({ ...progress(), building: "the fill indexes" });
      deferred.build();
    }
    writer.exec("COMMIT");
    const rejectsPath = rejects?.commit() ?? null;
    const seconds = (performance.now() - started) / 1000;
    return {
      ok: true,
      value: {
        source: source.name,
        rows: file.rows,
        counts: file.counts,
        history: history.value,
        rejected: file.errorCount,
        rejectsPath,
        errors: file.errors(),
        seconds,
        rowsPerSecond: seconds > 0 ? file.rows / seconds : file.rows,
      },
    };
  } finally {
    if (writer.inTransaction) writer.exec("ROLLBACK");
    writer.pragma(`foreign_keys = ${foreignKeys}`);
    rejects?.discard();
  }

  function refuse(reason: string, errors: LineError[], errorCount: number): ImportResult {
    writer.exec("ROLLBACK");
    return { ok: false, reason, errors, errorCount };
  }
}
