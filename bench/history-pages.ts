/**
 * `npm run bench:history-pages`: pages that reach into the fill history (docs/operations.md, "Fill
 * retention and the fill history") over HTTP, with the built binary, on a sealed copy of a
 * fixture world.
 *
 * For each binary given (`--binary label=PATH`, repeatable; default `after=dist/smartmoney`) the
 * world (bench/lib/world.ts) is copied and sealed by that binary itself (`jobs run compact` with
 * SMARTMONEY_FILL_RETENTION), then compacted once more, as the next scheduled run would: the
 * seal's run merges the files it wrote, and an older binary's next run merges them. Each binary
 * is measured on the history its own runs leave. Then
 * each binary serves its copy pinned to one core, at the world's time, and wrk loads it from the
 * other core with `--connections` connections, walking distinct pages (bench/lib/load.ts): the
 * answer caches never see a page twice unless a run asks for more pages than were drawn, which
 * the report says (`wrapped`). Four kinds of page (`--kinds`, default all):
 *
 * - market: /v1/trades?market=… of a sealed market, its first page or a page from a cursor at
 *   one of its sealed fills drawn at random;
 * - wallet: /v1/wallets/…/trades from a cursor at a sealed fill drawn at random, so a wallet
 *   is drawn as often as it traded in the sealed markets;
 * - window: /v1/trades, every market, in the hour up to a sealed fill drawn at random: the
 *   trades window reaching back into the history;
 * - hash: /v1/trades/{txHash} of a sealed fill drawn at random.
 *
 * Cursors are made with the installation key the copies share. Before the load, a sample of
 * pages is asked of every binary and the answers compared: the same bodies, or the bench fails.
 * Binaries take turns run by run, so drift on a shared machine hits each alike; the load average
 * is recorded around every run.
 *
 *   npm run bench:history-pages -- [--world medium|large] [--retention 720h]
 *     [--binary label=PATH ...] [--pages 20000] [--seconds 20] [--warmup 3] [--runs 2]
 *     [--connections 10] [--adopt] [--db SEALED ...] [--cpu-prof]
 *     [--kinds market,wallet,window,hash]
 *
 * --db serves databases already sealed (copies of the world's, each with its history beside it)
 * instead of sealing a copy for each binary: one for all, or one per --binary in their order.
 *
 * --cpu-prof profiles each server (node --cpu-prof, through NODE_OPTIONS for the binary) over
 * the whole load, both kinds of page, and prints where its time went.
 *
 * Prints a table and one JSON object (also bench/results/history-pages.json and a line of
 * history.jsonl).
 */
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openDb } from "../src/db/open";
import { withHistory } from "../src/history/store";
import { loadInstallationKey } from "../src/installation/key";
import { createCursors } from "../src/paging/cursor";
import { DEFAULT_BINARY, ensureBinary, startBinaryServer } from "./lib/binary-server";
import { copyToDisk } from "./lib/copy";
import { ensureLoadGenerator, type LoadResult, runLoad } from "./lib/load";
import { cpuSeconds, stop } from "./lib/procs";
import { formatProfile, profilesIn, summariseProfile } from "./lib/profile";
import { uniform } from "./lib/random";
import { alignColumns, median, wholeFlag } from "./lib/report";
import { recordResults } from "./lib/results";
import { isScale, WORLD_NOW, worldFor } from "./lib/world";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_CPU = 0;
const LOAD_CPU = 1;
const ALL_KINDS = ["market", "wallet", "window", "hash"] as const;
const HOUR_MS = 3_600_000;
type Kind = (typeof ALL_KINDS)[number];
const MARKET_LIMIT = 25;
const WALLET_LIMIT = 20;
/** Pages asked of every binary before the load, and compared. */
const COMPARED_PAGES = 100;

const say = (line: string) => process.stderr.write(`bench: ${line}\n`);

