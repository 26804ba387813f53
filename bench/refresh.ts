/**
 * `npm run bench:refresh`: how long the read-model refresh takes and how much memory it needs.
 *
 * For each world (bench/lib/world.ts, seeded once and cached) it copies the database to a scratch
 * folder and measures, each in a child process of its own so its peak RSS is its own (started
 * with the heap limits and malloc arenas `serve` gives its jobs process, src/heap.ts):
 *   full         refreshNow(app, {full: true}), the job's full rebuild, then the funding graph
 *                (clusters, connections, coordinated timing, investigations) rebuilt in full,
 *                unless the refresh already ran it as an extension;
 *   incremental  --trades (10k) new trades through createIngest (the live ingester's write path,
 *                with the app's ingest hooks), spread over the markets and wallets that traded in
 *                the world's last day plus some new wallets, dated in the minute after the
 *                world's now; then refreshNow(app) one minute on (the default refresh cron), and
 *                the funding refresh as the job would run it (not forced).
 * The app's clock runs at the world's time. Goals (the issue's, for the large world): full
 * rebuild <= 120 s, incremental <= 2 s, peak memory <= 1 GB in every measurement.
 *
 *   npm run bench:refresh -- [--worlds medium,large] [--full medium,large]
 *                            [--incremental medium,large] [--trades 10000] [--seed 42]
 *                            [--rebuild-world] [--keep] [--cpu-prof] [--wal-pages]
 *                            [--binary dist/smartmoney]
 *
 * --full and --incremental pick which of --worlds get each measurement (default: all of them;
 * `none` for neither): the incremental alone runs on the world's read models as its build left
 * them, in a minute instead of the rebuild's several on the large world.
 *
 * --cpu-prof profiles each child (node --cpu-prof) and prints where its time went.
 *
 * --wal-pages prints the pages each refresh wrote, by table and index (bench/lib/wal-pages.ts).
 * A reader holds the WAL for the whole run so that nothing is copied back, which changes the
 * run's checkpoints: use it for the map, not for the time.
 *
 * --binary runs each refresh in that build of the CLI (`smartmoney jobs run refresh --now …`,
 * with the jobs process's heap limits and bench/lib/io-probe.cjs preloaded for its CPU time and
 * peak RSS), which is what a self-hoster runs: no TypeScript compiled as it loads, in this
 * process or in the refresh's worker threads. The new trades are still written by a child under
 * tsx, as above. Its times are the refresh's own (its summary's duration); the process's start
 * and its database's opening are not in them. Not with --cpu-prof or --wal-pages.
 *
 * Prints a table and one JSON line; writes the JSON to bench/results/refresh.json.
 */
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { App } from "../src/app";
import { loadConfig } from "../src/config";
import { type Connection, openConnection, openDb } from "../src/db/open";
import { heapFlags, sizedHeapEnv } from "../src/heap";
import { createIngest } from "../src/ingest/ingest";
import { refreshNow } from "../src/jobs/refresh";
import { migrate } from "../src/migrations/migrate";
import type { RefreshSummary } from "../src/refresh/refresh";
import { copyToDisk, settleCopy } from "./lib/copy";
import { nextTrades } from "./lib/next-trades";
import { peakRssMb } from "./lib/peak-rss";
import { formatProfile, summariseProfile } from "./lib/profile";
import { alignColumns } from "./lib/report";
import { recordResults } from "./lib/results";
import { formatWalPages, mapWalFrames, type WalPages, walFrames } from "./lib/wal-pages";
import { isScale, withWorldApp, worldClock, worldFor } from "./lib/world";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** Preloaded into the binary (--binary): its CPU time and peak RSS as it exits. */
const IO_PROBE = join(ROOT, "bench", "lib", "io-probe.cjs");
const RESULTS_DIR = join(ROOT, "bench", "results");
const PROFILE_DIR = join(RESULTS_DIR, "profiles", "refresh");
const MINUTE_MS = 60_000;
/** A live ingester's batch: one transaction per this many trades. */
const BATCH = 500;
/** Share of the new trades made by wallets never seen before. */
const BACKUP_PAGES_PER_STEP = 100_000;

