import type { MigrationProgress } from "../src/migrations/migrate";

/** Plain lines (stderr piped) at most this often. */
const LINE_EVERY_MS = 10_000;

/**
 * Progress of a long migration step on stderr: a bar with an ETA redrawn in place on a
 * terminal, a plain line every ten seconds otherwise (logs, `docker logs`). Steps that finish
 * within the first report print nothing.
 */
export function migrationProgress(stream: NodeJS.WriteStream = process.stderr) {
  let started = 0;
  let lastLine = 0;
  let step = "";
  let drawn = false;
  return {
    update(p: MigrationProgress) {
      const now = performance.now();
      const name = `${p.migration} ${p.step}`;
      if (name !== step) {
        step = name;
        started = now;
        lastLine = now;
        return;
      }
      const share = p.total > 0 ? p.done / p.total : 1;
      const seconds = (now - started) / 1000;
      const eta = share > 0 ? Math.round((seconds * (1 - share)) / share) : null;
      const counts = `${p.done.toLocaleString("en-US")} of ${p.total.toLocaleString("en-US")} rows`;
      const percent = `${(100 * share).toFixed(0)}%`;
      const left = eta === null ? "" : `, about ${eta} s left`;
      if (stream.isTTY) {
        const width = 30;
        const filled = Math.round(width * share);
        stream.write(
          `\r\x1b[Kmigrating ${name} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${percent} ${counts}${left}`,
        );
        drawn = true;
      } else if (now - lastLine >= LINE_EVERY_MS || p.done === p.total) {
        lastLine = now;
        stream.write(`migrating ${name}: ${percent}, ${counts}${left}\n`);
      }
    },
    done() {
      if (drawn) stream.write("\r\x1b[K");
      drawn = false;
    },
  };
}

/** `migrate` with progress shown as above. */
export function withMigrationProgress<T>(
  run: (onProgress: (p: MigrationProgress) => void) => T,
): T {
  const progress = migrationProgress();
  try {
    return run((p) => progress.update(p));
  } finally {
    progress.done();
  }
}