const { values: flags } = parseArgs({
  options: {
    world: { type: "string", default: "medium" },
    retention: { type: "string", default: "720h" },
    binary: { type: "string", multiple: true },
    pages: { type: "string", default: "20000" },
    seconds: { type: "string", default: "20" },
    warmup: { type: "string", default: "3" },
    runs: { type: "string", default: "2" },
    connections: { type: "string", default: "10" },
    adopt: { type: "boolean", default: false },
    db: { type: "string", multiple: true },
    "cpu-prof": { type: "boolean", default: false },
    kinds: { type: "string", default: ALL_KINDS.join(",") },
  },
});
/** The kinds of page measured (--kinds), in ALL_KINDS' order. */
const KINDS = kindsOf(flags.kinds);
const PROFILE_DIR = join(ROOT, "bench", "results", "profiles", "history-pages");
const settings = {
  pages: wholeFlag("pages", flags.pages, 100),
  seconds: wholeFlag("seconds", flags.seconds, 1),
  warmup: wholeFlag("warmup", flags.warmup, 0),
  runs: wholeFlag("runs", flags.runs, 1),
  connections: wholeFlag("connections", flags.connections, 1),
};

function kindsOf(given: string): Kind[] {
  const named = given.split(",").map((k) => k.trim());
  for (const kind of named) {
    if (!(ALL_KINDS as readonly string[]).includes(kind)) {
      throw new Error(`--kinds: ${kind} is not one of ${ALL_KINDS.join(", ")}`);
    }
  }
  return ALL_KINDS.filter((kind) => named.includes(kind));
}

interface Binary {
  label: string;
  path: string;
}

function binariesOf(given: string[] | undefined): Binary[] {
  const list = given ?? [`after=${DEFAULT_BINARY}`];
  return list.map((entry) => {
    const at = entry.indexOf("=");
    if (at <= 0) throw new Error(`--binary ${entry}: give label=PATH`);
    const label = entry.slice(0, at);
    const path = entry.slice(at + 1);
    return { label, path: ensureBinary(ROOT, path, say) };
  });
}

interface Sealed {
  dbPath: string;
  /** The seal this bench ran, or null for a database given sealed (--db). */
  seal: {
    seconds: number;
    markets: number;
    fills: number;
    /** The next run's, which merged the seal's files before the seal's own run did. */
    mergeSeconds: number;
    filesMerged: number;
  } | null;
  history: { files: number; fills: number; bytes: number; bytes_per_fill: number };
}

/** What a sealed database holds (history_partitions). */
function describeSealed(dbPath: string, seal: Sealed["seal"]): Sealed {
  const db = openDb(dbPath);
  try {
    // A database sealed by a binary of before sql/0034 or sql/0037 lacks copies of that kind.
    const columns = new Set(
      db.writer.prepare("SELECT name FROM pragma_table_info('history_partitions')").pluck().all(),
    );
    const sizes = ["bytes", "wallet_bytes", "time_bytes"].filter((c) => columns.has(c));
    const totals = db.writer
      .prepare(
        `SELECT count(*) AS partitions, coalesce(sum(fills), 0) AS fills,
                coalesce(sum(${sizes.map((c) => `coalesce(${c}, 0)`).join(" + ")}), 0) AS bytes
           FROM history_partitions`,
      )
      .get() as { partitions: number; fills: number; bytes: number };
    return {
      dbPath,
      seal,
      history: {
        files: totals.partitions,
        fills: totals.fills,
        bytes: totals.bytes,
        bytes_per_fill: totals.fills > 0 ? +(totals.bytes / totals.fills).toFixed(1) : 0,
      },
    };
  } finally {
    db.close();
  }
}

/** A copy of the world sealed by `binary` itself. */
function sealWith(binary: Binary, worldDb: string, now: number, scratch: string): Sealed {
  const dbPath = join(scratch, `${binary.label}.db`);
  copyToDisk(worldDb, dbPath);
  if (existsSync(`${worldDb}.key`)) copyFileSync(`${worldDb}.key`, `${dbPath}.key`);
  /** One `jobs run compact` by the binary: its summary and how long it took. */
  const compact = () => {
    const started = performance.now();
    const out = execFileSync(
      binary.path,
      ["jobs", "run", "compact", "--db", dbPath, "--now", new Date(now).toISOString(), "--json"],
      {
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          SMARTMONEY_FILL_RETENTION: flags.retention,
          SMARTMONEY_LOG_LEVEL: "warn",
        },
      },
    );
    const seconds = +((performance.now() - started) / 1000).toFixed(1);
    const summary = JSON.parse(out) as {
      markets: number;
      fills_deleted: number;
      files_merged?: number;
    };
    return { seconds, summary };
  };
  const seal = compact();
  if (!(seal.summary.markets > 0)) throw new Error(`${binary.label}: the seal compacted nothing`);
  const merge = compact();
  return describeSealed(dbPath, {
    seconds: seal.seconds,
    markets: seal.summary.markets,
    fills: seal.summary.fills_deleted,
    mergeSeconds: merge.seconds,
    filesMerged: (seal.summary.files_merged ?? 0) + (merge.summary.files_merged ?? 0),
  });
}

