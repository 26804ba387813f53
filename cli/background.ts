import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { getPriority, setPriority } from "node:os";
import { resolve } from "node:path";
import * as sea from "node:sea";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Db } from "../src/db/open";
import { isStorageFull, type StorageStatus } from "../src/db/storage";
import { sizedHeapEnv } from "../src/heap";
import type { Log } from "../src/log";

/**
 * The scheduled jobs (refresh, ingest, webhook deliveries) run in a child process beside `serve`:
 * `smartmoney jobs schedule`, the same binary, its own database connection.
 *
 * better-sqlite3 is synchronous, so a refresh or an ingest batch on the server's own thread holds
 * its event loop for as long as it runs: seconds on a large world, minutes after a catch-up, and no
 * request (not even /healthz) is answered meanwhile. In its own process a job can take all the
 * time it needs: WAL readers never wait for a writer, and the server's few writes wait on a timer
 * (src/db/write-when-free.ts). A process rather than a worker thread: the single binary can start
 * itself with no bundle file to hand a Worker, a crash or an out-of-memory in a refresh cannot take
 * the API with it, and its memory is measured and capped on its own. See docs/architecture.md.
 */

/** Restart waits after a crash: doubling from 1 s to a minute; reset after 5 minutes of health. */
const FIRST_RESTART_MS = 1_000;
const LONGEST_RESTART_MS = 60_000;
const HEALTHY_MS = 5 * 60_000;

/**
 * How much lower the jobs' CPU priority is than the server's (niceness, capped at 19). When the
 * two want the same core, Linux's scheduler weighs nice 10 at about a tenth of nice 0: a refresh
 * or an ingest batch then takes what the server leaves, instead of half the core and a
 * scheduling slice at a time out of the request thread. The jobs only run later for it; their
 * lag shows in X-Read-Model-Age. See docs/architecture.md ("The API never stalls").
 */
export const JOBS_NICENESS = 10;

/**
 * Lowers this process's CPU priority below the server's that started it: every thread it has
 * (Linux keeps a niceness per thread, and threads started later inherit the main thread's).
 * Best effort: a system that refuses leaves the jobs at the server's priority.
 */
export function yieldCpuToServer(): number | null {
  let threads: number[];
  try {
    threads = readdirSync("/proc/self/task").map(Number);
  } catch {
    threads = [0]; // no /proc: the calling thread (the whole process on macOS)
  }
  let lowered: number | null = null;
  for (const thread of threads) {
    try {
      const niceness = Math.min(19, getPriority(thread) + JOBS_NICENESS);
      setPriority(thread, niceness);
      if (thread === process.pid || thread === 0) lowered = niceness;
    } catch {} // a thread that has just ended, or a system that refuses
  }
  return lowered;
}

/**
 * How often the jobs fold the rate-limit ledger's WAL back into its file. Each complete
 * checkpoint lets the server's next write start the WAL again from its beginning, and that
 * write syncs the new WAL header: one fsync left on the request thread per checkpoint, so they
 * are spaced. At 8,000 requests a second the ledger's WAL grows by about 3 MB in that time.
 */
export const LEDGER_CHECKPOINT_MS = 10_000;

/**
 * The server's own checkpoint threshold on the ledger while its jobs checkpoint it (1 KiB pages,
 * so a 10 MB WAL): a backstop, reached only when the jobs stop checkpointing for a while.
 */
export const SERVER_LEDGER_AUTOCHECKPOINT = 10_000;

/**
 * The jobs' side of the ledger's checkpoints. `<db>.limits` is written by the request thread on
 * every lease; left to SQLite, the connection whose commit takes its WAL past 1,000 pages folds
 * it back on the request thread with three fsyncs (the WAL, the file, the restarted WAL's
 * header): every 3–4 s at 8,000 requests a second, measured up to 14 ms, more on a slow disk.
 * A PASSIVE checkpoint here does the copy and the first two in this process instead: it never
 * waits for the server (it copies what no reader still needs and leaves the rest for the next
 * one). Returns the stop function.
 */
