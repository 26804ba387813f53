import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import type { Log } from "../log";
import { litestreamBinary, litestreamConfig } from "./litestream";
import { describeReplica, type ReplicaConfig } from "./replica-url";

/** What `smartmoney status` and the operator log lines show; written to `<db>.replication.json`. */
export interface ReplicationState {
  replica: string;
  state: "starting" | "running" | "restarting" | "stopped";
  pid: number | null;
  restarts: number;
  last_error: string | null;
  /** Seconds the replica has been behind the local WAL; 0 when caught up. */
  lag_seconds: number | null;
  /** WAL bytes Litestream holds that the replica does not have yet. */
  behind_bytes: number | null;
  caught_up_at: string | null;
  updated_at: string;
}

export interface Replication {
  state(): ReplicationState;
  stop(): Promise<void>;
}

export const stateFilePath = (dbPath: string) => `${dbPath}.replication.json`;

/** A server writes its state every second; older than this, nobody is replicating. */
const STALE_MS = 10_000;

export type ReplicationReport = (ReplicationState & { stale: boolean }) | null;

/**
 * What the replicating server last wrote beside the database (`smartmoney status`, /metrics);
 * null when it never replicated.
 */
export function replicationStatus(dbPath: string, now = Date.now()): ReplicationReport {
  const path = stateFilePath(dbPath);
  if (!existsSync(path)) return null;
  const state = JSON.parse(readFileSync(path, "utf8")) as ReplicationState;
  return { ...state, stale: now - Date.parse(state.updated_at) > STALE_MS };
}
export const configFilePath = (dbPath: string) => `${dbPath}.litestream.yml`;

const POLL_MS = 1000;
/** How long one reading of Litestream's metrics may take. */
const METRICS_TIMEOUT_MS = 5_000;
const BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000, 60_000];
/** A child that ran this long starts the backoff over after its next failure. */
const HEALTHY_MS = 60_000;
const STOP_GRACE_MS = 10_000;

/**
 * Runs `litestream replicate` beside the server as a supervised child: writes its config,
 * restarts it with backoff when it exits, logs its state changes and its output, and reads its
 * metrics every second for the lag.
 */
