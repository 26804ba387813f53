/**
 * `npm run bench:stall`: does the API stall while the jobs work?
 *
 * Serves a seeded fixture world from the built binary (server pinned to core 0) and loads one
 * endpoint with wrk (core 1, 50 connections) in two phases of the same run:
 *
 *  - idle: `serve --no-jobs`, nothing else touching the database;
 *  - busy: `serve` with its jobs process (pinned to core 1 beside wrk, so the server's core is
 *    the API's alone, as the two cores of a small VM would be shared), refreshing on
 *    --refresh-cron, while a feeder process (bench/lib/feeder.ts) ingests fills at
 *    --fills-per-day through the one ingest path, signals and webhook outbox included.
 *
 * Each phase starts with 3 s of unmeasured load (the fresh process's warm-up). Beside wrk, a
 * prober asks /healthz every 25 ms on a connection of its own (the liveness a
 * supervisor sees), and every second reads the data endpoint's X-Read-Model-As-Of to follow the
 * read-model lag: the newest stored fill's time minus the read models' as-of. The server's own
 * event-loop delay over each phase comes from its /metrics (prom-client's monitorEventLoopDelay).
 *
 *   npm run bench:stall -- [--world small|medium|large] [--idle 20] [--busy 150]
 *                          [--fills-per-day 1000000] [--refresh-cron "*\/30 * * * * *"]
 *                          [--connections 50] [--binary PATH]
 *
 * Goals: the endpoint's p99 <= 20 ms and max <= 100 ms in both phases, /healthz within 50 ms at
 * all times, read models at most 60 s behind stored fills. Writes bench/results/stall.json.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openConnection } from "../src/db/open";
import {
  BENCH_METRICS_TOKEN,
  type BinaryServer,
  DEFAULT_BINARY,
  ensureBinary,
  startBinaryServer,
} from "./lib/binary-server";
import { pickFromWorld } from "./lib/endpoints";
import { ensureWrk, type LoadResult, runLoad } from "./lib/load";
import { childPids, spawnPinned, stop } from "./lib/procs";
import { alignColumns, median, percentile, wholeFlag } from "./lib/report";
import { isScale, worldFor } from "./lib/world";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS_DIR = join(ROOT, "bench", "results");
const SERVER_CPU = 0;
const OTHER_CPU = 1;
const GOAL = { p99Ms: 20, maxMs: 100, healthzMs: 50, lagS: 60, loopMs: 50 };
const PROBE_MS = 25;
const WARMUP_SECONDS = 3;

const { values: flags } = parseArgs({
  options: {
    world: { type: "string", default: "medium" },
    idle: { type: "string", default: "20" },
    busy: { type: "string", default: "150" },
    "fills-per-day": { type: "string", default: "1000000" },
    "refresh-cron": { type: "string", default: "*/30 * * * * *" },
    connections: { type: "string", default: "50" },
    binary: { type: "string", default: DEFAULT_BINARY },
  },
});

const say = (line: string) => process.stderr.write(`bench:stall: ${line}\n`);

interface Probe {
  healthzMs: number[];
  /** Read-model as-of readings (epoch ms) with the time they were read. */
  asOf: { at: number; asOf: number | null }[];
  stop(): Promise<void>;
}

