/**
 * Seeded fixture worlds for the benchmarks, built once and cached: `npm run bench -- --world
 * medium` and `npm run bench:refresh` reuse the same database file across runs instead of
 * seeding 1M (medium) or 10M (large) trades each time.
 *
 * A world is the fixture generator's world (src/fixtures) at a scale and seed, imported through
 * seedWorld (the import path plus the full refresh) with the app's clock held at the world's
 * "now", then the funding graph built when the refresh did not build it. The file lives in
 * $SMARTMONEY_BENCH_WORLDS (default <tmp>/smartmoney-bench-worlds) under a name holding scale,
 * seed and a fingerprint of what decides its rows (sql/, src/fixtures/, src/ingest/): when any of
 * those change the world is built anew and the stale file of the same scale and seed removed.
 * Read-model code (src/refresh, src/funding, src/signals) is fingerprinted too, but a change
 * there only warns: a large world takes many minutes to build (`--rebuild-world` forces it).
 *
 *   npx tsx bench/lib/world.ts small|medium|large [--seed 42] [--rebuild | --adopt]
 *
 * builds (or finds) a world and prints its description as JSON. --adopt renames the cached world
 * of another data fingerprint instead of building (see WorldOptions.adopt).
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { configFrom, openDatabase } from "../../cli/context";
import { type App, createApp } from "../../src/app";
import type { Clock } from "../../src/clock";
import { seedWorld } from "../../src/fixtures/seed-world";
import { type Manifest, SCALES, type Scale } from "../../src/fixtures/world";
import { loadInstallationKey } from "../../src/installation/key";
import { createLog } from "../../src/log";
import { migrate } from "../../src/migrations/migrate";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Every bench world's present: fixed, so a cached world means the same thing on every run. */
export const WORLD_NOW = Date.parse("2026-11-01T00:00:00Z");
export const DEFAULT_SEED = 42;

/** What decides a world's rows: a change here means another world. */
const DATA_SOURCES = ["sql", "src/fixtures", "src/ingest"];
/** What decides its read models: a change here only makes the cached models stale. */
const MODEL_SOURCES = ["src/refresh", "src/funding", "src/signals", "src/analytics"];

export interface WorldBuild {
  /** Seconds to generate and import the world (generation streams into the import). */
  importSeconds: number;
  /** The full refresh seedWorld runs. */
  refreshSeconds: number;
  /** The funding graph, when the refresh did not build it; null when it did. */
  fundingSeconds: number | null;
  totalSeconds: number;
  rows: number;
  trades: number;
  bytes: number;
  builtAt: string;
  /** Fingerprint of the read-model code the world was refreshed with. */
  models: string;
}

export interface BenchWorld {
  scale: Scale;
  seed: number;
  /** The world's present, epoch ms: servers and refreshes run their clocks from here. */
  now: number;
  dbPath: string;
  manifestPath: string;
  manifest: Manifest;
  build: WorldBuild;
  /** True when this call built the world, false when it was found in the cache. */
  fresh: boolean;
  /** The read-model code changed since the world was built. */
  staleModels: boolean;
}

export interface WorldOptions {
  scale: Scale;
  seed?: number;
  /** Build anew even when a cached world exists. */
  rebuild?: boolean;
  /**
   * Take a cached world of another data fingerprint as this one instead of rebuilding it: for a
   * change whose migrations the benches apply to their copy anyway (a new index, a dropped
   * column), when a 15-minute large build would only repeat the same rows.
   */
  adopt?: boolean;
  cacheDir?: string;
  say?: (line: string) => void;
}

export function worldCacheDir(): string {
  return process.env.SMARTMONEY_BENCH_WORLDS || join(tmpdir(), "smartmoney-bench-worlds");
}