const GOALS = { fullSeconds: 120, incrementalSeconds: 2, peakRssMb: 1024 };
/** The world the time goals are for. */
const GOAL_SCALE = "large";

const say = (line: string) => process.stderr.write(`bench:refresh: ${line}\n`);

/** What a child measured. */
interface Measured {
  kind: "full" | "incremental";
  /** refreshNow; the funding graph's part of it (or its own run after it); both together. */
  refreshSeconds: number;
  fundingSeconds: number;
  /** False when refreshNow ran the funding graph as an extension (its time is inside refreshSeconds). */
  fundingSeparate: boolean;
  totalSeconds: number;
  /** Writing the new trades (incremental only). */
  ingestSeconds: number | null;
  tradesInserted: number | null;
  cpuSeconds: number;
  /**
   * Peak RSS of the whole child, and its RSS just before the refresh started (null with
   * --binary: the binary's process runs only the refresh, so its peak is the refresh's).
   */
  peakRssMb: number;
  baseRssMb: number | null;
  /**
   * RSS right after the refresh: anonymous (heaps, SQLite's page cache) and file-backed (mmap);
   * null with --binary.
   */
  endRss: { anonMb: number; fileMb: number } | null;
  /** V8's view right after the refresh: its heap, and buffers outside it (typed arrays). */
  endHeap: { heapUsedMb: number; externalMb: number } | null;
  /** With --binary: the build that ran the refresh. */
  binary?: string;
  refresh: RefreshSummary;
  funding: unknown;
  /** With --wal-pages: the pages the refresh wrote, by table and index. */
  walPages?: WalPages;
}

const rssMb = peakRssMb;

function heapSplit(): { heapUsedMb: number; externalMb: number } {
  const usage = process.memoryUsage();
  return { heapUsedMb: usage.heapUsed / 2 ** 20, externalMb: usage.external / 2 ** 20 };
}

/** The current RSS split as /proc reports it (Linux), in MB. */
function rssSplit(): { anonMb: number; fileMb: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { anonMb: kb("RssAnon") / 1024, fileMb: kb("RssFile") / 1024 };
}

/**
 * The funding graph: its share of refreshNow when the refresh runs it as an extension (the sum
 * of its step timings), else run here as the job would after the refresh.
 */
function funding(app: App, summary: RefreshSummary, force: boolean) {
  const within = fundingWithin(summary);
  if (within !== null) return { ...within, separate: false };
  const started = performance.now();
  const result = app.funding.refresh({ force });
  return { seconds: (performance.now() - started) / 1000, separate: true, result };
}

/** The funding graph's part of a refresh that ran it as an extension (its step timings), or null. */
function fundingWithin(summary: RefreshSummary): { seconds: number; result: unknown } | null {
  const name = Object.keys(summary.extensions).find((key) => key.includes("funding"));
  if (name === undefined) return null;
  const result = summary.extensions[name] as { timings?: Record<string, number> };
  const ms = Object.values(result.timings ?? {}).reduce((a, b) => a + b, 0);
  return { seconds: ms / 1000, result };
}

