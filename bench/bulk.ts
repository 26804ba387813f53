/**
 * Bulk load at scale: `npm run bench:bulk` (run `npm run build` first).
 *
 * For each world (default medium and large, `--scales medium,large`):
 *   seed    `smartmoney seed --scale S` end to end (import + full refresh), timed, with the
 *           child's peak RSS polled from /proc/PID/status; skipped when the world file exists
 *           and --reseed is not given (its last timing is kept beside it)
 *   import  1M new fills (`--fills N`) for the world's markets and wallets (a fifth new wallets,
 *           a third of the fills sharing a transaction with the previous one), imported with
 *           `smartmoney import` into a copy of the world (migrated first by the same build),
 *           with bench/lib/io-probe.cjs preloaded to report the process's own /proc/self/io, CPU
 *           time and VmHWM as it exits; once per input variant (`--variants`, default all):
 *           `time` (JSONL in time order, random hashes), `shuffled` (the same, lines shuffled),
 *           `sequential` (counter hashes 0x…01, 0x…02), `parquet` (the time-ordered fills as a
 *           Parquet file), `past` and `past-parquet` (fills of 10,000 markets resolved long ago,
 *           imported with SMARTMONEY_FILL_RETENTION on: the bulk path into the fill history), each
 *           into a fresh copy
 * (--binary PATH: the build to run, default dist/smartmoney, so an old build kept aside and a new
 * one can be measured turn about; --cpu-prof: the import under --cpu-prof, and prints where its
 * time went; --keep-fills keeps the file of new fills beside the world) and prints fills/s (by
 * the wall clock, and per CPU second: on a busy machine the wall clock also counts other
 * processes' turns), bytes written per byte of growth (in used pages: what the kernel wrote to
 * the disk for the import, /proc/self/io write_bytes, and what SQLite handed it, wchar; the copy
 * is cached page by page first, bench/lib/copy.ts), bytes per fill all-in
 * (dbstat's used pages and the fill history's files, over fills stored in both), the history's
 * bytes per fill, peak RSS, and a year at 1M fills a day at that density.
 * `--days N` then imports N successive days of new fills into one copy of each world, one file a
 * day, and prints the same figures for each: how an import's cost moves as the store grows; with
 * `--days-of past`, N files of the same past markets, each adding to the fill history.
 *
 * Worlds live in $SMARTMONEY_BENCH_WORLDS/bulk (default <tmp>/smartmoney-bench-worlds/bulk).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openConnection } from "../src/db/open";
import { sqlString, withEngine } from "../src/history/engine";
import { copyToDisk } from "./lib/copy";
import { objectSizes } from "./lib/dbstat";
import { childPids } from "./lib/procs";
import { formatProfile, profilesIn, summariseProfile } from "./lib/profile";
import { randomHex, uniform } from "./lib/random";
import { alignColumns } from "./lib/report";
import { recordResults } from "./lib/results";
import { worldCacheDir } from "./lib/world";

const ROOT = resolve(fileURLToPath(import.meta.url), "..", "..");
const DEFAULT_BINARY = join(ROOT, "dist", "smartmoney");
const IO_PROBE = join(ROOT, "bench", "lib", "io-probe.cjs");
const DAY = 86_400_000;
const PROFILE_DIR = join(ROOT, "bench", "results", "profiles", "bulk");

interface Seeded {
  seconds: number;
  peakRssMb: number;
}

/**
 * Runs the built binary, polling its peak RSS (VmHWM only grows, so the last poll is near it):
 * the sum over it and the process it starts for the work (cli/sized-heap.ts), both resident.
 */
function runBinary(binary: string, args: string[]): Promise<Seeded> {
  return new Promise((done, fail) => {
    const started = performance.now();
    const child = spawn(binary, args, { stdio: ["ignore", "inherit", "inherit"] });
    const peaks = new Map<number, number>();
    const poll = setInterval(() => {
      try {
        for (const pid of [child.pid!, ...childPids(child.pid!)]) {
          const status = readFileSync(`/proc/${pid}/status`, "utf8");
          const kb = /VmHWM:\s+(\d+)/.exec(status)?.[1];
          if (kb) peaks.set(pid, Math.max(peaks.get(pid) ?? 0, Number(kb) / 1024));
        }
      } catch {
        // Exited between polls.
      }
    }, 200);
    child.on("error", fail);
    child.on("exit", (code) => {
      clearInterval(poll);
      const peak = [...peaks.values()].reduce((sum, mb) => sum + mb, 0);
      if (code !== 0) fail(new Error(`${binary} ${args.join(" ")} exited with ${code}`));
      else done({ seconds: (performance.now() - started) / 1000, peakRssMb: peak });
    });
  });
}