/** A hash of every file under the given folders (relative to the project root), sorted by path. */
function fingerprint(folders: string[]): string {
  const hash = createHash("sha256");
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else
        hash
          .update(path)
          .update("\0")
          .update(readFileSync(join(ROOT, path)))
          .update("\0");
    }
  };
  for (const folder of folders) walk(folder);
  return hash.digest("hex").slice(0, 10);
}

/** A clock that starts at `start` and advances with the wall clock (or stays put when frozen). */
export function worldClock(start: number, options: { frozen?: boolean } = {}): Clock {
  if (options.frozen) return { now: () => start };
  const origin = performance.now();
  return { now: () => start + Math.floor(performance.now() - origin) };
}

/**
 * cli/context.ts withApp with a given clock: the same config, migration, secret key and
 * createApp, so the benchmarks run the app exactly as `smartmoney serve` builds it, but at the
 * world's time instead of today's.
 */
export async function withWorldApp<T>(
  options: { db: string; clock: Clock; logLevel?: string },
  work: (app: App) => Promise<T> | T,
): Promise<T> {
  const config = configFrom({ db: options.db, logLevel: options.logLevel ?? "warn" });
  const log = createLog(config.logLevel);
  const db = openDatabase(config.dbPath);
  try {
    migrate(db.writer);
    const secretKey = loadInstallationKey(db, process.env).key;
    const app = createApp({
      db,
      config,
      clock: options.clock,
      log,
      fetch: globalThis.fetch,
      secretKey,
    });
    try {
      return await work(app);
    } finally {
      app.close();
    }
  } finally {
    db.close();
    log.flush();
  }
}

const SIDE_FILES = ["", ".manifest.json", ".key", ".build.json"];

function removeWorldFiles(dbPath: string): void {
  for (const suffix of [...SIDE_FILES, "-wal", "-shm"]) rmSync(dbPath + suffix, { force: true });
}

/** Renames the newest cached world of the same scale and seed to `dbPath`, when there is one. */
function adoptWorld(dir: string, prefix: string, dbPath: string, say: (line: string) => void) {
  const found = readdirSync(dir)
    .filter((name) => name.startsWith(prefix) && name.endsWith(".db"))
    .filter((name) => existsSync(join(dir, `${name}.build.json`)))
    .sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs)[0];
  if (found === undefined) return;
  say(`adopting ${join(dir, found)} as ${dbPath}`);
  for (const suffix of [...SIDE_FILES, "-wal", "-shm"]) {
    if (existsSync(join(dir, found) + suffix))
      renameSync(join(dir, found) + suffix, dbPath + suffix);
  }
}

/** The cached world for a scale and seed, built first when missing or out of date. */
export async function worldFor(options: WorldOptions): Promise<BenchWorld> {
  const seed = options.seed ?? DEFAULT_SEED;
  const say = options.say ?? (() => {});
  const dir = options.cacheDir ?? worldCacheDir();
  mkdirSync(dir, { recursive: true });
  const prefix = `world-${options.scale}-seed${seed}-`;
  const dbPath = join(dir, `${prefix}${fingerprint(DATA_SOURCES)}.db`);
  const models = fingerprint(MODEL_SOURCES);
  const buildPath = `${dbPath}.build.json`;

  let fresh = false;
  if (options.adopt && !options.rebuild && !existsSync(buildPath))
    adoptWorld(dir, prefix, dbPath, say);
  if (options.rebuild || !existsSync(buildPath)) {
    for (const name of readdirSync(dir)) {
      if (name.startsWith(prefix) && name.endsWith(".db")) {
        say(`removing ${join(dir, name)} (out of date or --rebuild)`);
        removeWorldFiles(join(dir, name));
      }
    }
    await buildWorld(options.scale, seed, dbPath, models, say);
    fresh = true;
  }
  const build = JSON.parse(readFileSync(buildPath, "utf8")) as WorldBuild;
  const manifestPath = `${dbPath}.manifest.json`;
  return {
    scale: options.scale,
    seed,
    now: WORLD_NOW,
    dbPath,
    manifestPath,
    manifest: JSON.parse(readFileSync(manifestPath, "utf8")) as Manifest,
    build,
    fresh,
    staleModels: build.models !== models,
  };
}

