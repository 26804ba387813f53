import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Where every benchmark's figures go: the latest report of each bench as `<bench>.json`, and
 * one dated line per run appended to `history.jsonl`, the machine's own record of what it
 * measured and at which commit (bench/results/ is not committed). The docs keep one current
 * figure each; the history of a figure is here and in the commit messages that moved it.
 */

const ROOT = new URL("../..", import.meta.url).pathname;
export const RESULTS_DIR = join(ROOT, "bench", "results");
export const HISTORY_FILE = "history.jsonl";

/** One line of history.jsonl. */
export interface HistoryEntry {
  /** When the run ended (ISO 8601, UTC). */
  date: string;
  /** The checkout's HEAD, or null outside a git checkout. */
  commit: string | null;
  /** True when the working tree had uncommitted changes: the figures are not the commit's. */
  dirty: boolean;
  bench: string;
  /** The bench's command-line arguments, so a run can be repeated. */
  args: string[];
  figures: unknown;
}

export interface Revision {
  commit: string | null;
  dirty: boolean;
}

/** The checkout's commit and whether it has uncommitted changes (null outside git). */
export function currentRevision(cwd: string = ROOT): Revision {
  const git = (args: string[]) =>
    execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    const commit = git(["rev-parse", "HEAD"]).trim();
    const dirty = git(["status", "--porcelain", "--untracked-files=no"]).trim() !== "";
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: false };
  }
}

export interface RecordOptions {
  /** Defaults to bench/results/. */
  dir?: string;
  /** Defaults to the time of the call. */
  now?: Date;
  /** Defaults to the checkout's (currentRevision). */
  revision?: Revision;
  /** Defaults to process.argv after the script. */
  args?: string[];
}

/**
 * Writes `report` to `<dir>/<bench>.json` (replacing the previous run's) and appends a dated line
 * with the commit and the figures to `<dir>/history.jsonl`. Returns both paths.
 */
export function recordResults(
  bench: string,
  report: unknown,
  options: RecordOptions = {},
): { report: string; history: string } {
  if (!/^[a-z][a-z0-9-]*$/.test(bench)) throw new Error(`not a bench name: ${bench}`);
  const dir = options.dir ?? RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  const reportPath = join(dir, `${bench}.json`);
  writeFileSync(reportPath, `${JSON.stringify(report, null, 2)}\n`);
  const revision = options.revision ?? currentRevision();
  const entry: HistoryEntry = {
    date: (options.now ?? new Date()).toISOString(),
    commit: revision.commit,
    dirty: revision.dirty,
    bench,
    args: options.args ?? process.argv.slice(2),
    figures: report,
  };
  const historyPath = join(dir, HISTORY_FILE);
  // Opened for appending (O_APPEND): each run adds its line at the end, whoever wrote before.
  appendFileSync(historyPath, `${JSON.stringify(entry)}\n`);
  return { report: reportPath, history: historyPath };
}