/** /healthz every PROBE_MS, one request at a time, and the data path's as-of once a second. */
function probe(base: string, dataPath: string, key: string): Probe {
  const result: Probe = { healthzMs: [], asOf: [], stop: async () => {} };
  let running = true;
  const healthz = (async () => {
    while (running) {
      const started = performance.now();
      const res = await fetch(`${base}/healthz`);
      await res.arrayBuffer();
      result.healthzMs.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, PROBE_MS));
    }
  })();
  const ages = (async () => {
    while (running) {
      const res = await fetch(`${base}${dataPath}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await res.arrayBuffer();
      const header = res.headers.get("x-read-model-as-of");
      result.asOf.push({ at: Date.now(), asOf: header ? Date.parse(header) : null });
      await new Promise((r) => setTimeout(r, 1_000));
    }
  })();
  result.stop = async () => {
    running = false;
    await Promise.all([healthz, ages]);
  };
  return result;
}

const ms = (value: number) => Number(value.toFixed(2));

interface PhaseResult {
  phase: string;
  load: LoadResult;
  healthz: { p50: number; p99: number; max: number; count: number };
  /** The server thread's event-loop delay over the phase (ms), from its /metrics. */
  eventLoop: { p99: number; max: number };
}

/**
 * The server's event-loop delay since the previous scrape: prom-client's monitorEventLoopDelay
 * figures in /metrics, which each scrape resets.
 */
async function eventLoopDelay(base: string): Promise<{ p99: number; max: number }> {
  const res = await fetch(`${base}/metrics`, {
    headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` },
  });
  const text = await res.text();
  const seconds = (name: string) => {
    const match = new RegExp(`^smartmoney_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, "m").exec(
      text,
    );
    if (!match) throw new Error(`the server's /metrics has no event-loop ${name}`);
    return ms(Number(match[1]) * 1000);
  };
  return { p99: seconds("p99"), max: seconds("max") };
}

async function phase(
  name: string,
  server: BinaryServer,
  dataPath: string,
  seconds: number,
): Promise<{ result: PhaseResult; probe: Probe }> {
  const { port, keys } = await server.ready;
  const base = `http://127.0.0.1:${port}`;
  const key = keys.terminal_pro!;
  const spec = {
    url: `${base}${dataPath}`,
    method: "GET" as const,
    headers: { authorization: `Bearer ${key}` },
    connections: wholeFlag("connections", flags.connections, 1),
    seconds,
  };
  // A fresh process compiles its hot paths during its first seconds of load: a long-running
  // server is past that, so it is not what this measures.
  await runLoad({ ...spec, seconds: WARMUP_SECONDS }, OTHER_CPU);
  await eventLoopDelay(base); // starts the phase's window
  const watch = probe(base, dataPath, key);
  const load = await runLoad(spec, OTHER_CPU);
  await watch.stop();
  const eventLoop = await eventLoopDelay(base);
  const h = watch.healthzMs;
  const result = {
    phase: name,
    load,
    healthz: {
      p50: ms(median(h)),
      p99: ms(percentile(h, 99)),
      max: ms(Math.max(...h)),
      count: h.length,
    },
    eventLoop,
  };
  say(
    `${name}: ${Math.round(load.rps)} req/s, p50 ${load.p50} ms, p99 ${load.p99} ms, max ${load.max} ms; /healthz p99 ${result.healthz.p99} ms, max ${result.healthz.max} ms; event loop p99 ${eventLoop.p99} ms, max ${eventLoop.max} ms`,
  );
  if (load.non2xx + load.errors + load.timeouts > 0)
    throw new Error(
      `${name}: ${load.non2xx} bad statuses, ${load.errors} errors, ${load.timeouts} timeouts`,
    );
  return { result, probe: watch };
}

/** Follows the feeder's lines: fills stored, the newest fill's time after each second. */
function followFeeder(child: ChildProcess) {
  const state = {
    inserted: 0,
    writes: [] as number[],
    newest: [] as { at: number; newest: number }[],
  };
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const report = JSON.parse(line) as { inserted: number; newest: number; writeMs: number };
    state.inserted += report.inserted;
    state.writes.push(report.writeMs);
    state.newest.push({ at: Date.now(), newest: report.newest });
  });
  return state;
}

/** The read-model lag at each as-of reading: the newest fill stored by then minus the as-of. */
function lags(asOf: Probe["asOf"], newest: { at: number; newest: number }[]): number[] {
  const out: number[] = [];
  for (const reading of asOf) {
    if (reading.asOf === null) continue;
    const stored = newest.filter((n) => n.at <= reading.at).at(-1);
    if (stored) out.push(Math.max(0, (stored.newest - reading.asOf) / 1000));
  }
  return out;
}

function refreshRuns(db: string, afterId: number) {
  const connection = openConnection(db, { readonly: true });
  try {
    return (
      connection
        .prepare("SELECT id, summary FROM refresh_runs WHERE id > ? ORDER BY id")
        .all(afterId) as { id: number; summary: string }[]
    ).map(
      (row) => JSON.parse(row.summary) as { kind: string; duration_ms: number; wallets: number },
    );
  } finally {
    connection.close();
  }
}

function lastRefreshId(db: string): number {
  const connection = openConnection(db, { readonly: true });
  try {
    return (
      (connection
        .prepare("SELECT coalesce(max(id), 0) FROM refresh_runs")
        .pluck()
        .get() as number) ?? 0
    );
  } finally {
    connection.close();
  }
}