export async function startReplication(options: {
  dbPath: string;
  replica: ReplicaConfig;
  log: Log;
  now?: () => number;
}): Promise<Replication> {
  const { dbPath, replica, log } = options;
  const now = options.now ?? Date.now;
  const binary = litestreamBinary();
  await stopOrphan(dbPath, log);
  const metricsPort = await freePort();
  const configPath = configFilePath(dbPath);
  writeFileSync(configPath, litestreamConfig({ dbPath, replica, metricsPort }), { mode: 0o600 });

  const state: ReplicationState = {
    replica: describeReplica(replica),
    state: "starting",
    pid: null,
    restarts: 0,
    last_error: null,
    lag_seconds: null,
    behind_bytes: null,
    caught_up_at: null,
    updated_at: new Date(now()).toISOString(),
  };
  let child: ChildProcess | null = null;
  let stopping = false;
  let failures = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let caughtUpAt: number | null = null;
  /** Until the replica first catches up, its lag counts from the start. */
  const startedAt = now();

  /** The state file could not be written last time (a full disk): logged once, not each second. */
  let persistFailing = false;
  const persist = () => {
    state.updated_at = new Date(now()).toISOString();
    const path = stateFilePath(dbPath);
    try {
      writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
      renameSync(`${path}.tmp`, path);
    } catch (error) {
      // Never thrown: persist runs in the child's event handlers, where a throw would take the
      // server down. `smartmoney status` shows the file stale meanwhile.
      try {
        rmSync(`${path}.tmp`, { force: true });
      } catch {
        // the next write replaces it
      }
      if (!persistFailing) log.warn({ err: error }, "replication state not written");
      persistFailing = true;
      return;
    }
    if (persistFailing) log.info("replication state written again");
    persistFailing = false;
  };
  const setState = (next: ReplicationState["state"], detail: Record<string, unknown> = {}) => {
    state.state = next;
    log.info({ replica: state.replica, state: next, ...detail }, "replication");
    persist();
  };

  const launch = () => {
    const started = now();
    const proc = spawn(binary, ["replicate", "-config", configPath], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    state.pid = proc.pid ?? null;
    for (const stream of [proc.stdout, proc.stderr]) {
      createInterface({ input: stream! }).on("line", (line) => {
        if (/level=(ERROR|WARN)/.test(line)) state.last_error = line;
        log.info({ litestream: line }, "litestream");
      });
    }
    proc.once("spawn", () => setState("running", { pid: proc.pid }));
    proc.once("error", (error) => {
      state.last_error = error.message;
    });
    proc.once("exit", (code, signal) => {
      child = null;
      state.pid = null;
      if (stopping) return;
      failures = now() - started > HEALTHY_MS ? 1 : failures + 1;
      const delay = BACKOFF_MS[Math.min(failures - 1, BACKOFF_MS.length - 1)]!;
      state.restarts += 1;
      state.last_error = state.last_error ?? `litestream exited (${signal ?? `code ${code}`})`;
      log.warn({ replica: state.replica, code, signal, restart_in_ms: delay }, "litestream exited");
      setState("restarting", { restart_in_ms: delay });
      restartTimer = setTimeout(launch, delay);
    });
  };

  const poll = async () => {
    if (!child || state.state !== "running") return persist();
    const figures = await readMetrics(metricsPort).catch(() => null);
    if (figures) {
      const sameFile = figures.replicaIndex >= figures.shadowIndex;
      const behind = sameFile
        ? Math.max(0, figures.shadowSize - figures.replicaOffset)
        : figures.shadowSize;
      const caughtUp = sameFile && behind === 0;
      if (caughtUp) caughtUpAt = now();
      state.behind_bytes = behind;
      state.caught_up_at = caughtUpAt === null ? null : new Date(caughtUpAt).toISOString();
      state.lag_seconds = caughtUp ? 0 : (now() - (caughtUpAt ?? startedAt)) / 1000;
    }
    persist();
  };
  let lastReport = 0;
  let polling = false;
  const poller = setInterval(() => {
    if (polling) return;
    polling = true;
    void poll()
      .finally(() => {
        polling = false;
      })
      .then(() => {
        // One figure a minute in the log for operators who read logs, not `status`.
        if (now() - lastReport >= 60_000 && state.state === "running") {
          lastReport = now();
          log.info(
            {
              replica: state.replica,
              lag_seconds: state.lag_seconds,
              behind_bytes: state.behind_bytes,
            },
            "replication lag",
          );
        }
      })
      .catch((error: unknown) => log.warn({ err: error }, "replication state not written"));
  }, POLL_MS);
  poller.unref();

  launch();
  return {
    state: () => ({ ...state }),
    async stop() {
      stopping = true;
      clearInterval(poller);
      clearTimeout(restartTimer);
      const proc = child;
      if (proc) {
        // SIGTERM: Litestream syncs what it has read and exits.
        const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      state.lag_seconds = null;
      setState("stopped");
    },
  };
}

interface Figures {
  shadowIndex: number;
  shadowSize: number;
  replicaIndex: number;
  replicaOffset: number;
}

/** The four gauges that place the local WAL and the replica, from Litestream's /metrics. */
async function readMetrics(port: number): Promise<Figures | null> {
  // Generous: on a loaded machine Litestream may answer late, and a missed reading leaves the
  // lag unknown for a whole poll (polls never overlap).
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
    signal: AbortSignal.timeout(METRICS_TIMEOUT_MS),
  });
  const text = await res.text();
  const gauge = (name: string) => {
    const match = new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text);
    return match ? Number(match[1]) : null;
  };
  const shadowIndex = gauge("litestream_shadow_wal_index");
  const shadowSize = gauge("litestream_shadow_wal_size");
  if (shadowIndex === null || shadowSize === null) return null;
  // The replica's gauges appear with its first upload: absent, it holds nothing yet.
  return {
    shadowIndex,
    shadowSize,
    replicaIndex: gauge("litestream_replica_wal_index") ?? -1,
    replicaOffset: gauge("litestream_replica_wal_offset") ?? 0,
  };
}

/** A free loopback port for Litestream's metrics. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * A server killed hard leaves its Litestream running; two on one database would fight over its
 * WAL. The state file names the last child: stop it when it is still a Litestream on our config.
 */
async function stopOrphan(dbPath: string, log: Log): Promise<void> {
  const path = stateFilePath(dbPath);
  if (!existsSync(path)) return;
  let pid: number | null = null;
  try {
    pid = (JSON.parse(readFileSync(path, "utf8")) as { pid: number | null }).pid;
    if (!pid) return;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (!cmdline.includes("litestream") || !cmdline.includes(configFilePath(dbPath))) return;
    process.kill(pid, "SIGTERM");
  } catch {
    return; // no such process, or not ours
  }
  log.warn({ pid }, "stopping a Litestream left running by an earlier server");
  for (let waited = 0; waited < STOP_GRACE_MS && alive(pid); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (alive(pid)) process.kill(pid, "SIGKILL");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
