/**
 * Which SQL statements a running process prepares again, and how often: gdb attached to the
 * process breaks on SQLite's sqlite3Reprepare (in better-sqlite3's addon, whose symbols ship in
 * the prebuilt binary) and notes each statement's text.
 *
 * better-sqlite3 clears a statement's bindings after every run, which makes SQLite prepare again
 * any statement whose plan looked at a bound value: such a statement pays a parse and a plan on
 * every call (docs/architecture.md, "Bound parameters the planner reads"). Used by
 * `npm run reprepares` (bench/reprepares.ts) and by test/db/statement-reprepare.test.ts.
 *
 * Needs gdb (Debian's `gdb` package) and ptrace rights on the process (root, or the same user
 * with kernel.yama.ptrace_scope = 0). Each hit stops the process briefly.
 */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const HIT = "REPREPARE\t";
const END = "END-REPREPARE";
const READY = "WATCHING-REPREPARES";
/** gdb's name for the register of a call's first argument, on the processors Node ships for. */
const FIRST_ARGUMENT = process.arch === "arm64" ? "$x0" : "$rdi";

/** Whether gdb is on PATH. */
export function gdbAvailable(): boolean {
  return spawnSync("gdb", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Whether gdb, started from this process, may attach back to it:
 * gdb is installed and Yama lets it (root below scope 3, anyone at scope 0, or no Yama).
 */
export function canWatchOwnProcess(): boolean {
  if (!gdbAvailable()) return false;
  let scope = 0;
  try {
    scope = Number(readFileSync("/proc/sys/kernel/yama/ptrace_scope", "utf8").trim());
  } catch {
    return true;
  }
  return scope === 0 || (process.getuid?.() === 0 && scope < 3);
}

/** The statements' texts (whitespace squeezed) → how many times each was prepared again. */
export type Reprepares = Map<string, number>;

export interface RepreparesWatch {
  /** Detaches gdb (the process runs on) and counts what it saw. */
  stop(): Promise<Reprepares>;
}

/** Attaches gdb to `pid` and resolves once its breakpoint is armed. */
export async function watchReprepares(pid: number, timeoutMs = 60_000): Promise<RepreparesWatch> {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-reprepares-"));
  const commands = join(dir, "commands");
  const out = join(dir, "out");
  writeFileSync(
    commands,
    [
      "set pagination off",
      "set confirm off",
      "break sqlite3Reprepare",
      "commands",
      "silent",
      // The first argument's register holds the statement being prepared again, whose text
      // sqlite3_sql returns.
      `printf "${HIT}%s\\n${END}\\n", (char*)sqlite3_sql(${FIRST_ARGUMENT})`,
      "continue",
      "end",
      `echo ${READY}\\n`,
      "continue",
    ].join("\n"),
  );
  // Into a file, not a pipe: when the watched process is this one, a full pipe that it cannot
  // drain while stopped at a breakpoint would hold gdb and the process both.
  const fd = openSync(out, "w");
  const gdb = spawn("gdb", ["-q", "-batch", "-x", commands, "-p", String(pid)], {
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  const exited = once(gdb, "exit");
  const deadline = Date.now() + timeoutMs;
  while (!readFileSync(out, "utf8").includes(READY)) {
    if (gdb.exitCode !== null || Date.now() > deadline) {
      gdb.kill("SIGKILL");
      const text = readFileSync(out, "utf8");
      rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `gdb did not attach to ${pid}: ${text.trim().split("\n").slice(-3).join(" / ")}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    async stop() {
      // SIGINT stops the process inside gdb; batch mode then ends, and gdb detaches.
      gdb.kill("SIGINT");
      await exited;
      const text = readFileSync(out, "utf8");
      rmSync(dir, { recursive: true, force: true });
      return countHits(text);
    },
  };
}

/** Each hit's statement text (it may span lines), squeezed, counted. */
function countHits(text: string): Reprepares {
  const counts: Reprepares = new Map();
  let sql: string[] | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith(HIT)) sql = [line.slice(HIT.length)];
    else if (line === END && sql !== null) {
      const key = sql.join(" ").replace(/\s+/g, " ").trim();
      counts.set(key, (counts.get(key) ?? 0) + 1);
      sql = null;
    } else if (sql !== null) sql.push(line);
  }
  return counts;
}