/** Moves the server's jobs process to the other core: the server's core stays the API's. */
async function pinJobs(server: BinaryServer): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [jobs] = childPids(server.child.pid!);
    // A jobs process that has just exited (and is being restarted) cannot be pinned: look again.
    if (jobs !== undefined) {
      try {
        execFileSync("taskset", ["-a", "-p", "-c", String(OTHER_CPU), String(jobs)], {
          stdio: "ignore",
        });
        return jobs;
      } catch {}
    }
    if (Date.now() > deadline) {
      throw new Error(`serve started no jobs process that stayed up:\n${server.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<number> {
  const scale = flags.world;
  if (!isScale(scale)) throw new Error(`--world: unknown scale "${scale}"`);
  const idleSeconds = wholeFlag("idle", flags.idle, 1);
  const busySeconds = wholeFlag("busy", flags.busy, 1);
  const perDay = wholeFlag("fills-per-day", flags["fills-per-day"], 1);
  ensureWrk(say);
  const binary = ensureBinary(ROOT, flags.binary, say);
  const world = await worldFor({ scale, say });
  const scratch = mkdtempSync(join(tmpdir(), "smartmoney-stall-"));
  const db = join(scratch, "stall.db");
  copyFileSync(world.dbPath, db);
  const picks = pickFromWorld(db, 0);
  const dataPath = `/v1/signals/wallet/${picks.wallet}`;
  say(`${scale} world copied to ${db}; loading ${dataPath}`);

  const servers: BinaryServer[] = [];
  const children: ChildProcess[] = [];
  try {
    const quiet = startBinaryServer({
      binary,
      cpu: SERVER_CPU,
      db,
      now: world.now,
      tiers: ["terminal_pro"],
    });
    servers.push(quiet);
    const idle = await phase("idle", quiet, dataPath, idleSeconds);
    await stop(quiet.child);

    const firstRun = lastRefreshId(db);
    const busyServer = startBinaryServer({
      binary,
      cpu: SERVER_CPU,
      db,
      now: world.now + idleSeconds * 1000,
      tiers: ["terminal_pro"],
      refreshCron: flags["refresh-cron"],
    });
    servers.push(busyServer);
    await busyServer.ready;
    const jobsPid = await pinJobs(busyServer);
    const feeder = spawnPinned(
      OTHER_CPU,
      join(ROOT, "bench", "lib", "feeder.ts"),
      ["--db", db, "--now", String(world.now + idleSeconds * 1000), "--per-day", String(perDay)],
      { cwd: ROOT },
    );
    children.push(feeder.child);
    const fed = followFeeder(feeder.child);
    say(
      `busy: jobs process ${jobsPid} on cpu ${OTHER_CPU}, ingesting ${perDay.toLocaleString("en-US")} fills/day, refresh on "${flags["refresh-cron"]}"`,
    );
    const busy = await phase("busy", busyServer, dataPath, busySeconds);
    await stop(feeder.child);
    const runs = refreshRuns(db, firstRun);
    const lag = lags(busy.probe.asOf, fed.newest);

    const table = [
      [
        "phase",
        "req/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "healthz p99",
        "healthz max",
        "loop p99",
        "loop max",
      ],
      ...[idle.result, busy.result].map((r) => [
        r.phase,
        String(Math.round(r.load.rps)),
        String(r.load.p50),
        String(r.load.p99),
        String(r.load.max),
        String(r.healthz.p99),
        String(r.healthz.max),
        String(r.eventLoop.p99),
        String(r.eventLoop.max),
      ]),
    ];
    process.stdout.write(`${alignColumns(table, 1)}\n`);
    const lagMax = lag.length ? Math.max(...lag) : Number.NaN;
    const worst = Math.max(idle.result.load.p99, busy.result.load.p99);
    const worstMax = Math.max(idle.result.load.max, busy.result.load.max);
    const healthzMax = Math.max(idle.result.healthz.max, busy.result.healthz.max);
    const loopMax = Math.max(idle.result.eventLoop.max, busy.result.eventLoop.max);
    const lines = [
      `fills ingested during the busy phase: ${fed.inserted.toLocaleString("en-US")} (write p50 ${ms(median(fed.writes))} ms, max ${Math.max(...fed.writes)} ms)`,
      `refreshes during it: ${runs.length} (${runs.map((r) => `${r.kind} ${(r.duration_ms / 1000).toFixed(1)} s, ${r.wallets} wallets`).join("; ")})`,
      `read-model lag behind stored fills: p50 ${ms(median(lag))} s, max ${ms(lagMax)} s (goal <= ${GOAL.lagS} s ${lagMax <= GOAL.lagS ? "met" : "MISSED"})`,
      `endpoint p99 ${worst} ms (goal <= ${GOAL.p99Ms} ${worst <= GOAL.p99Ms ? "met" : "MISSED"}), max ${worstMax} ms (goal <= ${GOAL.maxMs} ${worstMax <= GOAL.maxMs ? "met" : "MISSED"}); /healthz max ${healthzMax} ms (goal <= ${GOAL.healthzMs} ${healthzMax <= GOAL.healthzMs ? "met" : "MISSED"}); event-loop delay max ${loopMax} ms (goal <= ${GOAL.loopMs} ${loopMax <= GOAL.loopMs ? "met" : "MISSED"})`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    const report = {
      bench: "stall",
      at: new Date().toISOString(),
      world: scale,
      endpoint: dataPath,
      settings: {
        idleSeconds,
        busySeconds,
        perDay,
        refreshCron: flags["refresh-cron"],
        connections: flags.connections,
      },
      phases: [idle.result, busy.result],
      fills: {
        inserted: fed.inserted,
        writeMsP50: median(fed.writes),
        writeMsMax: Math.max(...fed.writes),
      },
      refreshes: runs,
      lagSeconds: { p50: median(lag), max: lagMax },
    };
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, "stall.json"), `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  } finally {
    await Promise.all([...servers.map((s) => stop(s.child)), ...children.map((c) => stop(c))]);
    for (const s of servers) s.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    say(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  },
);