/**
 * The ways the new fills are given to the import (`--variants`): the same fills each time, in
 * time order or shuffled, with random transaction hashes or counter ones (0x…01, 0x…02: test
 * data's habit, whose shared prefixes once made each duplicate check scan), as JSONL or as a
 * Parquet file (converted from the JSONL by DuckDB); or fills of past markets (PAST_MARKETS).
 */
const VARIANTS = {
  time: { order: "time", hashes: "random", format: "jsonl", past: false },
  shuffled: { order: "shuffled", hashes: "random", format: "jsonl", past: false },
  sequential: { order: "time", hashes: "sequential", format: "jsonl", past: false },
  parquet: { order: "time", hashes: "random", format: "parquet", past: false },
  past: { order: "time", hashes: "random", format: "jsonl", past: true },
  "past-parquet": { order: "time", hashes: "random", format: "parquet", past: true },
} as const;

/**
 * The `past` variants: a dump of PAST_MARKETS new markets, resolved 150 days before the world's
 * newest fill and traded 250 to 160 days before it, then their fills, imported with
 * PAST_RETENTION: the bulk path into the fill history (src/ingest/past-markets.ts).
 */
const PAST_MARKETS = 10_000;
const PAST_MARKETS_SEED = 7;
const PAST_RETENTION = "2160h";
type Variant = keyof typeof VARIANTS;

/**
 * 1M new fills over the world's markets and wallets, in the day after its newest fill; or, with
 * `past`, over PAST_MARKETS new markets (their lines first), 250 to 160 days before it.
 */
async function writeNewFills(
  dbPath: string,
  file: string,
  count: number,
  hashes: "random" | "sequential",
  seed = 20,
  past = false,
): Promise<void> {
  const db = openConnection(dbPath, { readonly: true });
  let markets = db.prepare("SELECT condition_id FROM markets").pluck().all() as string[];
  const wallets = db.prepare("SELECT address FROM wallet_ids").pluck().all() as string[];
  const newest = (db.prepare("SELECT max(ts) FROM fills").pluck().get() as number) + 1;
  db.close();
  const rand = uniform(seed);
  const out = createWriteStream(file);
  const from = past ? newest - 250 * DAY : newest;
  const span = past ? 90 * DAY : DAY;
  if (past) {
    // The same markets for every seed: successive days of a dump add to them (--days-of past).
    const marketRand = uniform(PAST_MARKETS_SEED);
    markets = Array.from({ length: PAST_MARKETS }, () => randomHex(marketRand, 64));
    const resolved = new Date(newest - 150 * DAY).toISOString();
    const created = new Date(from - DAY).toISOString();
    for (const [i, condition] of markets.entries()) {
      const line =
        `{"type":"market","slug":"past-${i}","title":"Past market ${i}","category":"${["politics", "crypto", "sports"][i % 3]}"` +
        `,"condition_id":"${condition}","end_date":"${resolved}","created_at":"${created}"` +
        `,"resolved_outcome":"${marketRand() < 0.5 ? "YES" : "NO"}","resolved_at":"${resolved}"}\n`;
      if (!out.write(line)) await new Promise((r) => out.once("drain", r));
    }
  }
  let txCount = 1;
  const nextTx = () =>
    hashes === "random" ? randomHex(rand, 64) : `0x${(txCount++).toString(16).padStart(64, "0")}`;
  let tx = nextTx();
  let logIndex = 0;
  for (let i = 0; i < count; i++) {
    if (rand() < 0.67) {
      tx = nextTx();
      logIndex = Math.floor(rand() * 200);
    } else logIndex += 1;
    const wallet =
      rand() < 0.2 ? randomHex(rand, 40) : wallets[Math.floor(rand() * wallets.length)]!;
    const price = Math.max(0.001, Math.round(rand() * 1000) / 1000);
    const size = Math.max(0.01, Math.round((5 + rand() * 2000) * 100) / 100);
    const usd = Math.round(price * size * 100) / 100;
    const ts = new Date(from + Math.floor((i / count) * span)).toISOString();
    const line =
      `{"type":"trade","tx_hash":"${tx}","log_index":${logIndex},"wallet":"${wallet}"` +
      `,"condition_id":"${markets[Math.floor(rand() * markets.length)]}"` +
      `,"outcome":"${rand() < 0.5 ? "YES" : "NO"}","side":"${rand() < 0.75 ? "BUY" : "SELL"}"` +
      `,"price":${price},"size":${size},"usd_value":${usd},"timestamp":"${ts}"}\n`;
    if (!out.write(line)) await new Promise((r) => out.once("drain", r));
  }
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
}

/** The lines of `file` in a seeded random order, written back in place. */
function shuffleLines(file: string): void {
  const lines = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "");
  const rand = uniform(21);
  for (let i = lines.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
}

