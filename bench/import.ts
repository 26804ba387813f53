/**
 * Import throughput and memory: `npm run bench:import`.
 *
 * For each size it writes a deterministic world file, then runs in separate child processes
 * (so each has its own peak RSS):
 *   import  the real path: importJsonl (validation, duplicate checks, dirty marks, hooks seam)
 *   raw     the floor: read the same lines, JSON.parse, one prepared INSERT per row into the same
 *           migrated schema in one transaction; no validation, no duplicate handling
 * and prints rows/s, trades/s, the import/raw ratio and peak RSS. Peak RSS at 250k and 1M
 * trades shows whether memory grows with file size.
 *
 *   cli     (with --with-cli) `smartmoney import FILE`: the import plus the app's ingest hooks
 *
 * Flags: --sizes 250000,1000000 (synthetic worlds) | --fixture small|medium|large (the fixture
 * generator's world); --with-cli; --keep (leave the temp folder);
 * `--write FILE TRADES` only writes a world file.
 */
import { spawnSync } from "node:child_process";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdtempSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { systemClock } from "../src/clock";
import { openDb } from "../src/db/open";
import { type Scale, writeWorld as writeFixtureWorld } from "../src/fixtures/world";
import { importJsonl } from "../src/ingest/import";
import { fileSource, readLines } from "../src/ingest/sources";
import { migrate } from "../src/migrations/migrate";
import { peakRssMb } from "./lib/peak-rss";
import { randomHex, uniform } from "./lib/random";
import { alignColumns } from "./lib/report";
import { recordResults } from "./lib/results";

interface WorldSpec {
  trades: number;
  markets: number;
  wallets: number;
  seed: number;
}

const MEDIUM = { markets: 2_000, wallets: 20_000, seed: 42 };
const NOW = Date.parse("2026-11-01T00:00:00Z");
const DAY = 86_400_000;
const CATEGORIES = ["politics", "crypto", "sports", "culture", "economics", "breaking-news"];

/**
 * A synthetic medium-like world in interchange format (markets first, then wallets, trades in
 * time order, resolutions last) of any trade count, so the same markets and wallets can be
 * measured at several file sizes. `--fixture SCALE` measures the fixture generator's world.
 */
function* worldLines(spec: WorldSpec): Generator<string> {
  const rand = uniform(spec.seed);
  const start = NOW - 120 * DAY;
  const markets = Array.from({ length: spec.markets }, () => randomHex(rand, 64));
  for (const [i, condition_id] of markets.entries()) {
    yield JSON.stringify({
      type: "market",
      slug: `bench-market-${i}`,
      title: `Will benchmark event ${i} happen?`,
      category: CATEGORIES[i % CATEGORIES.length],
      condition_id,
      end_date: new Date(start + Math.floor(rand() * 150 * DAY)).toISOString(),
      created_at: new Date(start - Math.floor(rand() * 30 * DAY)).toISOString(),
    });
  }
  const wallets = Array.from({ length: spec.wallets }, () => randomHex(rand, 40));
  for (const [i, address] of wallets.entries()) {
    if (i % 4 === 0) {
      yield JSON.stringify({
        type: "wallet",
        address,
        platform_name: `trader${i}`,
        platform_pnl: Math.round((rand() - 0.5) * 1e6) / 100,
        platform_pnl_as_of: NOW,
      });
    } else {
      yield JSON.stringify({ type: "wallet", address });
    }
  }
  const step = (120 * DAY) / spec.trades;
  for (let i = 0; i < spec.trades; i++) {
    // Skewed activity: a few wallets and markets carry most of the volume, as in the real world.
    const wallet = wallets[Math.floor(rand() ** 2 * wallets.length)]!;
    const market = markets[Math.floor(rand() ** 1.5 * markets.length)]!;
    const price = Math.round((0.02 + rand() * 0.96) * 1000) / 1000;
    yield JSON.stringify({
      type: "trade",
      tx_hash: randomHex(rand, 64),
      log_index: Math.floor(rand() * 8),
      wallet,
      condition_id: market,
      outcome: rand() < 0.5 ? "YES" : "NO",
      side: rand() < 0.7 ? "BUY" : "SELL",
      price,
      size: Math.round(rand() * 500_000) / 100 + 1,
      timestamp: Math.floor(start + i * step),
    });
  }
  for (let i = 0; i < spec.markets; i += 2) {
    yield JSON.stringify({
      type: "resolution",
      condition_id: markets[i],
      outcome: i % 4 === 0 ? "YES" : "NO",
      resolved_at: new Date(NOW - DAY).toISOString(),
    });
  }
}

