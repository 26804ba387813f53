/**
 * `npm run bench:webhooks`: webhook fan-out throughput and signal-to-delivery latency.
 *
 * This process is the server: the real app (createApp on a fresh migrated file, system clock,
 * logs at info to a file so the per-attempt log line is paid for), its drainer started and
 * ticked by the scheduler exactly as `smartmoney serve` runs it, and the ingest side calling
 * app.webhooks.outbox.enqueueSignal inside one transaction per batch of trades, as detection
 * does on ingest. A child process (this file with --as-receivers) runs the loopback receivers:
 * node:http servers on 127.0.0.1 that answer 200 at once, verify every signature and note when
 * each request arrived. The two are pinned to different cores when taskset exists.
 *
 * Two phases on the same app:
 *   burst   --signals signals (default 10,000) enqueued as fast as ingest writes them, in
 *           batches of --batch, yielding to the event loop between batches: the drainer's
 *           throughput (deliveries/s from the first enqueue to the last arrival).
 *   steady  --steady-signals signals offered at --rate deliveries/s (default 1,000, the
 *           throughput goal) in a batch every 100 ms: latency when the drainer is not behind.
 * Latency runs from the enqueueSignal call to the receiver getting the request. Every delivery
 * in the database must reach its endpoint's path exactly once (counted by X-Service-Delivery-Id)
 * with a valid signature; anything else fails the run.
 *
 * Then the fairness phase (bench/lib/webhook-fairness.ts): a fast tenant's p99 alone and beside
 * two tenants whose twenty endpoints hang, on fresh apps, the two conditions interleaved for
 * --fairness-rounds rounds and pooled; goal: with them within 2x of without.
 *
 *   npm run bench:webhooks -- [--signals 10000] [--steady-signals 5000] [--rate 1000]
 *                             [--batch 100] [--receivers 4] [--cpu-prof] [--no-pin]
 *                             [--fairness-seconds 10] [--fairness-rate 20]
 *                             [--fairness-rounds 3]
 *
 * --cpu-prof profiles this process during the burst and prints where its time went.
 * Prints a table and one JSON line; writes the JSON to bench/results/webhooks.json.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pino from "pino";
import { type App, createApp } from "../src/app";
import { systemClock } from "../src/clock";
import { loadConfig } from "../src/config";
import { type Db, openDb } from "../src/db/open";
import { loadInstallationKey } from "../src/installation/key";
import { drainJob } from "../src/jobs/drain";
import { type Scheduler, startScheduler } from "../src/jobs/scheduler";
import { createLog } from "../src/log";
import { migrate } from "../src/migrations/migrate";
import type { Channel, ScoreType } from "../src/webhooks/endpoints";
import type { NewSignal } from "../src/webhooks/outbox";
import { verifySignature } from "../src/webhooks/signer";
import { peakRssMb } from "./lib/peak-rss";
import { cpuSeconds } from "./lib/procs";
import { formatProfile, summariseProfile } from "./lib/profile";
import { uniform } from "./lib/random";
import { alignColumns, percentileOfSorted, wholeFlag } from "./lib/report";
import { recordResults } from "./lib/results";
import { type FairnessResult, runFairness } from "./lib/webhook-fairness";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RESULTS_DIR = join(ROOT, "bench", "results");
const SELF = fileURLToPath(import.meta.url);
const APP_CPU = 0;
const RECEIVER_CPU = 1;
const GOAL_DELIVERIES_PER_S = 1_000;
const GOAL_P50_MS = 1_000;
const STEADY_TICK_MS = 100;

const { values: flags } = parseArgs({
  options: {
    signals: { type: "string", default: "10000" },
    "steady-signals": { type: "string", default: "5000" },
    rate: { type: "string", default: String(GOAL_DELIVERIES_PER_S) },
    batch: { type: "string", default: "100" },
    receivers: { type: "string", default: "4" },
    "fairness-seconds": { type: "string", default: "10" },
    "fairness-rate": { type: "string", default: "20" },
    "fairness-rounds": { type: "string", default: "3" },
    "cpu-prof": { type: "boolean", default: false },
    "no-pin": { type: "boolean", default: false },
    // Internal: run the receivers (the child side of this file).
    "as-receivers": { type: "string" },
  },
});

const say = (line: string) => process.stderr.write(`bench: ${line}\n`);

// ---------------------------------------------------------------------------------------------
// The receivers (child process)

/** One request as a receiver saw it: which delivery, on which path, when, and whether it verified. */
interface Arrivals {
  ids: string[];
  paths: string[];
  at: number[];
  valid: boolean[];
}