/** The JSONL file's fills as a Parquet file beside it (DuckDB's JSON reader and writer). */
async function toParquet(file: string): Promise<string> {
  const out = file.replace(/\.jsonl$/, ".parquet");
  await withEngine({ memoryMb: 1024 }, (duck) =>
    duck.run(
      `COPY (SELECT * FROM read_json(${sqlString(file)}, format = 'newline_delimited'))
         TO ${sqlString(out)} (FORMAT parquet, COMPRESSION zstd)`,
    ),
  );
  return out;
}

/** Writes the variant's file of `count` new fills for the world at `dbPath`; returns its path. */
async function variantFile(
  dbPath: string,
  dir: string,
  scale: string,
  variant: Variant,
  count: number,
): Promise<string> {
  const { order, hashes, format, past } = VARIANTS[variant];
  const file = join(dir, `${scale}-new-fills-${variant}.jsonl`);
  await writeNewFills(dbPath, file, count, hashes, 20, past);
  if (order === "shuffled") shuffleLines(file);
  if (format === "jsonl") return file;
  const parquet = await toParquet(file);
  rmSync(file, { force: true });
  return parquet;
}

interface Imported {
  seconds: number;
  cpuSeconds: number;
  writeBytes: number;
  writeCalls: number;
  readBytes: number;
  peakRssMb: number;
}

/** `smartmoney migrate` on the copy, with the build under test. */
function migrateCopy(binary: string, dbPath: string): void {
  const run = spawnSync(binary, ["migrate", "--db", dbPath], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (run.status !== 0) throw new Error(`${binary} migrate failed (status ${run.status})`);
}

function importChild(
  binary: string,
  file: string,
  dbPath: string,
  profileDir: string | null,
  env: NodeJS.ProcessEnv = {},
): Imported {
  const out = `${dbPath}.io.json`;
  rmSync(out, { force: true });
  const profile = profileDir ? ` --cpu-prof --cpu-prof-dir=${profileDir}` : "";
  const run = spawnSync(binary, ["import", file, "--db", dbPath], {
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      NODE_OPTIONS: `--require ${IO_PROBE}${profile}`,
      SMARTMONEY_BENCH_IO_OUT: out,
      ...env,
    },
  });
  if (run.status !== 0) throw new Error(`${binary} import failed (status ${run.status})`);
  return JSON.parse(readFileSync(out, "utf8")) as Imported;
}

/**
 * The database's used bytes: its pages less the free ones. Growth is counted in these, not in the
 * file's size: a file with free pages (a migration's rebuilt indexes leave the old ones free)
 * grows less than its content while an import reuses them, and the large world's 11,007 free
 * pages after 0025 made 3.4 GB written over 161 MB of file growth read as 21× instead of 17×.
 */
function contentBytes(path: string): number {
  const db = openConnection(path, { readonly: true });
  try {
    const pragma = (name: string) => db.pragma(name, { simple: true }) as number;
    return (pragma("page_count") - pragma("freelist_count")) * pragma("page_size");
  } finally {
    db.close();
  }
}