async function writeWorld(path: string, spec: WorldSpec): Promise<void> {
  const out = createWriteStream(path);
  let buffer = "";
  for (const line of worldLines(spec)) {
    buffer += `${line}\n`;
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await new Promise((r) => out.once("drain", r));
      buffer = "";
    }
  }
  out.end(buffer);
  await new Promise((r) => out.once("finish", r));
}

interface ChildResult {
  seconds: number;
  /** CPU time (user + system): steadier than wall time on a shared machine. */
  cpuSeconds: number;
  rows: number;
  trades: number;
  maxRssMb: number;
}

/** The real import path, as `smartmoney import FILE` runs it. */
async function runImport(file: string, dbPath: string): Promise<ChildResult> {
  const db = openDb(dbPath);
  migrate(db.writer);
  const started = performance.now();
  const cpu = process.cpuUsage();
  const result = await importJsonl({ db, clock: systemClock }, fileSource(file));
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = cpuSince(cpu);
  if (!result.ok) throw new Error(`${result.reason}\n${JSON.stringify(result.errors.slice(0, 5))}`);
  const trades = result.value.counts.trade.new;
  db.close();
  return { seconds, cpuSeconds, rows: result.value.rows, trades, maxRssMb: maxRssMb() };
}

/** The floor: the same rows through one prepared INSERT each, nothing else. */
async function runRaw(file: string, dbPath: string): Promise<ChildResult> {
  const db = openDb(dbPath);
  migrate(db.writer);
  const w = db.writer;
  const market = w.prepare(
    `INSERT INTO markets (slug, title, category, condition_id, end_date, created_at,
       resolved_outcome, resolved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const wallet = w.prepare(
    `INSERT INTO wallets (address, platform_name, platform_pnl, platform_pnl_as_of, created_at)
     VALUES (?, ?, ?, ?, ?)`,
  );
  const label = w.prepare("INSERT INTO labels (address, kind, name) VALUES (?, ?, ?)");
  const trade = w.prepare(
    `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
       usd_value, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const transfer = w.prepare(
    `INSERT INTO transfers (tx_hash, log_index, from_address, to_address, token, amount, ts)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const resolve = w.prepare(
    "UPDATE markets SET resolved_outcome = ?, resolved_at = ? WHERE condition_id = ?",
  );
  const ms = (v: unknown) => (v == null ? null : typeof v === "number" ? v : Date.parse(String(v)));
  const ids = new Map<string, number>();
  const started = performance.now();
  const cpu = process.cpuUsage();
  let rows = 0;
  let trades = 0;
  w.exec("BEGIN IMMEDIATE");
  for await (const text of readLines(createReadStream(file))) {
    const o = JSON.parse(text);
    rows++;
    switch (o.type) {
      case "trade":
        trades++;
        trade.run(
          o.tx_hash,
          o.log_index,
          o.wallet,
          ids.get(o.condition_id),
          o.outcome,
          o.side,
          o.price,
          o.size,
          o.usd_value ?? o.price * o.size,
          ms(o.timestamp),
        );
        break;
      case "transfer":
        transfer.run(o.tx_hash, o.log_index, o.from, o.to, o.token, o.amount, ms(o.timestamp));
        break;
      case "market": {
        const info = market.run(
          o.slug,
          o.title,
          o.category,
          o.condition_id,
          ms(o.end_date),
          ms(o.created_at),
          o.resolved_outcome ?? null,
          ms(o.resolved_at),
        );
        ids.set(o.condition_id, Number(info.lastInsertRowid));
        break;
      }
      case "wallet":
        wallet.run(
          o.address,
          o.platform_name ?? null,
          o.platform_pnl ?? null,
          ms(o.platform_pnl_as_of),
          ms(o.created_at),
        );
        break;
      case "label":
        label.run(o.address, o.kind, o.name);
        break;
      case "resolution":
        resolve.run(o.outcome, ms(o.resolved_at), o.condition_id);
        break;
    }
  }
  w.exec("COMMIT");
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = cpuSince(cpu);
  db.close();
  return { seconds, cpuSeconds, rows, trades, maxRssMb: maxRssMb() };
}

function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

function maxRssMb(): number {
  return peakRssMb();
}

/**
 * `smartmoney import FILE --json` as an operator runs it: the same import plus the app's ingest
 * hooks (signal detection and the webhook outbox). Peak RSS comes from GNU time when present.
 */
function cliRun(file: string, dbPath: string): ChildResult {
  const main = fileURLToPath(new URL("../cli/main.ts", import.meta.url));
  const node = [
    process.execPath,
    ...process.execArgv,
    main,
    "import",
    file,
    "--db",
    dbPath,
    "--json",
  ];
  const timed = existsSync("/usr/bin/time");
  const run = spawnSync(
    timed ? "/usr/bin/time" : node[0]!,
    timed ? ["-f", "%M %U %S", ...node] : node.slice(1),
    {
      encoding: "utf8",
      maxBuffer: 1 << 24,
    },
  );
  if (run.status !== 0) throw new Error(`cli import failed: ${run.stderr}`);
  const [report] = JSON.parse(run.stdout) as {
    seconds: number;
    rows: number;
    counts: { trade: { new: number } };
  }[];
  const [kb, user, sys] = timed
    ? run.stderr.trim().split("\n").pop()!.split(" ").map(Number)
    : [Number.NaN, Number.NaN, Number.NaN];
  return {
    seconds: report!.seconds,
    cpuSeconds: user! + sys!,
    rows: report!.rows,
    trades: report!.counts.trade.new,
    maxRssMb: kb! / 1024,
  };
}

function child(mode: "import" | "raw", file: string, dbPath: string): ChildResult {
  const self = fileURLToPath(import.meta.url);
  const run = spawnSync(
    process.execPath,
    [...process.execArgv, self, "--child", mode, file, dbPath],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 1 << 20,
    },
  );
  if (run.status !== 0) throw new Error(`${mode} child failed (status ${run.status})`);
  return JSON.parse(run.stdout.trim().split("\n").pop()!) as ChildResult;
}

interface BenchWorld {
  name: string;
  write(path: string): Promise<unknown>;
}

/**
 * The files to measure: synthetic worlds of the given trade counts (default 250k and 1M), or
 * with `--fixture SCALE` the fixture generator's world (src/fixtures) at that scale.
 */
function worldsFrom(argv: string[]): BenchWorld[] {
  const value = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
  const scale = value("--fixture");
  if (scale) {
    return [
      {
        name: `fixture ${scale}`,
        write: (path) => writeFixtureWorld(path, { scale: scale as Scale, seed: 42, now: NOW }),
      },
    ];
  }
  const sizes = value("--sizes")?.split(",").map(Number) ?? [250_000, 1_000_000];
  return sizes.map((trades) => ({
    name: `synthetic ${trades.toLocaleString("en-US")}`,
    write: (path) => writeWorld(path, { trades, ...MEDIUM }),
  }));
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === "--write") {
    // For experiments: bench/import.ts --write FILE TRADES
    await writeWorld(argv[1]!, { trades: Number(argv[2]), ...MEDIUM });
    return;
  }
  if (argv[0] === "--child") {
    const [, mode, file, dbPath] = argv as [string, "import" | "raw", string, string];
    const result = mode === "import" ? await runImport(file, dbPath) : await runRaw(file, dbPath);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-bench-import-"));
  const rows: Record<string, string>[] = [];
  try {
    for (const world of worldsFrom(argv)) {
      const file = join(dir, `${world.name.replace(/\W+/g, "-")}.jsonl`);
      const generated = performance.now();
      await world.write(file);
      const mb = statSync(file).size / 1e6;
      process.stderr.write(
        `wrote ${file} (${mb.toFixed(0)} MB) in ${((performance.now() - generated) / 1000).toFixed(1)} s\n`,
      );
      const results: Record<string, ChildResult> = {};
      const modes = argv.includes("--with-cli")
        ? (["raw", "import", "cli"] as const)
        : (["raw", "import"] as const);
      for (const mode of modes) {
        const dbPath = join(dir, `${mode}.db`);
        results[mode] = mode === "cli" ? cliRun(file, dbPath) : child(mode, file, dbPath);
        for (const suffix of ["", "-wal", "-shm"]) rmSync(dbPath + suffix, { force: true });
      }
      const raw = results.raw!;
      for (const mode of modes) {
        const r = results[mode]!;
        rows.push({
          world: world.name,
          path: mode,
          seconds: r.seconds.toFixed(2),
          "cpu s": r.cpuSeconds.toFixed(2),
          "rows/s": Math.round(r.rows / r.seconds).toLocaleString("en-US"),
          "trades/s": Math.round(r.trades / r.seconds).toLocaleString("en-US"),
          "peak RSS MB": r.maxRssMb.toFixed(0),
          "÷ raw": mode === "raw" ? "" : (raw.seconds / r.seconds).toFixed(2),
          "÷ raw (cpu)": mode === "raw" ? "" : (raw.cpuSeconds / r.cpuSeconds).toFixed(2),
        });
      }
      if (!argv.includes("--keep")) rmSync(file, { force: true });
    }
  } finally {
    if (!argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
  }
  printTable(rows);
  recordResults("import", { rows });
}

function printTable(rows: Record<string, string>[]): void {
  const columns = Object.keys(rows[0] ?? {});
  const cells = [columns, ...rows.map((r) => columns.map((c) => r[c]!))];
  process.stdout.write(`${alignColumns(cells, 0)}\n`);
}

await main(process.argv.slice(2));