async function child(
  kind: "full" | "incremental",
  dbPath: string,
  now: number,
  trades: number,
  mapWal: boolean,
  ingestOnly: boolean,
) {
  const at = refreshTime(kind, now);
  const measured = await withWorldApp(
    { db: dbPath, clock: worldClock(at, { frozen: true }) },
    (app): Measured | Ingested => {
      let ingestSeconds: number | null = null;
      let inserted: number | null = null;
      if (kind === "incremental") {
        const rows = nextTrades(app.deps.db.reader, now, trades, MINUTE_MS);
        const ingest = createIngest(app.deps.db, app.deps.clock, app.ingestHooks);
        const walletKnown = app.deps.db.writer.prepare("SELECT 1 FROM wallets WHERE address = ?");
        const started = performance.now();
        inserted = 0;
        const known = new Set<string>();
        for (let i = 0; i < rows.length; i += BATCH) {
          const batch = rows.slice(i, i + BATCH);
          app.deps.db.writer.transaction(() => {
            for (const row of batch) {
              if (known.has(row.wallet)) continue;
              known.add(row.wallet);
              if (!walletKnown.get(row.wallet)) {
                ingest.upsertWallet({
                  address: row.wallet,
                  platform_name: null,
                  platform_pnl: null,
                  platform_pnl_as_of: null,
                  created_at: row.ts,
                });
              }
            }
            inserted! += ingest.insertTrades(batch).length;
          })();
        }
        ingestSeconds = (performance.now() - started) / 1000;
      }
      if (ingestOnly) return { ingestSeconds, tradesInserted: inserted };
      // --wal-pages: the WAL emptied, then held by a reader's snapshot for the whole run, so no
      // checkpoint copies a frame back and the WAL never restarts: it ends holding every page
      // the refresh wrote.
      const holder = mapWal ? holdWal(app.deps.db.writer, dbPath) : null;
      const baseRssMb = rssMb();
      const cpu = process.cpuUsage();
      const started = performance.now();
      const refresh = refreshNow(app, { full: kind === "full" });
      const refreshSeconds = (performance.now() - started) / 1000;
      const graph = funding(app, refresh, kind === "full");
      const used = process.cpuUsage(cpu);
      let written: WalPages | undefined;
      if (holder) {
        for (const work of app.deps.db.background) work.wait();
        const read = walFrames(dbPath);
        holder.close();
        written = mapWalFrames(read, app.deps.db.writer);
      }
      return {
        kind,
        refreshSeconds,
        fundingSeconds: graph.seconds,
        fundingSeparate: graph.separate,
        totalSeconds: (performance.now() - started) / 1000,
        ingestSeconds,
        tradesInserted: inserted,
        cpuSeconds: (used.user + used.system) / 1e6,
        peakRssMb: rssMb(),
        baseRssMb,
        endRss: rssSplit(),
        endHeap: heapSplit(),
        refresh,
        funding: graph.result,
        ...(written ? { walPages: written } : {}),
      };
    },
  );
  process.stdout.write(`${JSON.stringify(measured)}\n`);
}

/** What a child that only writes the new trades (--binary) reports. */
interface Ingested {
  ingestSeconds: number | null;
  tradesInserted: number | null;
}

/** The refresh's clock: a full one at the world's now, an incremental one a minute on (the default refresh cron's next tick). */
function refreshTime(kind: "full" | "incremental", now: number): number {
  return kind === "full" ? now : now + MINUTE_MS;
}