type ToReceivers =
  | { type: "secrets"; secrets: Record<string, string> }
  | { type: "report" }
  | { type: "stop" };

async function runReceivers(servers: number): Promise<void> {
  const secrets = new Map<string, string>();
  let arrivals: Arrivals = { ids: [], paths: [], at: [], valid: [] };
  const listening: Server[] = [];
  for (let i = 0; i < servers; i++) {
    const server = createServer((req, res) => {
      const at = Date.now();
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const path = req.url ?? "";
        const secret = secrets.get(path);
        const header = (name: string) => req.headers[name] as string | undefined;
        arrivals.ids.push(header("x-service-delivery-id") ?? "");
        arrivals.paths.push(path);
        arrivals.at.push(at);
        arrivals.valid.push(
          secret !== undefined &&
            verifySignature(
              secret,
              header("x-service-timestamp"),
              Buffer.concat(chunks).toString("utf8"),
              header("x-service-signature"),
              Date.now(),
            ),
        );
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      });
    });
    await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
    listening.push(server);
  }
  process.on("message", (message: ToReceivers) => {
    if (message.type === "secrets") {
      for (const [path, secret] of Object.entries(message.secrets)) secrets.set(path, secret);
      process.send!({ type: "ok" });
    } else if (message.type === "report") {
      process.send!({ type: "report", arrivals });
      arrivals = { ids: [], paths: [], at: [], valid: [] };
    } else {
      for (const server of listening) {
        server.closeAllConnections();
        server.close();
      }
      process.disconnect?.();
    }
  });
  process.send!({
    type: "ports",
    ports: listening.map((server) => (server.address() as AddressInfo).port),
  });
}

