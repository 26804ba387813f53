import type { MigrationProgress } from "../src/migrations/migrate";

/** Plain lines (stderr piped) at most this often. */
const LINE_EVERY_MS = 10_000;

/** One report of a long task: `done` of `total` units of the task named `task`. */
export interface ProgressReport {
  /** What is being done, as a line starts it: "migrating 0010_compact_fills.sql copy_fills". */
  task: string;
  done: number;
  total: number;
  /** The units counted, plural: "rows", "markets". */
  unit: string;
}

/**
 * Progress of a long task on stderr: a bar with an ETA redrawn in place on a terminal, a plain
 * line every ten seconds otherwise (logs, `docker logs`). A task that finishes within its first
 * report prints nothing; a new task name starts a new clock.
 */
export function progressReporter(stream: NodeJS.WriteStream = process.stderr) {
  let started = 0;
  let lastLine = 0;
  let task = "";
  let drawn = false;
  return {
    update(p: ProgressReport) {
      const now = performance.now();
      if (p.task !== task) {
        task = p.task;
        started = now;
        lastLine = now;
        return;
      }
      const share = p.total > 0 ? p.done / p.total : 1;
      const seconds = (now - started) / 1000;
      const eta = share > 0 ? Math.round((seconds * (1 - share)) / share) : null;
      const counts = `${p.done.toLocaleString("en-US")} of ${p.total.toLocaleString("en-US")} ${p.unit}`;
      const percent = `${(100 * share).toFixed(0)}%`;
      const left = eta === null ? "" : `, about ${eta} s left`;
      if (stream.isTTY) {
        const width = 30;
        const filled = Math.round(width * share);
        stream.write(
          `\r\x1b[K${p.task} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${percent} ${counts}${left}`,
        );
        drawn = true;
      } else if (now - lastLine >= LINE_EVERY_MS || p.done === p.total) {
        lastLine = now;
        stream.write(`${p.task}: ${percent}, ${counts}${left}\n`);
      }
    },
    done() {
      if (drawn) stream.write("\r\x1b[K");
      drawn = false;
    },
  };
}

/** Runs `work` with a reporter on stderr, cleared when it ends. */
export function withProgress<T>(work: (report: (p: ProgressReport) => void) => T): T {
  const reporter = progressReporter();
  let clear = true;
  try {
    const result = work((p) => reporter.update(p));
    if (result instanceof Promise) {
      clear = false;
      return result.finally(() => reporter.done()) as T;
    }
    return result;
  } finally {
    if (clear) reporter.done();
  }
}

/** A migration step's progress as a report: rows copied. */
export function migrationReport(p: MigrationProgress): ProgressReport {
  return { task: `migrating ${p.migration} ${p.step}`, done: p.done, total: p.total, unit: "rows" };
}

/** `migrate` with progress shown as above. */
export function withMigrationProgress<T>(
  run: (onProgress: (p: MigrationProgress) => void) => T,
): T {
  return withProgress((report) => run((p) => report(migrationReport(p))));
}