/** The fills stored, in `fills` and in the fill history, and the history's files' bytes. */
function storedFills(path: string): { fills: number; historyFills: number; historyBytes: number } {
  const db = openConnection(path, { readonly: true });
  try {
    const history = db
      .prepare<[], { fills: number; bytes: number }>(
        `SELECT coalesce(sum(fills), 0) AS fills,
                coalesce(sum(bytes + coalesce(wallet_bytes, 0) + coalesce(time_bytes, 0)), 0) AS bytes
           FROM history_partitions`,
      )
      .get()!;
    const recent = db.prepare("SELECT count(*) FROM fills").pluck().get() as number;
    return {
      fills: recent + history.fills,
      historyFills: history.fills,
      historyBytes: history.bytes,
    };
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scales: { type: "string", default: "medium,large" },
      fills: { type: "string", default: "1000000" },
      reseed: { type: "boolean", default: false },
      "cpu-prof": { type: "boolean", default: false },
      "keep-fills": { type: "boolean", default: false },
      binary: { type: "string", default: DEFAULT_BINARY },
      variants: { type: "string", default: Object.keys(VARIANTS).join(",") },
      days: { type: "string", default: "0" },
      "days-of": { type: "string", default: "new" },
    },
  });
  const days = Number(values.days);
  if (!Number.isInteger(days) || days < 0) throw new Error("--days: a whole number of days");
  const pastDays = values["days-of"] === "past";
  if (!pastDays && values["days-of"] !== "new") throw new Error("--days-of: new or past");
  const variants = values.variants
    .split(",")
    .filter(Boolean)
    .map((name) => {
      if (!(name in VARIANTS)) {
        throw new Error(`--variants: ${name} is not one of ${Object.keys(VARIANTS).join(", ")}`);
      }
      return name as Variant;
    });
  const binary = resolve(values.binary);
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run npm run build first`);
  const count = Number(values.fills);
  const dir = join(worldCacheDir(), "bulk");
  mkdirSync(dir, { recursive: true });
  const rows: Record<string, string>[] = [];
  for (const scale of values.scales.split(",")) {
    const world = join(dir, `${scale}.db`);
    const timing = `${world}.seed.json`;
    if (values.reseed || !existsSync(world) || !existsSync(timing)) {
      for (const suffix of ["", "-wal", "-shm", ".key", ".manifest.json"]) {
        rmSync(`${world}${suffix}`, { force: true });
      }
      console.error(`seeding the ${scale} world with ${binary} ...`);
      const seeded = await runBinary(binary, ["seed", "--scale", scale, "--db", world]);
      writeFileSync(timing, JSON.stringify(seeded));
    }
    const seeded = JSON.parse(readFileSync(timing, "utf8")) as Seeded;
    /** A fresh copy of the world, migrated by the build under test. */
    const freshCopy = (name: string) => {
      const copy = join(dir, `${scale}-${name}.db`);
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
      copyToDisk(world, copy);
      copyFileSync(`${world}.key`, `${copy}.key`);
      // A world seeded by an older build is migrated first, so that the import's figures are the
      // import's: a migration that frees pages (sql/0029 drops an index) inside the import would
      // shrink its growth, and inflate its bytes written per byte of growth.
      migrateCopy(binary, copy);
      return copy;
    };
    /** Imports `file` into `copy` and adds its row of figures. */
    const measure = (copy: string, file: string, input: string, env: NodeJS.ProcessEnv = {}) => {
      const stored = () => {
        const { fills, historyFills, historyBytes } = storedFills(copy);
        return { bytes: contentBytes(copy) + historyBytes, fills, historyFills, historyBytes };
      };
      const before = stored();
      console.error(`importing ${count} new fills (${input}) into the ${scale} world ...`);
      // NODE_OPTIONS splits on spaces: "day 1" names its folder "day-1".
      const profileDir = values["cpu-prof"]
        ? join(PROFILE_DIR, `${scale}-${input.replaceAll(" ", "-")}`)
        : null;
      if (profileDir) rmSync(profileDir, { recursive: true, force: true });
      const imported = importChild(binary, file, copy, profileDir, env);
      if (profileDir) {
        for (const path of profilesIn(profileDir)) {
          console.error(
            formatProfile(`the import into ${scale} (${input})`, summariseProfile(path, 25)),
          );
        }
      }
      const after = stored();
      const { usedBytes } = objectSizes(copy);
      const perFill = (usedBytes + after.historyBytes) / after.fills;
      const growth = after.bytes - before.bytes;
      rows.push({
        world: `${scale} (${(before.fills / 1e6).toFixed(2)}M fills)`,
        input,
        "seed s": seeded.seconds.toFixed(0),
        "seed RSS MB": seeded.peakRssMb.toFixed(0),
        "import fills/s": ((after.fills - before.fills) / imported.seconds).toFixed(0),
        "fills/CPU s": ((after.fills - before.fills) / imported.cpuSeconds).toFixed(0),
        "written/growth": (imported.writeBytes / growth).toFixed(2),
        "SQLite wrote/growth": (imported.writeCalls / growth).toFixed(2),
        "import RSS MB": imported.peakRssMb.toFixed(0),
        "B/fill all-in": perFill.toFixed(0),
        "history B/fill":
          after.historyFills > 0 ? (after.historyBytes / after.historyFills).toFixed(0) : "-",
        "year at 1M/day GB": ((perFill * 365e6) / 1e9).toFixed(0),
      });
      if (!values["keep-fills"]) rmSync(file, { force: true });
    };
    for (const variant of variants) {
      const copy = freshCopy("import");
      const env = VARIANTS[variant].past ? { SMARTMONEY_FILL_RETENTION: PAST_RETENTION } : {};
      measure(copy, await variantFile(copy, dir, scale, variant, count), variant, env);
    }
    if (days > 0) {
      // One copy grows a day at a time: each day's fills come after the last day's, with hashes
      // of their own (a seed per day); or, --days-of past, more fills of the same past markets,
      // each day's added to the history and their markets modelled again.
      const copy = freshCopy("growth");
      const env = pastDays ? { SMARTMONEY_FILL_RETENTION: PAST_RETENTION } : {};
      for (let day = 1; day <= days; day++) {
        const file = join(dir, `${scale}-day-${day}.jsonl`);
        await writeNewFills(copy, file, count, "random", 1000 + day, pastDays);
        measure(copy, file, `${pastDays ? "past " : ""}day ${day}`, env);
      }
    }
  }
  const headers = Object.keys(rows[0] ?? {});
  console.log(alignColumns([headers, ...rows.map((r) => headers.map((h) => r[h]!))]));
  recordResults("bulk", { rows });
}

await main();
