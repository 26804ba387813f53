/**
 * `npm run bench:live`: the built binary (`dist/smartmoney serve`, ingest on) against the
 * project's Polymarket simulator (test/simulator) for --minutes (default 10): live fills at
 * --rate a second (default 12, about 1M a day) with --burst-rate bursts (default 200/s for 5 s
 * every minute), the socket dropped every --drop-every seconds and down for --outage-seconds
 * once mid-run, a new event with its markets created every --new-market-every seconds (default
 * 20), whale signals on every fill of 5 USD or more and a webhook endpoint on a loopback
 * receiver.
 *
 * It reports fills lost and duplicated (both must be 0), the lag from a fill's emission to its
 * row in the database and to its webhook at the receiver (p50/p99/max), the API's p99 during
 * the run beside its p99 on the idle server measured first (the baseline, same run), the
 * discovery lag of new markets (from creation to stored with their category; none may be
 * missed) and the server's peak RSS. Goals: fill-to-webhook p50 ≤ 3 s, p99 ≤ 30 s.
 *
 *   npm run bench:live -- [--minutes 10] [--rate 12] [--burst-rate 200] [--burst-seconds 5]
 *                         [--burst-every 60] [--drop-every 90] [--outage-seconds 20]
 *                         [--new-market-every 20] [--no-build]
 *
 * Prints a table and one JSON line; writes the JSON to bench/results/live.json.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openConnection } from "../src/db/open";
import { startSimulator } from "../test/simulator/server";
import { SimWorld } from "../test/simulator/world";
import { childPids, stop as stopChild } from "./lib/procs";
import { alignColumns, percentile } from "./lib/report";
import { recordResults } from "./lib/results";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BINARY = join(ROOT, "dist", "smartmoney");
const GOAL_P50_S = 3;
const GOAL_P99_S = 30;

const { values: flags } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    rate: { type: "string", default: "12" },
    "burst-rate": { type: "string", default: "200" },
    "burst-seconds": { type: "string", default: "5" },
    "burst-every": { type: "string", default: "60" },
    "drop-every": { type: "string", default: "90" },
    "outage-seconds": { type: "string", default: "20" },
    "new-market-every": { type: "string", default: "20" },
    "no-build": { type: "boolean", default: false },
  },
});
const num = (name: keyof typeof flags) => Number(flags[name]);
const say = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stats = (values: number[]) => ({
  n: values.length,
  p50: percentile(values, 50),
  p99: percentile(values, 99),
  max: values.length ? Math.max(...values) : Number.NaN,
});

function cli(env: NodeJS.ProcessEnv, args: string[]): unknown {
  const run = spawnSync(BINARY, [...args, "--json"], { env, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`smartmoney ${args.join(" ")}: ${run.stderr.trim()}`);
  return JSON.parse(run.stdout);
}

function peakRssMb(pid: number): number {
  const kb = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return kb === undefined ? Number.NaN : Number(kb) / 1024;
}

async function main(): Promise<void> {
  if (!flags["no-build"] || !existsSync(BINARY)) {
    say("building dist/smartmoney");
    const build = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0) throw new Error("npm run build failed");
  }
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-bench-live-"));
  const world = new SimWorld({ events: 200, marketsPerEvent: 5, wallets: 5_000, now: Date.now() });
  const sim = await startSimulator({ world, now: Date.now });

  // The loopback receiver: when each signal's webhook arrived, and every delivery id seen.
  const arrivals = new Map<number, number>();
  const deliveries = new Map<string, number>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = Date.now();
      const id = String(req.headers["x-service-delivery-id"] ?? "");
      deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          signal?: { id: number };
        };
        if (body.signal && !arrivals.has(body.signal.id)) arrivals.set(body.signal.id, at);
      } catch {
        // counted as a delivery all the same
      }
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const db = join(dir, "live.db");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SMARTMONEY_DB: db,
    SMARTMONEY_LOG_LEVEL: "warn",
    SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
    SMARTMONEY_WHALE_SIGNAL_USD: "5",
    SMARTMONEY_INGEST_CRON: "*/10 * * * * *",
    SMARTMONEY_POLYMARKET_DATA_URL: sim.url,
    SMARTMONEY_POLYMARKET_GAMMA_URL: sim.url,
    SMARTMONEY_POLYMARKET_STREAM_URL: sim.wsUrl,
  };
  cli(env, ["migrate"]);
  const { key } = cli(env, ["keys", "mint", "--tier", "terminal_pro", "--account", "bench"]) as {
    key: string;
  };
  // The bench's own API traffic must not hit the tier's hourly quota.
  cli(env, ["accounts", "set-limits", "bench", "--hourly", "1000000", "--monthly", "100000000"]);
  cli(env, [
    "webhooks",
    "add",
    "--account",
    "bench",
    "--url",
    hook,
    "--channel",
    "api",
    "--score-type",
    "whale",
  ]);

  say("starting dist/smartmoney serve with ingest on");
  const server: ChildProcess = spawn(BINARY, ["serve", "--port", "0"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let serverLog = "";
  server.stderr?.on("data", (d: Buffer) => {
    serverLog = (serverLog + d.toString()).slice(-20_000);
  });
  const base = await new Promise<string>((resolveUrl, reject) => {
    let out = "";
    server.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolveUrl(match[1]!);
    });
    server.once("exit", (code) => reject(new Error(`serve exited ${code}: ${serverLog}`)));
  });

  // API latency: one request every 100 ms, a random trader's recent trades.
  const apiLatency: number[] = [];
  const apiErrors = new Map<string, number>();
  const apiError = (what: string) => apiErrors.set(what, (apiErrors.get(what) ?? 0) + 1);
  let apiPhase: number[] = apiLatency;
  let apiOn = true;
  const apiLoop = (async () => {
    while (apiOn) {
      const wallet = world.wallets[Math.floor(Math.random() * world.wallets.length)]!;
      const started = performance.now();
      try {
        const res = await fetch(`${base}/v1/trades?wallet=${wallet}&limit=20`, {
          headers: { authorization: `Bearer ${key}` },
        });
        await res.arrayBuffer();
        if (res.ok) apiPhase.push(performance.now() - started);
        else apiError(`HTTP ${res.status}`);
      } catch (error) {
        apiError(error instanceof Error ? error.message : String(error));
      }
      await sleep(100);
    }
  })();
  say("baseline: the idle server's API latency for 10 s");
  const idleLatency: number[] = [];
  apiPhase = idleLatency;
  await sleep(10_000);
  apiPhase = apiLatency;

  // Rows as they land: read-only polling of the server's database.
  const reader = openConnection(db, { readonly: true });
  const newRows = reader.prepare("SELECT id, tx_hash FROM trades WHERE id > ? ORDER BY id");
  const emitted = new Map<string, number>();
  const storedAt = new Map<string, number>();
  const rowsPerTx = new Map<string, number>();
  let lastId = 0;
  const poll = () => {
    const now = Date.now();
    for (const row of newRows.all(lastId) as { id: number; tx_hash: string }[]) {
      lastId = row.id;
      rowsPerTx.set(row.tx_hash, (rowsPerTx.get(row.tx_hash) ?? 0) + 1);
      if (!storedAt.has(row.tx_hash)) storedAt.set(row.tx_hash, now);
    }
  };
  // New markets: when each was created, and when it was stored with its category.
  const marketRow = reader
    .prepare("SELECT 1 FROM markets WHERE condition_id = ? AND category IS NOT NULL")
    .pluck();
  const createdAt = new Map<string, number>();
  const discoveredAt = new Map<string, number>();
  const pollMarkets = () => {
    const now = Date.now();
    for (const [condition] of createdAt) {
      if (!discoveredAt.has(condition) && marketRow.get(condition) !== undefined) {
        discoveredAt.set(condition, now);
      }
    }
  };
  const poller = setInterval(() => {
    poll();
    pollMarkets();
  }, 100);

  const minutes = num("minutes");
  const runMs = minutes * 60_000;
  const started = Date.now();
  let carry = 0;
  let drops = 0;
  let outages = 0;
  let lastDrop = started;
  let lastMarket = started;
  let outageDone = false;
  say(`generating fills for ${minutes} min at ${num("rate")}/s with ${num("burst-rate")}/s bursts`);
  while (Date.now() - started < runMs) {
    const t = (Date.now() - started) / 1000;
    const inBurst = t % num("burst-every") >= num("burst-every") - num("burst-seconds");
    carry += (inBurst ? num("burst-rate") : num("rate")) / 10;
    const n = Math.floor(carry);
    carry -= n;
    if (n > 0) {
      const at = Date.now();
      for (const f of sim.emit(n)) emitted.set(f.tx, at);
    }
    if (Date.now() - lastMarket >= num("new-market-every") * 1000) {
      lastMarket = Date.now();
      for (const m of world.addEvent(lastMarket).markets) createdAt.set(m.conditionId, lastMarket);
    }
    if (Date.now() - lastDrop >= num("drop-every") * 1000) {
      sim.dropSockets();
      drops++;
      lastDrop = Date.now();
    }
    if (!outageDone && t >= runMs / 2000) {
      outageDone = true;
      outages++;
      sim.socketDown = true;
      sim.dropSockets();
      setTimeout(() => {
        sim.socketDown = false;
      }, num("outage-seconds") * 1000);
    }
    if (Math.floor(t) % 60 === 0 && t - Math.floor(t) < 0.1) {
      say(
        `${Math.round(t)} s: ${emitted.size} fills emitted, ${storedAt.size} stored, ${arrivals.size} webhooks`,
      );
    }
    await sleep(100);
  }
  apiOn = false;
  say("fills stopped; waiting for the last rows and webhooks (up to 120 s)");
  const signalOf = reader.prepare(
    "SELECT s.id AS signal, t.tx_hash AS tx FROM signals s JOIN trades t ON t.id = s.trade_id WHERE s.type = 'whale'",
  );
  const deadline = Date.now() + 120_000;
  let signals: { signal: number; tx: string }[] = [];
  while (Date.now() < deadline) {
    poll();
    signals = signalOf.all() as typeof signals;
    pollMarkets();
    if (
      storedAt.size >= emitted.size &&
      arrivals.size >= signals.length &&
      discoveredAt.size >= createdAt.size
    ) {
      break;
    }
    await sleep(500);
  }
  clearInterval(poller);
  await apiLoop;
  const rss = peakRssMb(server.pid!);
  // serve runs its jobs (ingest, refresh, deliveries) in a child process of its own.
  const jobsRss = childPids(server.pid!).reduce((sum, pid) => sum + peakRssMb(pid), 0);
  await stopChild(server);
  receiver.close();
  reader.close();
  await sim.close();

  const lost = [...emitted.keys()].filter((tx) => !storedAt.has(tx)).length;
  const duplicated = [...rowsPerTx.values()].reduce((sum, n) => sum + (n - 1), 0);
  const unknown = [...storedAt.keys()].filter((tx) => !emitted.has(tx)).length;
  const storeLag = [...emitted]
    .filter(([tx]) => storedAt.has(tx))
    .map(([tx, at]) => (storedAt.get(tx)! - at) / 1000);
  const hookLag = signals
    .filter((s) => arrivals.has(s.signal) && emitted.has(s.tx))
    .map((s) => (arrivals.get(s.signal)! - emitted.get(s.tx)!) / 1000);
  const hooksMissing = signals.filter((s) => !arrivals.has(s.signal)).length;
  const duplicateDeliveries = [...deliveries.values()].reduce((sum, n) => sum + (n - 1), 0);
  const discoveryLag = [...discoveredAt].map(([c, at]) => (at - createdAt.get(c)!) / 1000);
  const marketsMissed = createdAt.size - discoveredAt.size;
  const discovery = stats(discoveryLag);
  const store = stats(storeLag);
  const webhook = stats(hookLag);
  const api = stats(apiLatency);
  const idle = stats(idleLatency);
  const result = {
    minutes,
    fills_emitted: emitted.size,
    fills_stored: storedAt.size,
    fills_lost: lost,
    fills_duplicated: duplicated,
    rows_not_emitted: unknown,
    socket_drops: drops,
    socket_outages: outages,
    signals: signals.length,
    webhooks_received: arrivals.size,
    webhooks_missing: hooksMissing,
    webhook_duplicate_deliveries: duplicateDeliveries,
    markets_created: createdAt.size,
    markets_discovered: discoveredAt.size,
    markets_missed: marketsMissed,
    market_discovery_s: discovery,
    fill_to_stored_s: store,
    fill_to_webhook_s: webhook,
    api_ms: { ...api, errors: Object.fromEntries(apiErrors) },
    api_idle_ms: idle,
    api_p99_vs_idle: api.p99 / idle.p99,
    peak_rss_mb: Math.round(rss),
    jobs_peak_rss_mb: Math.round(jobsRss),
    goals: {
      lost_and_duplicated_zero: lost === 0 && duplicated === 0,
      webhook_p50_le_3s: webhook.p50 <= GOAL_P50_S,
      webhook_p99_le_30s: webhook.p99 <= GOAL_P99_S,
      no_market_missed: marketsMissed === 0,
    },
  };
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");
  const table = alignColumns([
    ["figure", "n", "p50", "p99", "max"],
    ["fill → stored (s)", String(store.n), f(store.p50), f(store.p99), f(store.max)],
    ["fill → webhook (s)", String(webhook.n), f(webhook.p50), f(webhook.p99), f(webhook.max)],
    [
      "market → discovered (s)",
      String(discovery.n),
      f(discovery.p50),
      f(discovery.p99),
      f(discovery.max),
    ],
    ["API during run (ms)", String(api.n), f(api.p50), f(api.p99), f(api.max)],
    ["API idle, baseline (ms)", String(idle.n), f(idle.p50), f(idle.p99), f(idle.max)],
  ]);
  process.stdout.write(
    [
      `bench:live: ${minutes} min, ${emitted.size} fills emitted, ${storedAt.size} stored, lost ${lost}, duplicated ${duplicated}`,
      `socket drops ${drops} + ${outages} outage of ${num("outage-seconds")} s; ${signals.length} whale signals, ${arrivals.size} webhooks received (${hooksMissing} missing, ${duplicateDeliveries} delivered twice)`,
      table,
      `API p99 during the run / idle: ${f(result.api_p99_vs_idle)}×; API errors ${JSON.stringify(result.api_ms.errors)}; peak RSS of serve ${result.peak_rss_mb} MB, of its jobs process ${result.jobs_peak_rss_mb} MB`,
      `new markets: ${createdAt.size} created, ${discoveredAt.size} discovered with their category, ${marketsMissed} missed; discovery lag p50 ${f(discovery.p50)} s, max ${f(discovery.max)} s`,
      `goals: 0 lost and duplicated ${result.goals.lost_and_duplicated_zero ? "met" : "MISSED"}; webhook p50 ≤ ${GOAL_P50_S} s ${result.goals.webhook_p50_le_3s ? "met" : "MISSED"}; p99 ≤ ${GOAL_P99_S} s ${result.goals.webhook_p99_le_30s ? "met" : "MISSED"}; no new market missed ${result.goals.no_market_missed ? "met" : "MISSED"}`,
      JSON.stringify(result),
      "",
    ].join("\n"),
  );
  recordResults("live", result);
  rmSync(dir, { recursive: true, force: true });
  if (!result.goals.lost_and_duplicated_zero || !result.goals.no_market_missed) {
    process.exitCode = 1;
  }
}

main().catch((error) => {
  process.stderr.write(
    `bench:live failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