/** A read transaction on its own connection, begun on an emptied WAL: it pins the WAL's start. */
function holdWal(writer: Connection, dbPath: string): Connection {
  writer.pragma("wal_checkpoint(TRUNCATE)");
  const reader = openConnection(dbPath, { readonly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM refresh_runs").get();
  return reader;
}

function runChild(
  kind: "full" | "incremental",
  dbPath: string,
  now: number,
  trades: number,
  profileDir: string | null,
  mapWal: boolean,
  binary: string | null,
): Measured {
  const self = fileURLToPath(import.meta.url);
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  // The heap limits `serve` gives its jobs process (src/heap.ts), for the memory cap
  // configured here ($SMARTMONEY_MEMORY_MB, default 1024).
  const config = loadConfig(process.env);
  if (!config.ok) throw new Error(config.problems.join("; "));
  const heap = heapFlags(config.config.memoryMb);
  // And its malloc arenas, read by glibc as a process starts.
  const arenas = { MALLOC_ARENA_MAX: sizedHeapEnv(config.config.memoryMb).MALLOC_ARENA_MAX };
  // This script again, as the child that writes the trades and (without --binary) refreshes.
  const ownChild = (nodeFlags: string[], mode: "wal-pages" | "ingest-only" | "") =>
    childOutput(
      process.execPath,
      [
        ...nodeFlags,
        ...process.execArgv,
        self,
        "--child",
        kind,
        dbPath,
        String(now),
        String(trades),
        mode,
      ],
      { ...process.env, ...arenas },
    );
  if (binary !== null) {
    const ingested =
      kind === "incremental"
        ? (ownChild([], "ingest-only") as Ingested)
        : { ingestSeconds: null, tradesInserted: null };
    return { ...refreshInBinary(binary, kind, dbPath, now, heap, arenas), ...ingested };
  }
  return ownChild([...heap, ...profile], mapWal ? "wal-pages" : "") as Measured;
}

/** Runs a child to its end and parses the JSON it printed last. */
function childOutput(command: string, args: string[], env = process.env): unknown {
  const run = spawnSync(command, args, {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 1 << 24,
    env,
  });
  if (run.status !== 0)
    throw new Error(`${command} ${args.join(" ")} failed (status ${run.status})`);
  // A bench child prints its result as its last line; the CLI's --json, as the whole output.
  const out = run.stdout.trim();
  return JSON.parse(out.startsWith("{\n") ? out : out.split("\n").pop()!);
}

/**
 * The refresh as the built binary runs it: `jobs run refresh --json`, at the refresh's time
 * (--now), with the jobs process's heap flags and the I/O probe preloaded (NODE_OPTIONS).
 */
function refreshInBinary(
  binary: string,
  kind: "full" | "incremental",
  dbPath: string,
  now: number,
  heap: string[],
  arenas: NodeJS.ProcessEnv,
): Omit<Measured, "ingestSeconds" | "tradesInserted"> {
  const probeOut = `${dbPath}.io.json`;
  rmSync(probeOut, { force: true });
  const summary = childOutput(
    binary,
    [
      "jobs",
      "run",
      "refresh",
      ...(kind === "full" ? ["--full"] : []),
      "--db",
      dbPath,
      "--now",
      new Date(refreshTime(kind, now)).toISOString(),
      "--json",
    ],
    {
      ...process.env,
      ...arenas,
      NODE_OPTIONS: [`--require ${IO_PROBE}`, ...heap].join(" "),
      SMARTMONEY_BENCH_IO_OUT: probeOut,
    },
  ) as RefreshSummary & { job: string };
  const probe = JSON.parse(readFileSync(probeOut, "utf8")) as {
    cpuSeconds: number;
    peakRssMb: number;
  };
  rmSync(probeOut, { force: true });
  const { job: _job, ...refresh } = summary;
  const graph = fundingWithin(refresh);
  const seconds = refresh.duration_ms / 1000;
  return {
    kind,
    refreshSeconds: seconds,
    fundingSeconds: graph?.seconds ?? 0,
    fundingSeparate: false,
    totalSeconds: seconds,
    cpuSeconds: probe.cpuSeconds,
    peakRssMb: probe.peakRssMb,
    baseRssMb: null,
    endRss: null,
    endHeap: null,
    refresh,
    funding: graph?.result ?? null,
    binary,
  };
}

/**
 * A plain file copy when the world's WAL is empty (nobody has it open); else a consistent copy
 * through SQLite's online backup, safe while a bench server has the world open.
 */
async function copyWorld(from: string, to: string): Promise<void> {
  const wal = `${from}-wal`;
  if (!existsSync(wal) || statSync(wal).size === 0) {
    copyToDisk(from, to);
  } else {
    const source = openConnection(from, { readonly: true });
    try {
      await source.backup(to, { progress: () => BACKUP_PAGES_PER_STEP });
    } finally {
      source.close();
    }
    settleCopy(to);
  }
  if (existsSync(`${from}.key`)) copyFileSync(`${from}.key`, `${to}.key`);
}

interface Row {
  world: string;
  measurement: Measured;
  world_trades: number;
  goals: { seconds: number | null; peakRssMb: number };
  met: { seconds: boolean | null; peakRss: boolean };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      worlds: { type: "string", default: "medium,large" },
      full: { type: "string" },
      incremental: { type: "string" },
      trades: { type: "string", default: "10000" },
      seed: { type: "string", default: "42" },
      "rebuild-world": { type: "boolean", default: false },
      keep: { type: "boolean", default: false },
      "cpu-prof": { type: "boolean", default: false },
      "wal-pages": { type: "boolean", default: false },
      binary: { type: "string" },
    },
  });
  const binary = values.binary === undefined ? null : resolve(values.binary);
  if (binary !== null) {
    if (!existsSync(binary)) throw new Error(`--binary: no file at ${binary} (npm run build)`);
    if (values["cpu-prof"] || values["wal-pages"]) {
      throw new Error(
        "--binary runs the refresh in the built CLI: not with --cpu-prof or --wal-pages",
      );
    }
  }
  const scales = values.worlds.split(",");
  const full = (values.full ?? values.worlds).split(",");
  const incremental = (values.incremental ?? values.worlds).split(",");
  const trades = Number(values.trades);
  if (!Number.isInteger(trades) || trades < 1) throw new Error("--trades must be a whole number");
  const loadBefore = loadavg();
  const scratch = mkdtempSync(join(tmpdir(), "smartmoney-bench-refresh-"));
  const rows: Row[] = [];
  const worlds = [];
  try {
    for (const scale of scales) {
      if (!isScale(scale)) throw new Error(`--worlds: unknown scale "${scale}"`);
      const started = performance.now();
      const world = await worldFor({
        scale,
        seed: Number(values.seed),
        rebuild: values["rebuild-world"],
        say,
      });
      say(
        world.fresh
          ? `the ${scale} world took ${((performance.now() - started) / 1000).toFixed(0)} s to build`
          : `reusing the ${scale} world ${world.dbPath} (built ${world.build.builtAt} in ${world.build.totalSeconds.toFixed(0)} s)`,
      );
      if (world.staleModels) say(`the read-model code changed since the ${scale} world was built`);
      worlds.push({ scale, db: world.dbPath, build: world.build });
      const copy = join(scratch, `${scale}.db`);
      say(`copying the ${scale} world to ${copy}`);
      await copyWorld(world.dbPath, copy);
      // Schema migrations newer than the cached world run here, not inside a measured child.
      const migrated = openDb(copy);
      try {
        const result = migrate(migrated.writer);
        if (result.applied.length > 0) say(`migrated the copy: ${result.applied.join(", ")}`);
      } finally {
        migrated.close();
      }
      const goalFor = (kind: "full" | "incremental") => ({
        seconds:
          scale === GOAL_SCALE
            ? kind === "full"
              ? GOALS.fullSeconds
              : GOALS.incrementalSeconds
            : null,
        peakRssMb: GOALS.peakRssMb,
      });
      const record = (m: Measured) => {
        const goals = goalFor(m.kind);
        rows.push({
          world: scale,
          measurement: m,
          world_trades: world.build.trades,
          goals,
          met: {
            seconds: goals.seconds === null ? null : m.totalSeconds <= goals.seconds,
            peakRss: m.peakRssMb <= goals.peakRssMb,
          },
        });
        say(
          `${scale} ${m.kind}: ${m.totalSeconds.toFixed(2)} s (refreshNow ${m.refreshSeconds.toFixed(2)} s, funding graph ${m.fundingSeconds.toFixed(2)} s${m.fundingSeparate ? " after it" : " within it"}), peak RSS ${m.peakRssMb.toFixed(0)} MB`,
        );
        if (m.walPages) say(`${scale} ${m.kind}: pages written\n${formatWalPages(m.walPages)}`);
      };
      const profileDir = (kind: string) => {
        if (!values["cpu-prof"]) return null;
        const dir = join(PROFILE_DIR, `${scale}-${kind}`);
        rmSync(dir, { recursive: true, force: true });
        return dir;
      };
      if (full.includes(scale)) {
        say(`${scale}: full rebuild`);
        record(
          runChild(
            "full",
            copy,
            world.now,
            trades,
            profileDir("full"),
            values["wal-pages"],
            binary,
          ),
        );
      }
      if (incremental.includes(scale)) {
        say(`${scale}: ${trades} new trades, then an incremental refresh`);
        record(
          runChild(
            "incremental",
            copy,
            world.now,
            trades,
            profileDir("incremental"),
            values["wal-pages"],
            binary,
          ),
        );
      }
      if (!values.keep)
        for (const suffix of ["", "-wal", "-shm", ".key"]) rmSync(copy + suffix, { force: true });
    }
  } finally {
    if (!values.keep) rmSync(scratch, { recursive: true, force: true });
  }
  const loadAfter = loadavg();
  process.stdout.write(`${table(rows)}\n`);
  if (values["cpu-prof"]) printProfiles();
  process.stdout.write(
    `load average before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}\n`,
  );
  const report = {
    bench: "refresh",
    at: new Date().toISOString(),
    node: process.version,
    loadavg: { before: loadBefore, after: loadAfter },
    trades,
    goals: { ...GOALS, scale: GOAL_SCALE },
    worlds,
    results: rows,
  };
  recordResults("refresh", report);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