export function checkpointLedgerForServer(db: Db, log: Log): () => void {
  let failing = false;
  const timer = setInterval(() => {
    try {
      db.limits.pragma("wal_checkpoint(PASSIVE)");
      failing = false;
    } catch (error) {
      // A full disk is the storage watch's to report; anything else once, until it clears.
      if (!failing && !isStorageFull(error)) {
        log.warn({ err: error }, "rate-limit ledger checkpoint failed; the server will do it");
      }
      failing = true;
    }
  }, LEDGER_CHECKPOINT_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** How to run this CLI again: the binary itself, or this Node with tsx and cli/main.ts. */
export function selfCommand(): { command: string; args: string[] } {
  if (sea.isSea()) return { command: process.execPath, args: [] };
  const main = fileURLToPath(new URL("./main.ts", import.meta.url));
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return { command: process.execPath, args: ["--import", tsx, main] };
}

export interface BackgroundJobs {
  /** SIGTERM, then waits for the jobs to finish their runs; SIGKILL after `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

export function startBackgroundJobs(options: {
  dbPath: string;
  publicUrl: string;
  logLevel: string;
  /** The memory cap, MB (`SMARTMONEY_MEMORY_MB`): the jobs' V8 heap is sized from it (src/heap.ts). */
  memoryMb: number;
  /** The server's clock reading when it is not the system's (`serve --now`), or null. */
  now: number | null;
  /**
   * `serve --replicate URL`: the jobs put the fill history's files there too (src/history/
   * replica.ts), so they are told it as the setting they read.
   */
  replicaUrl: string | null;
  log: Log;
  /** The jobs' storage state as they report it (src/db/storage.ts); null once they exit. */
  onStorage?(status: StorageStatus | null): void;
}): BackgroundJobs {
  const { log } = options;
  const self = selfCommand();
  const args = [
    ...self.args,
    "jobs",
    "schedule",
    "--db",
    resolve(options.dbPath),
    "--public-url",
    options.publicUrl,
    "--log-level",
    options.logLevel,
    ...(options.now === null ? [] : ["--now", new Date(options.now).toISOString()]),
  ];
  let child: ChildProcess | null = null;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | null = null;
  let nextWait = FIRST_RESTART_MS;

  const start = () => {
    restartTimer = null;
    const started = Date.now();
    // Its logs join the server's on stderr. Its own process group keeps a terminal's Ctrl-C to
    // the server, which stops it in order; the IPC channel closing tells it the server is gone,
    // however the server ended (src/jobs: `jobs schedule` stops on disconnect).
    const current = spawn(self.command, args, {
      env: {
        ...sizedHeapEnv(options.memoryMb),
        ...(options.replicaUrl ? { SMARTMONEY_REPLICA_URL: options.replicaUrl } : {}),
      },
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      detached: true,
    });
    child = current;
    log.info({ pid: current.pid }, "background jobs started");
    current.once("error", (error) => log.error({ err: error }, "background jobs failed to start"));
    current.on("message", (message) => {
      const storage = (message as { storage?: StorageStatus } | null)?.storage;
      if (storage) options.onStorage?.(storage);
    });
    current.once("exit", (code, signal) => {
      child = null;
      options.onStorage?.(null);
      if (stopping) return;
      if (Date.now() - started >= HEALTHY_MS) nextWait = FIRST_RESTART_MS;
      log.error(
        { code, signal, restart_in_ms: nextWait },
        "background jobs exited; restarting them",
      );
      restartTimer = setTimeout(start, nextWait);
      nextWait = Math.min(nextWait * 2, LONGEST_RESTART_MS);
    });
  };
  start();

  return {
    async stop(graceMs) {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
      running.kill("SIGTERM");
      const killer = setTimeout(() => {
        log.warn(
          { grace_ms: graceMs },
          "background jobs still running after the grace: killing them",
        );
        running.kill("SIGKILL");
      }, graceMs);
      await exited;
      clearTimeout(killer);
    },
  };
}