/**
 * Seeds into a scratch name and renames at the end, so an interrupted build never passes for a
 * cached world. The build record is written last: its presence marks a complete world.
 */
async function buildWorld(
  scale: Scale,
  seed: number,
  dbPath: string,
  models: string,
  say: (line: string) => void,
): Promise<void> {
  const scratch = `${dbPath}.building-${process.pid}`;
  removeWorldFiles(scratch);
  say(`building the ${scale} world (seed ${seed}) into ${dbPath}`);
  const started = performance.now();
  let lastSaid = started;
  const clock = worldClock(WORLD_NOW, { frozen: true });
  const build = await withWorldApp({ db: scratch, clock }, async (app) => {
    const seeded = await seedWorld(app, {
      scale,
      seed,
      now: WORLD_NOW,
      manifestPath: `${scratch}.manifest.json`,
      onProgress: (rows) => {
        if (performance.now() - lastSaid < 30_000) return;
        lastSaid = performance.now();
        say(
          `  ${rows.toLocaleString("en-US")} rows after ${Math.round((lastSaid - started) / 1000)} s`,
        );
      },
    });
    if (!seeded.ok) throw new Error(`seeding the ${scale} world failed: ${seeded.reason}`);
    const { value } = seeded;
    const refreshSeconds = value.refresh.duration_ms / 1000;
    const importSeconds = (performance.now() - started) / 1000 - refreshSeconds;
    // The funding graph (clusters, connections, investigations) is its own refresh; build it here
    // unless the app's refresh already ran it as an extension.
    let fundingSeconds: number | null = null;
    if (!Object.keys(value.refresh.extensions).some((name) => name.includes("funding"))) {
      const fundingStarted = performance.now();
      app.funding.refresh({ force: true });
      fundingSeconds = (performance.now() - fundingStarted) / 1000;
    }
    return {
      importSeconds,
      refreshSeconds,
      fundingSeconds,
      rows: value.import.rows,
      trades: value.import.counts.trade.new,
    };
  });
  for (const suffix of [".manifest.json", ".key", ""])
    renameSync(scratch + suffix, dbPath + suffix);
  const record: WorldBuild = {
    ...build,
    totalSeconds: (performance.now() - started) / 1000,
    bytes: statSync(dbPath).size,
    builtAt: new Date().toISOString(),
    models,
  };
  writeFileSync(`${dbPath}.build.json`, `${JSON.stringify(record, null, 2)}\n`);
  say(
    `built the ${scale} world in ${record.totalSeconds.toFixed(0)} s (import ${record.importSeconds.toFixed(0)} s, refresh ${record.refreshSeconds.toFixed(0)} s${record.fundingSeconds === null ? "" : `, funding graph ${record.fundingSeconds.toFixed(0)} s`}; ${(record.bytes / 1e6).toFixed(0)} MB)`,
  );
}

export function isScale(text: string): text is Scale {
  return (SCALES as readonly string[]).includes(text);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      seed: { type: "string" },
      rebuild: { type: "boolean", default: false },
      adopt: { type: "boolean", default: false },
    },
  });
  const scale = positionals[0] ?? "";
  if (!isScale(scale)) {
    throw new Error(`usage: world.ts small|medium|large [--seed N] [--rebuild | --adopt]`);
  }
  const world = await worldFor({
    scale,
    seed: values.seed === undefined ? undefined : Number(values.seed),
    rebuild: values.rebuild,
    adopt: values.adopt,
    say: (line) => process.stderr.write(`world: ${line}\n`),
  });
  const { manifest: _manifest, ...described } = world;
  process.stdout.write(`${JSON.stringify(described, null, 2)}\n`);
}