/** A median of an even count of runs, printed without float noise (5.4350000000000005). */
const round2 = (value: number) => Math.round(value * 100) / 100;

/** Seeded Fisher–Yates. */
function shuffle<T>(items: T[], rand: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/**
 * Distinct pages of each kind, drawn from the sealed fills of `dbPath` (every binary seals the
 * same fills under the same ids): `count` measured ones, and a few hundred more for the warm-up
 * and the comparison.
 */
async function drawPages(dbPath: string, count: number): Promise<Record<Kind, string[]>> {
  const db = openDb(dbPath);
  try {
    // As src/core.ts keys them.
    const cursors = createCursors(
      createHmac("sha256", loadInstallationKey(db, process.env).key).update("cursors").digest(),
    );
    const conditionOf = new Map(
      (
        db.writer
          .prepare(
            "SELECT m.id, m.condition_id FROM history_markets hm JOIN markets m ON m.id = hm.market_id",
          )
          .raw()
          .all() as [number, string][]
      ).map(([id, condition]) => [id, condition]),
    );
    const wanted = count + 2_000;
    const sample = await withHistory(db.writer, dbPath, 512, async (duck, relation) => {
      const rows = await duck.runAndReadAll(
        `SELECT market_id, wallet, ts, id, '0x' || lower(hex(tx_hash)) FROM ${relation} h
          USING SAMPLE ${wanted} ROWS (reservoir, 41)`,
      );
      return rows.getRowsJS().map(([m, w, ts, id, hash]) => ({
        market: Number(m),
        wallet: String(w),
        ts: Number(ts),
        id: Number(id),
        hash: String(hash),
      }));
    });
    const rand = uniform(41);
    const market = new Set<string>();
    // Every sealed market's first page, then pages from cursors.
    for (const condition of conditionOf.values())
      market.add(`/v1/trades?market=${condition}&limit=${MARKET_LIMIT}`);
    const wallet = new Set<string>();
    const window = new Set<string>();
    const hash = new Set<string>();
    for (const fill of shuffle(sample, rand)) {
      hash.add(`/v1/trades/${fill.hash}`);
      const condition = conditionOf.get(fill.market);
      if (condition !== undefined && market.size < wanted) {
        const cursor = cursors.encode("trades", [fill.ts, fill.id]);
        market.add(`/v1/trades?market=${condition}&limit=${MARKET_LIMIT}&cursor=${cursor}`);
      }
      const cursor = cursors.encode("wallet-trades", [fill.ts, fill.id]);
      wallet.add(`/v1/wallets/${fill.wallet}/trades?limit=${WALLET_LIMIT}&cursor=${cursor}`);
      const start = new Date(fill.ts - HOUR_MS).toISOString();
      const end = new Date(fill.ts).toISOString();
      window.add(`/v1/trades?start=${start}&end=${end}&limit=${MARKET_LIMIT}`);
    }
    return {
      market: shuffle([...market], rand),
      wallet: shuffle([...wallet], rand),
      window: shuffle([...window], rand),
      hash: shuffle([...hash], rand),
    };
  } finally {
    db.close();
  }
}

interface Served {
  binary: Binary;
  sealed: Sealed;
  stop: () => Promise<unknown>;
  pid: number;
  port: number;
  key: string;
  /** Where each kind's walk goes on from: pages asked before are answered from a cache. */
  next: Record<Kind, number>;
}

interface KindSummary {
  p50: number;
  p99: number;
  max: number;
  requests: number;
  rps: number;
  cpu_ms: number;
  /** The 1-minute load average before the runs, their median. */
  loadavg: number;
  wrapped: boolean;
}

interface RunFigures extends LoadResult {
  run: number;
  /** The server's CPU per response, ms. */
  cpu_ms: number;
  loadavg_before: number[];
  loadavg_after: number[];
  wrapped: boolean;
}

async function get(served: Served, path: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${served.port}${path}`, {
    headers: { authorization: `Bearer ${served.key}` },
  });
  const body = await response.text();
  if (response.status !== 200) {
    throw new Error(`${served.binary.label} ${path}: ${response.status} ${body.slice(0, 300)}`);
  }
  return body;
}

async function main(): Promise<void> {
  if (!isScale(flags.world)) throw new Error("--world: small, medium or large");
  const binaries = binariesOf(flags.binary);
  ensureLoadGenerator("wrk", say);
  // With --db nothing needs the cached world: it is not looked up (nor rebuilt, when this
  // checkout's schema differs from the one it was built with).
  const world =
    flags.db === undefined
      ? await worldFor({ scale: flags.world, adopt: flags.adopt, say })
      : { dbPath: "", now: WORLD_NOW };
  if (
    world.dbPath !== "" &&
    existsSync(`${world.dbPath}-wal`) &&
    statSync(`${world.dbPath}-wal`).size > 0
  ) {
    throw new Error(`${world.dbPath} has a WAL: close whatever has it open`);
  }
  const scratch = mkdtempSync(join(tmpdir(), "smartmoney-bench-history-pages-"));
  const servers: Served[] = [];
  try {
    const given = (flags.db ?? []).map((db) => describeSealed(resolve(db), null));
    if (given.length > 1 && given.length !== binaries.length) {
      throw new Error("--db: one database for every binary, or one per --binary");
    }
    const sealed = binaries.map((binary, i) => {
      const ready = given[given.length === 1 ? 0 : i];
      if (ready) return ready;
      say(`sealing a copy of the ${flags.world} world with ${binary.label} (${binary.path})`);
      const s = sealWith(binary, world.dbPath, world.now, scratch);
      say(
        `  ${s.seal!.fills.toLocaleString("en-US")} fills of ${s.seal!.markets} markets in ${s.seal!.seconds} s and the next run ${s.seal!.mergeSeconds} s, ${s.seal!.filesMerged} files merged: ${s.history.files} files, ${s.history.bytes_per_fill} B/fill`,
      );
      return s;
    });
    const drawn = await drawPages(sealed[0]!.dbPath, settings.pages);
    const spare = Object.fromEntries(
      KINDS.map((k) => [k, drawn[k].slice(settings.pages)]),
    ) as Record<Kind, string[]>;
    const pages = Object.fromEntries(
      KINDS.map((k) => [k, drawn[k].slice(0, settings.pages)]),
    ) as Record<Kind, string[]>;
    say(`pages drawn: ${KINDS.map((k) => `${pages[k].length} ${k}`).join(", ")}`);

    if (flags["cpu-prof"]) rmSync(PROFILE_DIR, { recursive: true, force: true });
    for (const [i, binary] of binaries.entries()) {
      const server = startBinaryServer({
        binary: binary.path,
        cpu: SERVER_CPU,
        db: sealed[i]!.dbPath,
        now: world.now,
        tiers: ["terminal"],
        nodeOptions: flags["cpu-prof"]
          ? `--cpu-prof --cpu-prof-dir=${join(PROFILE_DIR, binary.label)}`
          : undefined,
      });
      const { port, keys } = await server.ready;
      servers.push({
        binary,
        sealed: sealed[i]!,
        stop: () => stop(server.child),
        pid: server.child.pid!,
        port,
        key: keys.terminal!,
        next: { market: 0, wallet: 0, window: 0, hash: 0 },
      });
    }

    // The same answers from every binary.
    for (const kind of KINDS) {
      for (const path of spare[kind].slice(0, COMPARED_PAGES)) {
        const bodies = await Promise.all(servers.map((s) => get(s, path)));
        if (bodies.some((b) => b !== bodies[0])) {
          throw new Error(`${path}: the binaries answer differently`);
        }
      }
    }
    say(`${COMPARED_PAGES} pages of each kind answered alike by ${servers.length} binaries`);

    const figures: Record<string, Record<Kind, RunFigures[]>> = {};
    for (const s of servers) {
      figures[s.binary.label] = { market: [], wallet: [], window: [], hash: [] };
    }
    for (const kind of KINDS) {
      for (const s of servers) {
        if (settings.warmup === 0) continue;
        await runLoad(
          {
            url: `http://127.0.0.1:${s.port}/`,
            method: "GET",
            headers: { authorization: `Bearer ${s.key}` },
            connections: settings.connections,
            seconds: settings.warmup,
            paths: spare[kind].slice(COMPARED_PAGES),
          },
          LOAD_CPU,
        );
      }
    }
    for (let run = 1; run <= settings.runs; run++) {
      for (const kind of KINDS) {
        for (const s of servers) {
          const walk = pages[kind];
          const from = s.next[kind] % walk.length;
          const paths = [...walk.slice(from), ...walk.slice(0, from)];
          const loadavgBefore = loadavg().map((x) => +x.toFixed(2));
          const cpuBefore = cpuSeconds(s.pid);
          const result = await runLoad(
            {
              url: `http://127.0.0.1:${s.port}/`,
              method: "GET",
              headers: { authorization: `Bearer ${s.key}` },
              connections: settings.connections,
              seconds: settings.seconds,
              paths,
            },
            LOAD_CPU,
          );
          const cpuMs = ((cpuSeconds(s.pid) - cpuBefore) * 1000) / Math.max(1, result.requests);
          s.next[kind] += result.requests + settings.connections;
          const entry: RunFigures = {
            run,
            ...result,
            rps: +result.rps.toFixed(1),
            loadCpu: +result.loadCpu.toFixed(2),
            cpu_ms: +cpuMs.toFixed(2),
            loadavg_before: loadavgBefore,
            loadavg_after: loadavg().map((x) => +x.toFixed(2)),
            wrapped: s.next[kind] > walk.length,
          };
          figures[s.binary.label]![kind].push(entry);
          say(
            `run ${run} ${kind} ${s.binary.label}: p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.requests} requests (${result.non2xx + result.errors + result.timeouts} bad), load ${entry.loadavg_before[0]}`,
          );
          if (result.non2xx + result.errors + result.timeouts > 0) {
            throw new Error(`${s.binary.label} ${kind}: bad responses: ${JSON.stringify(result)}`);
          }
        }
      }
    }

    const summary = servers.map((s) => {
      const byKind = Object.fromEntries(
        KINDS.map((kind): [Kind, KindSummary] => {
          const runs = figures[s.binary.label]![kind];
          return [
            kind,
            {
              p50: round2(median(runs.map((r) => r.p50))),
              p99: round2(median(runs.map((r) => r.p99))),
              max: Math.max(...runs.map((r) => r.max)),
              requests: runs.reduce((n, r) => n + r.requests, 0),
              rps: round2(median(runs.map((r) => r.rps))),
              cpu_ms: round2(median(runs.map((r) => r.cpu_ms))),
              loadavg: round2(median(runs.map((r) => r.loadavg_before[0]!))),
              wrapped: runs.some((r) => r.wrapped),
            },
          ];
        }),
      );
      return {
        label: s.binary.label,
        binary: s.binary.path,
        ...s.sealed,
        ...(byKind as Record<Kind, KindSummary>),
      };
    });
    const rows = [
      ["binary", "page", "p50 ms", "p99 ms", "requests", "req/s", "cpu ms/req", "B/fill", "load"],
    ];
    for (const s of summary) {
      for (const kind of KINDS) {
        const k = s[kind];
        rows.push([
          s.label,
          kind,
          String(k.p50),
          String(k.p99),
          String(k.requests),
          String(k.rps),
          String(k.cpu_ms),
          String(s.history.bytes_per_fill),
          String(k.loadavg),
        ]);
      }
    }
    process.stderr.write(`\n${alignColumns(rows, 2)}\n`);
    const report = {
      world: flags.world,
      retention: flags.retention,
      settings,
      pages: Object.fromEntries(KINDS.map((k) => [k, pages[k].length])),
      summary: summary.map(({ dbPath: _dbPath, ...rest }) => rest),
      runs: figures,
    };
    console.log(JSON.stringify(report, null, 2));
    recordResults("history-pages", report);
  } finally {
    for (const s of servers) await s.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
  if (flags["cpu-prof"]) {
    for (const { label } of binaries) {
      for (const path of profilesIn(join(PROFILE_DIR, label))) {
        const heading = `${label}'s server: ${relative(ROOT, path)}`;
        process.stdout.write(`${formatProfile(heading, summariseProfile(path))}\n`);
      }
    }
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