/** Where each child's time went (node --cpu-prof), our functions with their callees. */
function printProfiles(): void {
  for (const run of readdirSync(PROFILE_DIR)) {
    for (const file of readdirSync(join(PROFILE_DIR, run))) {
      const path = join(PROFILE_DIR, run, file);
      const heading = `${run}: ${relative(ROOT, path)}`;
      const summary = summariseProfile(path, 25);
      process.stdout.write(`${formatProfile(heading, summary, { areas: false })}\n`);
    }
  }
}

function table(rows: Row[]): string {
  const fixed = (value: number | null, digits = 2) =>
    value === null ? "-" : value.toFixed(digits);
  const verdict = (goal: number | null, met: boolean | null, unit: string) =>
    goal === null ? "" : `<= ${goal} ${unit} ${met ? "met" : "MISSED"}`;
  const cells = [
    [
      "world",
      "refresh",
      "world trades",
      "ingest s",
      "refreshNow s",
      "funding s",
      "total s",
      "cpu s",
      "wallets",
      "markets",
      "fills read",
      "base RSS MB",
      "peak RSS MB",
      "end RSS anon+file MB",
      "time goal",
      "memory goal",
    ],
    ...rows.map((r) => {
      const m = r.measurement;
      return [
        r.world,
        m.kind === "incremental" ? `incremental (+${m.tradesInserted} trades)` : "full",
        r.world_trades.toLocaleString("en-US"),
        fixed(m.ingestSeconds),
        fixed(m.refreshSeconds),
        `${m.fundingSeparate ? "+" : "of which "}${fixed(m.fundingSeconds)}`,
        fixed(m.totalSeconds),
        fixed(m.cpuSeconds),
        String(m.refresh.wallets),
        String(m.refresh.markets),
        m.refresh.fills_read.toLocaleString("en-US"),
        fixed(m.baseRssMb, 0),
        fixed(m.peakRssMb, 0),
        m.endRss === null ? "-" : `${fixed(m.endRss.anonMb, 0)}+${fixed(m.endRss.fileMb, 0)}`,
        verdict(r.goals.seconds, r.met.seconds, "s"),
        verdict(r.goals.peakRssMb, r.met.peakRss, "MB"),
      ];
    }),
  ];
  return alignColumns(cells, 2);
}

if (process.argv[2] === "--child") {
  const [, , , kind, dbPath, now, trades, mode] = process.argv;
  await child(
    kind as "full" | "incremental",
    dbPath!,
    Number(now),
    Number(trades),
    mode === "wal-pages",
    mode === "ingest-only",
  );
} else {
  await main();
}