/** The parent's handle on the receivers: one question at a time, answered in order. */
function receiversClient(child: ChildProcess) {
  return {
    ask<T>(message: ToReceivers): Promise<T> {
      return new Promise((answer, reject) => {
        const onExit = () => reject(new Error("the receivers exited"));
        child.once("exit", onExit);
        child.once("message", (reply) => {
          child.off("exit", onExit);
          answer(reply as T);
        });
        child.send(message);
      });
    },
    ready(): Promise<number[]> {
      return new Promise((answer, reject) => {
        const onExit = (code: number | null) => reject(new Error(`the receivers exited (${code})`));
        child.once("exit", onExit);
        child.once("message", (reply) => {
          child.off("exit", onExit);
          answer((reply as { ports: number[] }).ports);
        });
      });
    },
    /** Closes the servers; the process then ends (killed if it has not within a second). */
    async stop(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((done) => child.once("exit", done));
      if (child.connected) child.send({ type: "stop" } satisfies ToReceivers);
      const timer = setTimeout(() => child.kill(), 1_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The world: markets, wallets, accounts and endpoints whose filters give a mixed fan-out

const CATEGORIES = ["politics", "crypto", "sports", "culture", "economics", "breaking-news"];
const MARKETS_PER_CATEGORY = 10;
const WALLETS = 500;
/** The first DIRECT wallets are followed directly, the next LISTED through a list. */
const DIRECT = 100;
const LISTED = 100;

interface EndpointPlan {
  account: string;
  channel: Channel;
  minScore?: number;
  scoreType?: ScoreType;
  category?: string;
}

/** Ten endpoints on three accounts; about three deliveries per signal. */
const ENDPOINTS: EndpointPlan[] = [
  { account: "bench-a", channel: "api" },
  { account: "bench-a", channel: "api", scoreType: "whale" },
  { account: "bench-a", channel: "api", scoreType: "insider", minScore: 80 },
  { account: "bench-a", channel: "api", category: "economics" },
  { account: "bench-b", channel: "api", category: "politics" },
  { account: "bench-b", channel: "api", category: "crypto" },
  { account: "bench-b", channel: "api", category: "sports", minScore: 50 },
  { account: "bench-b", channel: "dashboard" },
  { account: "bench-c", channel: "dashboard" },
  { account: "bench-c", channel: "api", scoreType: "whale", minScore: 60 },
];

const hexOf = (n: number, digits: number) => `0x${n.toString(16).padStart(digits, "0")}`;
const walletAddress = (i: number) => hexOf(0xbe0000 + i, 40);

function seedWorld(app: App, db: Db, ports: number[]): Record<string, string> {
  const w = db.writer;
  const insertMarket = w.prepare(
    "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (?, ?, ?, ?, ?)",
  );
  w.transaction(() => {
    CATEGORIES.forEach((category, c) => {
      for (let m = 0; m < MARKETS_PER_CATEGORY; m++) {
        const id = c * MARKETS_PER_CATEGORY + m + 1;
        insertMarket.run(id, `bench-${id}`, `Bench market ${id}?`, category, hexOf(id, 64));
      }
    });
  })();
  const accountIds = new Map<string, number>();
  for (const name of new Set(ENDPOINTS.map((e) => e.account))) {
    const minted = app.accounts.mintKey({ tier: "terminal", account: name, kind: "api" });
    if (!minted.ok) throw new Error(minted.reason);
    accountIds.set(name, app.accounts.get(name)!.id);
  }
  const follows = app.webhooks.follows;
  const direct = accountIds.get("bench-c")!;
  for (let i = 0; i < DIRECT; i++) must(follows.followWallet(direct, walletAddress(i)));
  must(follows.createList("bench-listed", null));
  const listed = Array.from({ length: LISTED }, (_, i) => walletAddress(DIRECT + i));
  must(follows.addToList("bench-listed", listed));
  must(follows.followList(accountIds.get("bench-b")!, "bench-listed"));

  const secrets: Record<string, string> = {};
  ENDPOINTS.forEach((plan, i) => {
    const path = `/hook/${i}`;
    const created = app.webhooks.endpoints.create({
      accountId: accountIds.get(plan.account)!,
      tier: "terminal",
      channel: plan.channel,
      callbackUrl: `http://127.0.0.1:${ports[i % ports.length]}${path}`,
      minScore: plan.minScore ?? null,
      scoreType: plan.scoreType ?? null,
      category: plan.category ?? null,
    });
    if (!created.ok) throw new Error(created.reason);
    secrets[path] = created.value.secret;
  });
  return secrets;
}

function must<T>(result: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!result.ok) throw new Error(result.reason);
  return result.value;
}

/**
 * The ingest side: each batch stores its trades and calls enqueueSignal for each in one
 * transaction, as detection does inside the ingest transaction. Returns the enqueue time of
 * every signal (epoch ms, the receivers' clock).
 */
function createIngest(app: App, db: Db, seed: number) {
  const rand = uniform(seed);
  const newestFill = db.writer.prepare("SELECT max(id) FROM fills").pluck();
  const insertTrade = db.writer.prepare<unknown[]>(
    `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
                         usd_value, ts) VALUES (?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const enqueuedAt = new Map<number, number>();
  let trades = 0;
  const batch = db.writer.transaction((signals: number) => {
    for (let i = 0; i < signals; i++) {
      trades += 1;
      const wallet = walletAddress(Math.floor(rand() * WALLETS));
      const marketId = 1 + Math.floor(rand() * CATEGORIES.length * MARKETS_PER_CATEGORY);
      const price = Math.round((0.05 + rand() * 0.9) * 100) / 100;
      const size = Math.round(20_000 + rand() * 200_000);
      const outcome = rand() < 0.5 ? "YES" : "NO";
      const side = rand() < 0.8 ? "BUY" : "SELL";
      const now = Date.now();
      insertTrade.run(
        `0x${trades.toString(16).padStart(64, "0")}`,
        wallet,
        marketId,
        outcome,
        side,
        price,
        size,
        price * size,
        now,
      );
      // The trades view's trigger stores the fill; SQLite reports no rowid for it.
      const tradeId = newestFill.get() as number;
      const type = rand() < 0.5 ? "whale" : "insider";
      const score = Math.round(40 + rand() * 60);
      const signal: NewSignal = {
        type,
        wallet,
        walletType: type,
        marketId,
        tradeId,
        score,
        betValue: price * size,
        side,
        outcome,
        price,
        explanation: `A ${Math.round(price * size)} USD ${side} of ${outcome} at ${price} (bench).`,
        createdAt: now,
      };
      const at = Date.now();
      const { signalId } = app.webhooks.outbox.enqueueSignal(signal);
      enqueuedAt.set(signalId, at);
    }
  });
  return { batch, enqueuedAt };
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface PhaseResult {
  phase: string;
  signals: number;
  deliveries: number;
  fanout: number;
  seconds: number;
  enqueueSeconds: number;
  deliveriesPerSecond: number;
  offeredPerSecond: number | null;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** CPU time of this process (ingest, drainer, logging) per delivery. */
  cpuUsPerDelivery: number;
  receiverCpuUsPerDelivery: number;
  /** Attempts beyond one per delivery (failures and retries). */
  extraAttempts: number;
  duplicates: number;
  missing: number;
  unexpected: number;
  badSignatures: number;
  wrongEndpoint: number;
  peakRssMb: number;
  /** JS heap in use when the phase ended (no forced GC): the rest of RSS is mostly SQLite's. */
  heapUsedMb: number;
}

const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms));
const nextTurn = () => new Promise((turn) => setImmediate(turn));

async function runPhase(opts: {
  name: string;
  app: App;
  db: Db;
  receivers: ReturnType<typeof receiversClient>;
  receiverPid: number;
  paths: Map<string, string>;
  ingest: ReturnType<typeof createIngest>;
  signals: number;
  /** Signals per ingest transaction, and how the batches are spaced. */
  plan: { kind: "burst"; batch: number } | { kind: "steady"; perTick: number; offered: number };
}): Promise<PhaseResult> {
  const { db, ingest, signals, plan } = opts;
  const pending = db.writer.prepare<[], { n: number }>(
    "SELECT count(*) AS n FROM deliveries WHERE status = 'pending'",
  );
  const cpu = process.cpuUsage();
  const receiverCpu = cpuSeconds(opts.receiverPid);
  const firstSignal =
    (db.writer.prepare("SELECT coalesce(max(id), 0) AS n FROM signals").get() as { n: number }).n +
    1;
  const started = Date.now();
  let enqueued = 0;
  let enqueueMs = 0;
  const tick = plan.kind === "burst" ? plan.batch : plan.perTick;
  for (let k = 0; enqueued < signals; k++) {
    if (plan.kind === "steady") {
      const due = started + k * STEADY_TICK_MS - Date.now();
      if (due > 0) await sleep(due);
    }
    const size = Math.min(tick, signals - enqueued);
    const t0 = performance.now();
    ingest.batch(size);
    enqueueMs += performance.now() - t0;
    enqueued += size;
    // Ingest awaits its next page between batches; the drainer and its sockets run meanwhile.
    if (plan.kind === "burst") await nextTurn();
  }
  while (pending.get()!.n > 0) await sleep(20);
  const cpuUsed = process.cpuUsage(cpu);
  const receiverCpuUsed = cpuSeconds(opts.receiverPid) - receiverCpu;
  const peakRss = peakRssMb();
  const heapUsedMb = process.memoryUsage().heapUsed / 2 ** 20;

  const { arrivals } = await opts.receivers.ask<{ arrivals: Arrivals }>({ type: "report" });
  const lastSignal = firstSignal + signals - 1;
  const rows = db.writer
    .prepare<
      [number, number],
      { id: string; signalId: number; endpointId: string; attempts: number }
    >(
      `SELECT id, signal_id AS signalId, endpoint_id AS endpointId, attempts FROM deliveries
        WHERE signal_id BETWEEN ? AND ? AND status = 'delivered'`,
    )
    .all(firstSignal, lastSignal);
  const undelivered = (
    db.writer.prepare("SELECT count(*) AS n FROM deliveries WHERE status != 'delivered'").get() as {
      n: number;
    }
  ).n;
  const expected = new Map(rows.map((row) => [row.id, row]));
  const seen = new Map<string, number>();
  const latencies: number[] = [];
  let unexpected = 0;
  let badSignatures = 0;
  let wrongEndpoint = 0;
  let last = started;
  arrivals.ids.forEach((id, i) => {
    const at = arrivals.at[i]!;
    last = Math.max(last, at);
    if (!arrivals.valid[i]) badSignatures += 1;
    const row = expected.get(id);
    if (!row) {
      unexpected += 1;
      return;
    }
    if (opts.paths.get(arrivals.paths[i]!) !== row.endpointId) wrongEndpoint += 1;
    seen.set(id, (seen.get(id) ?? 0) + 1);
    if (seen.get(id) === 1) latencies.push(at - ingest.enqueuedAt.get(row.signalId)!);
  });
  latencies.sort((a, b) => a - b);
  const deliveries = rows.length;
  const seconds = (last - started) / 1000;
  return {
    phase: opts.name,
    signals,
    deliveries,
    fanout: Number((deliveries / signals).toFixed(2)),
    seconds: Number(seconds.toFixed(2)),
    enqueueSeconds: Number((enqueueMs / 1000).toFixed(2)),
    deliveriesPerSecond: Math.round(deliveries / seconds),
    offeredPerSecond: plan.kind === "steady" ? plan.offered : null,
    latencyMs: {
      p50: percentileOfSorted(latencies, 50),
      p90: percentileOfSorted(latencies, 90),
      p99: percentileOfSorted(latencies, 99),
      max: percentileOfSorted(latencies, 100),
    },
    cpuUsPerDelivery: Math.round((cpuUsed.user + cpuUsed.system) / deliveries),
    receiverCpuUsPerDelivery: Math.round((receiverCpuUsed * 1e6) / deliveries),
    extraAttempts: rows.reduce((sum, row) => sum + row.attempts - 1, 0),
    duplicates: [...seen.values()].filter((n) => n > 1).length,
    missing: deliveries - seen.size + undelivered,
    unexpected,
    badSignatures,
    wrongEndpoint,
    peakRssMb: Math.round(peakRss),
    heapUsedMb: Math.round(heapUsedMb),
  };
}

function resultTable(phases: PhaseResult[]): string {
  const rows = [
    [
      "phase",
      "signals",
      "deliveries",
      "fan-out",
      "seconds",
      "deliv/s",
      "offered/s",
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "cpu µs/deliv",
      "peak RSS MB",
      "dup",
      "missing",
      "bad sig",
    ],
    ...phases.map((p) => [
      p.phase,
      String(p.signals),
      String(p.deliveries),
      p.fanout.toFixed(2),
      p.seconds.toFixed(2),
      String(p.deliveriesPerSecond),
      p.offeredPerSecond === null ? "-" : String(p.offeredPerSecond),
      String(p.latencyMs.p50),
      String(p.latencyMs.p90),
      String(p.latencyMs.p99),
      String(p.latencyMs.max),
      String(p.cpuUsPerDelivery),
      String(p.peakRssMb),
      String(p.duplicates),
      String(p.missing + p.unexpected + p.wrongEndpoint),
      String(p.badSignatures),
    ]),
  ];
  return alignColumns(rows, 1);
}

function fairnessTable(f: FairnessResult): string {
  const row = (name: string, r: FairnessResult["alone"]) => [
    name,
    String(r.slowTenants),
    String(r.signals),
    String(r.fastP50Ms),
    String(r.fastP99Ms),
    String(r.fastMaxMs),
    String(r.fastMissing),
  ];
  return alignColumns(
    [
      [
        "fast tenant",
        "hanging tenants",
        "signals",
        "p50 ms",
        "p99 ms",
        "max ms",
        "missing",
        "p99 per round",
      ],
      [...row("alone", f.alone), f.roundP99Ms.alone.join(" ")],
      [...row("beside hogs", f.withSlow), f.roundP99Ms.withSlow.join(" ")],
      ["p99 ratio", `${f.ratio}`, `goal <= ${f.goal}`, f.met ? "met" : "MISSED", "", "", "", ""],
    ],
    1,
  );
}

// ---------------------------------------------------------------------------------------------
// The run

function pinSelf(cpu: number): boolean {
  const pinned = spawnSync("taskset", ["-a", "-p", "-c", String(cpu), String(process.pid)], {
    stdio: "ignore",
  });
  return pinned.status === 0;
}

async function main(): Promise<number> {
  const settings = {
    signals: wholeFlag("signals", flags.signals, 1),
    steadySignals: wholeFlag("steady-signals", flags["steady-signals"], 0),
    rate: wholeFlag("rate", flags.rate, 1),
    batch: wholeFlag("batch", flags.batch, 1),
    receivers: wholeFlag("receivers", flags.receivers, 1),
    fairnessSeconds: wholeFlag("fairness-seconds", flags["fairness-seconds"], 0),
    fairnessRate: wholeFlag("fairness-rate", flags["fairness-rate"], 1),
    fairnessRounds: wholeFlag("fairness-rounds", flags["fairness-rounds"], 1),
  };
  // Read before pinning: afterwards this process sees only its own core.
  const cores = availableParallelism();
  const pin = !flags["no-pin"] && cores >= 2 && existsSync("/usr/bin/taskset");
  const loadBefore = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-bench-webhooks-"));
  const dbPath = join(dir, "bench.db");

  const receiverArgs = [...process.execArgv, SELF, "--as-receivers", String(settings.receivers)];
  const child = pin
    ? spawn("taskset", ["-c", String(RECEIVER_CPU), process.execPath, ...receiverArgs], {
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      })
    : spawn(process.execPath, receiverArgs, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const receivers = receiversClient(child);
  const ports = await receivers.ready();
  if (pin && !pinSelf(APP_CPU)) say("could not pin this process; running unpinned");

  // The app as `smartmoney serve` builds it (cli/context.ts withApp), logs going to a file.
  const env = { ...process.env, SMARTMONEY_DB: dbPath, SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1" };
  const loaded = loadConfig(env);
  if (!loaded.ok) throw new Error(loaded.problems.join("; "));
  const db = openDb(dbPath);
  migrate(db.writer);
  const logFile = pino.destination({ dest: join(dir, "app.log"), sync: false, minLength: 4096 });
  const log = createLog(loaded.config.logLevel, logFile);
  const app = createApp({
    db,
    config: loaded.config,
    clock: systemClock,
    log,
    fetch: globalThis.fetch,
    secretKey: loadInstallationKey(db, env).key,
  });
  let scheduler: Scheduler | undefined;
  try {
    const secrets = seedWorld(app, db, ports);
    await receivers.ask({ type: "secrets", secrets });
    const paths = new Map(
      app.webhooks.endpoints
        .list(null)
        .map((e) => [new URL(e.callbackUrl).pathname, e.id] as [string, string]),
    );
    const ingest = createIngest(app, db, 7);
    scheduler = startScheduler([drainJob(app)], log);
    say(
      `${ENDPOINTS.length} endpoints on ${settings.receivers} receivers; app on cpu ${pin ? APP_CPU : "any"}, receivers on cpu ${pin ? RECEIVER_CPU : "any"}; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")}`,
    );
    const common = { app, db, receivers, receiverPid: child.pid!, paths, ingest };
    // The app at rest, world seeded and pool idle: what the phases' peaks grow from.
    const idleRssMb = Math.round(process.memoryUsage().rss / 2 ** 20);

    const profiler = flags["cpu-prof"] ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.start");
    }
    const burst = await runPhase({
      ...common,
      name: "burst",
      signals: settings.signals,
      plan: { kind: "burst", batch: settings.batch },
    });
    say(`burst: ${burst.deliveries} deliveries at ${burst.deliveriesPerSecond}/s`);
    let profilePath: string | undefined;
    if (profiler) {
      const { profile } = await profiler.post("Profiler.stop");
      profiler.disconnect();
      mkdirSync(join(RESULTS_DIR, "profiles"), { recursive: true });
      profilePath = join(RESULTS_DIR, "profiles", "webhooks-burst.cpuprofile");
      writeFileSync(profilePath, JSON.stringify(profile));
    }

    const phases = [burst];
    if (settings.steadySignals > 0) {
      // Signals per tick so that, at the burst's fan-out, deliveries are offered at --rate.
      const perTick = Math.max(
        1,
        Math.round((settings.rate * STEADY_TICK_MS) / 1000 / Math.max(burst.fanout, 0.01)),
      );
      const steady = await runPhase({
        ...common,
        name: "steady",
        signals: settings.steadySignals,
        plan: {
          kind: "steady",
          perTick,
          offered: Math.round((perTick * burst.fanout * 1000) / STEADY_TICK_MS),
        },
      });
      say(`steady: p50 ${steady.latencyMs.p50} ms, p99 ${steady.latencyMs.p99} ms`);
      phases.push(steady);
    }
    let fairness: FairnessResult | null = null;
    if (settings.fairnessSeconds > 0) {
      // Its apps schedule their own drain job; croner allows one job of a name at a time.
      await scheduler.stop();
      scheduler = undefined;
      fairness = await runFairness({
        seconds: settings.fairnessSeconds,
        perSecond: settings.fairnessRate,
        timeoutMs: 5_000,
        rounds: settings.fairnessRounds,
      });
      say(
        `fairness: fast tenant p99 ${fairness.alone.fastP99Ms} ms alone, ${fairness.withSlow.fastP99Ms} ms beside hanging tenants`,
      );
    }
    const loadAfter = loadavg();

    process.stdout.write(`${resultTable(phases)}\n`);
    if (fairness) process.stdout.write(`${fairnessTable(fairness)}\n`);
    const steady = phases.find((p) => p.phase === "steady");
    const latencyPhase = steady ?? burst;
    const report = {
      bench: "webhooks",
      at: new Date().toISOString(),
      node: process.version,
      machine: {
        cpus: cores,
        pinned: pin ? { app: APP_CPU, receivers: RECEIVER_CPU } : null,
        loadAverageBefore: loadBefore.map((l) => Number(l.toFixed(2))),
        loadAverageAfter: loadAfter.map((l) => Number(l.toFixed(2))),
      },
      settings,
      world: {
        endpoints: ENDPOINTS.length,
        accounts: new Set(ENDPOINTS.map((e) => e.account)).size,
        receivers: settings.receivers,
        limits: { concurrency: 32, perEndpoint: 2, perAccount: 8 },
      },
      idleRssMb,
      // Page cache and memory-mapped pages of this file count in RSS as they are touched.
      databaseMb: Math.round(
        ["", "-wal"].reduce((sum, suffix) => sum + statSync(`${dbPath}${suffix}`).size, 0) /
          2 ** 20,
      ),
      phases,
      fairness,
      goals: {
        ...(fairness && {
          fastTenantP99WithSlowTenants: {
            goal: fairness.goal,
            value: fairness.ratio,
            met: fairness.met,
          },
        }),
        deliveriesPerSecond: {
          goal: GOAL_DELIVERIES_PER_S,
          value: burst.deliveriesPerSecond,
          met: burst.deliveriesPerSecond >= GOAL_DELIVERIES_PER_S,
        },
        p50LatencyMs: {
          phase: latencyPhase.phase,
          goal: GOAL_P50_MS,
          value: latencyPhase.latencyMs.p50,
          met: latencyPhase.latencyMs.p50 <= GOAL_P50_MS,
        },
      },
    };
    recordResults("webhooks", report);
    process.stdout.write(`${JSON.stringify(report)}\n`);
    say(
      `load average went ${loadBefore[0]!.toFixed(2)} -> ${loadAfter[0]!.toFixed(2)} on ${cores} cores`,
    );
    if (profilePath) printProfile(profilePath);

    const broken = phases.filter(
      (p) => p.duplicates + p.missing + p.unexpected + p.badSignatures + p.wrongEndpoint > 0,
    );
    for (const p of broken) {
      say(
        `${p.phase}: ${p.duplicates} duplicated, ${p.missing} missing, ${p.unexpected} unexpected, ${p.wrongEndpoint} to the wrong endpoint, ${p.badSignatures} bad signatures: figures invalid`,
      );
    }
    for (const [name, goal] of Object.entries(report.goals)) {
      if (!goal.met) say(`goal missed: ${name} ${goal.value} (goal ${goal.goal})`);
    }
    return broken.length > 0 ? 1 : 0;
  } finally {
    await scheduler?.stop();
    await app.webhooks.drainer.stop();
    app.close();
    db.close();
    logFile.flushSync();
    await receivers.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function printProfile(path: string): void {
  const heading = `the burst: ${relative(ROOT, path)}`;
  process.stdout.write(`${formatProfile(heading, summariseProfile(path))}\n`);
}

if (flags["as-receivers"] !== undefined) {
  await runReceivers(wholeFlag("receivers", flags["as-receivers"], 1));
} else {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      say(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exitCode = 1;
    },
  );
}
