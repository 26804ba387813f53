import { existsSync, statSync } from "node:fs";
import type { Command } from "commander";
import type { Config } from "../../src/config";
import { bulkCacheMb } from "../../src/db/cache";
import { isStorageFull } from "../../src/db/storage";
import { historyReplica } from "../../src/history/replica";
import {
  formatLineError,
  type ImportProgress,
  type ImportResult,
  importJsonl,
  type LineError,
} from "../../src/ingest/import";
import { LINE_TYPES } from "../../src/ingest/lines";
import { heldFillsWithin, type PastMarketsOptions } from "../../src/ingest/past-markets";
import { fileSource, type ImportSource, spoolStream } from "../../src/ingest/sources";
import { tabularFormatOf, tabularSource } from "../../src/ingest/tabular";
import { type CommonOptions, table, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

/** Bad lines printed per file; the count always covers all of them. */
const PRINTED_ERRORS = 50;

interface ImportOptions extends CommonOptions {
  skipInvalid?: boolean;
}

/** One file's outcome, as --json prints it. */
interface FileReport {
  file: string;
  status: "imported" | "refused";
  reason: string | null;
  rows: number;
  counts: Record<string, { new: number; updated: number; present: number }> | null;
  /** Of the new trades, past markets' written straight to the fill history. */
  history: { markets: number; fills: number } | null;
  rejected: number;
  rejects_path: string | null;
  error_count: number;
  errors: LineError[];
  seconds: number | null;
  rows_per_second: number | null;
  /** Refused because the disk holding the database is full: import it again once it has room. */
  disk_full: boolean;
}

export function registerImport(program: Command): void {
  withDbOption(program.command("import"))
    .description(
      "import interchange files: JSONL, or Parquet and CSV (by the name's .parquet or .csv), JSONL and CSV also gzip (.gz) or zstd (.zst) compressed; each file is imported whole or not at all (- reads JSONL from stdin)",
    )
    .argument("<files...>", "JSONL, .parquet or .csv files; - reads JSONL from standard input")
    .option(
      "--skip-invalid",
      "import the valid lines and copy the invalid ones to FILE.rejects.jsonl (stdin.rejects.jsonl for -)",
    )
    .option("--json", "print JSON")
    .action((files: string[], options: ImportOptions) =>
      withApp(options, async ({ db, app }) => {
        const reports: FileReport[] = [];
        let diskFull = false;
        for (const file of files) {
          if (diskFull) {
            // Each file would roll back alike: they are left for the run after space is freed.
            const report = refusedReport(file, `${file}: not tried, the disk is full`, [], 0);
            reports.push(report);
            if (!options.json) printHuman(report, files.length > 1);
            continue;
          }
          const report = await importOne(file, (source, onProgress) =>
            // The app's hooks: signal detection and the webhook outbox see every new trade.
            importJsonl(
              {
                db,
                clock: app.deps.clock,
                hooks: app.ingestHooks,
                cacheMb: bulkCacheMb(app.deps.config.memoryMb),
                pastMarkets: pastMarketsOf(app.deps.config),
              },
              source,
              {
                skipInvalid: options.skipInvalid,
                rejectsPath: file === "-" ? "stdin.rejects.jsonl" : undefined,
                onProgress,
              },
            ),
          );
          reports.push(report);
          diskFull = report.disk_full;
          if (!options.json) printHuman(report, files.length > 1);
        }
        if (options.json) process.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
        const refused = reports.filter((r) => r.status === "refused");
        if (refused.length === 1 && reports.length === 1) throw new CliError(refused[0]!.reason!);
        if (refused.length > 0) {
          throw new CliError(
            `${refused.length} of ${reports.length} files refused (${refused.map((r) => r.file).join(", ")}); the others were imported`,
          );
        }
      }),
    );
}

/**
 * With fill retention on, an import writes the markets it would compact at once straight to the
 * fill history (src/ingest/past-markets.ts), and with a replica puts the file there before it
 * lists it, as a compaction does.
 */
function pastMarketsOf(config: Config): PastMarketsOptions | null {
  if (config.fillRetentionMs === null) return null;
  return {
    retentionMs: config.fillRetentionMs,
    memoryMb: HISTORY_WRITE_MB,
    maxHeldFills: heldFillsWithin(config.memoryMb),
    ...(config.replica ? { replica: historyReplica(config.replica) } : {}),
  };
}

/** DuckDB's memory cap while an import writes its file of the history: 1M fills within 1 GB. */
const HISTORY_WRITE_MB = 128;

async function importOne(
  file: string,
  run: (source: ImportSource, onProgress?: (p: ImportProgress) => void) => Promise<ImportResult>,
): Promise<FileReport> {
  if (file !== "-" && !existsSync(file)) return refusedReport(file, `${file}: no such file`, [], 0);
  if (file !== "-" && !statSync(file).isFile()) {
    return refusedReport(file, `${file}: not a file (a directory?): name the files in it`, [], 0);
  }
  if (/\.parquet\.(gz|zst)$/i.test(file)) {
    // Parquet compresses its own columns: a compressed Parquet file would be read as JSONL.
    const reason = `${file}: a Parquet file is compressed inside; decompress it and import the .parquet`;
    return refusedReport(file, reason, [], 0);
  }
  const spooled = file === "-" ? await spoolStream(process.stdin, "stdin") : null;
  const format = file === "-" ? null : tabularFormatOf(file);
  const source = spooled?.source ?? (format ? tabularSource(file, format) : fileSource(file));
  const bar = process.stderr.isTTY ? progressBar(source) : undefined;
  try {
    let result: ImportResult;
    try {
      result = await run(source, bar?.update);
    } catch (error) {
      if (!isStorageFull(error)) throw error;
      // The file's one transaction rolled back whole (src/ingest/import.ts).
      const code = (error as { code?: string }).code;
      return {
        ...refusedReport(
          source.name,
          `${source.name}: refused, the disk holding the database is full (${code}); nothing was imported from it: free space and import it again`,
          [],
          0,
        ),
        disk_full: true,
      };
    }
    bar?.clear();
    if (!result.ok)
      return refusedReport(source.name, result.reason, result.errors, result.errorCount);
    const s = result.value;
    return {
      file: source.name,
      status: "imported",
      reason: null,
      rows: s.rows,
      counts: s.counts,
      history: s.history,
      rejected: s.rejected,
      rejects_path: s.rejectsPath,
      error_count: s.rejected,
      errors: s.errors,
      seconds: s.seconds,
      rows_per_second: s.rowsPerSecond,
      disk_full: false,
    };
  } finally {
    bar?.clear();
    spooled?.cleanup();
  }
}

function refusedReport(
  file: string,
  reason: string,
  errors: LineError[],
  errorCount: number,
): FileReport {
  return {
    file,
    status: "refused",
    reason,
    rows: 0,
    counts: null,
    history: null,
    rejected: 0,
    rejects_path: null,
    error_count: errorCount,
    errors,
    seconds: null,
    rows_per_second: null,
    disk_full: false,
  };
}

function printHuman(r: FileReport, severalFiles: boolean): void {
  printLineErrors(r);
  if (r.status === "refused") {
    // With one file its headline is the command's final error line; with several, each file
    // says what happened to it and the final line sums up.
    if (severalFiles) process.stderr.write(`${r.reason}\n`);
    return;
  }
  const counts = r.counts!;
  const rows = LINE_TYPES.filter((t) => {
    const c = counts[t]!;
    return c.new + c.updated + c.present > 0;
  }).map((t) => ({ type: t, ...counts[t]! }));
  const rate = Math.round(r.rows_per_second ?? 0).toLocaleString("en-US");
  const lines = [
    `${r.file}: ${r.rows.toLocaleString("en-US")} rows in ${r.seconds!.toFixed(2)} s (${rate} rows/s)`,
    indent(table(rows, ["type", "new", "updated", "present"])),
  ];
  if (r.history && r.history.fills > 0) {
    const { markets, fills } = r.history;
    lines.push(
      `  ${fills.toLocaleString("en-US")} of the new trades, in ${markets.toLocaleString("en-US")} past market(s), went straight to the fill history`,
    );
  }
  if (r.rejected > 0) {
    lines.push(`  skipped ${r.rejected} invalid line(s); copied to ${r.rejects_path}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

function printLineErrors(r: FileReport): void {
  if (r.errors.length === 0) return;
  const shown = r.errors.slice(0, PRINTED_ERRORS).map((e) => formatLineError(r.file, e));
  const more = r.error_count - shown.length;
  if (more > 0) shown.push(`${r.file}: ... and ${more.toLocaleString("en-US")} more`);
  process.stderr.write(`${shown.join("\n")}\n`);
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

/** A one-line progress display on an interactive stderr; absent when stderr is piped. */
function progressBar(source: ImportSource) {
  let shown = false;
  return {
    update(p: ImportProgress) {
      const rate = p.seconds > 0 ? Math.round(p.rows / p.seconds) : 0;
      const share = source.size
        ? ` ${Math.min(100, (100 * p.bytes) / source.size).toFixed(0)}%`
        : "";
      const building = p.building ? `; building ${p.building}` : "";
      process.stderr.write(
        `\r\x1b[K${source.name}:${share} ${p.rows.toLocaleString("en-US")} rows, ${rate.toLocaleString("en-US")} rows/s${building}`,
      );
      shown = true;
    },
    clear() {
      if (shown) process.stderr.write("\r\x1b[K");
      shown = false;
    },
  };
}
