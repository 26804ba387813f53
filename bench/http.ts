/**
 * `npm run bench`: HTTP throughput and latency of every endpoint against a ceiling, measured in
 * the same run.
 *
 * The app server is the built binary by default (`dist/smartmoney serve`, built first when
 * missing; bench/lib/binary-server.ts), what self-hosters run; `--server source` serves the same
 * app from source under tsx instead (bench/lib/app-server.ts). It serves a seeded fixture world
 * (bench/lib/world.ts, built once and cached) at the world's own time. A bare node:http server
 * answering a constant JSON (bench/lib/ceiling-server.ts) is the ceiling. Both servers are pinned
 * to one core; wrk, a load generator in C (bench/lib/load.ts, installed from Debian's packages when
 * missing), loads them from the other, one target at a time, alternating, so drift on a noisy
 * machine hits both alike. Reports medians of requests/s, p50 and p99 per target and, per
 * endpoint, the ratio of its median requests/s to the ceiling's, with the goals (the wallet
 * signal >= 0.6 of the ceiling, the ping >= 0.8, the wallet dossier and the whale leaderboard
 * >= 0.3, every p99 <= 20 ms), and the server CPU time per response, which
 * other processes on the machine disturb far less than throughput. Endpoints and how their ids are
 * picked from the world: bench/lib/endpoints.ts.
 *
 * Analyze caches each market's answer for 30 s, so the table's analyze row is the warm figure;
 * "analyze cold" is measured apart: one request each to --cold other busy markets, one at a time.
 *
 *   npm run bench -- [--world small|medium|large|none] [--db PATH] [--only ping,...]
 *                    [--server binary|source] [--binary PATH]
 *                    [--runs 2] [--seconds 3] [--warmup 1] [--connections 50] [--cold 20]
 *                    [--compare-scales [--scales small,large]] [--seed 42] [--rebuild-world]
 *                    [--cpu-prof]
 *
 * --world (default medium) picks the seeded world; `none` serves a fresh, empty database (only
 * the ping, with the old defaults of 5 runs of 5 s after 2 s). --db serves an existing database
 * instead, on the system clock. --compare-scales runs the table on each of --scales and prints
 * each endpoint's p50 on the last over the first (goal <= 1.5). --cpu-prof profiles the app
 * server (node --cpu-prof, through NODE_OPTIONS for the binary) and prints where its time went.
 * Prints tables and one JSON line; writes the JSON to bench/results/http.json.
 */
import { rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Tier } from "../src/auth/tiers";
import { DEFAULT_BINARY, ensureBinary, startBinaryServer } from "./lib/binary-server";
import {
  analyzePath,
  type BenchEndpoint,
  benchEndpoints,
  CEILING_BODY,
  pickFromWorld,
  type WorldPicks,
} from "./lib/endpoints";
import { ensureLoadGenerator, type LoadSpec, runLoad } from "./lib/load";
import { cpuSeconds, firstJsonLine, type Pinned, spawnPinned, stop } from "./lib/procs";
import { formatProfile, profilesIn, summariseProfile } from "./lib/profile";
import {
  alignColumns,
  type EndpointSummary,
  median,
  type Run,
  resultTable,
  summariseEndpoint,
  summariseTarget,
  wholeFlag,
} from "./lib/report";
import { recordResults } from "./lib/results";
import { type BenchWorld, isScale, worldFor } from "./lib/world";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const LIB = join(ROOT, "bench", "lib");
const RESULTS_DIR = join(ROOT, "bench", "results");
const PROFILE_DIR = join(RESULTS_DIR, "profiles");
const SERVER_CPU = 0;
const LOAD_CPU = 1;
/** The issue's goal for p50 on the large world over the small world's. */
const MAX_SCALE_P50_RATIO = 1.5;

const { values: flags } = parseArgs({
  options: {
    runs: { type: "string" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    connections: { type: "string", default: "50" },
    cold: { type: "string", default: "20" },
    only: { type: "string" },
    db: { type: "string" },
    world: { type: "string", default: "medium" },
    seed: { type: "string", default: "42" },
    "rebuild-world": { type: "boolean", default: false },
    "compare-scales": { type: "boolean", default: false },
    scales: { type: "string", default: "small,large" },
    "cpu-prof": { type: "boolean", default: false },
    server: { type: "string", default: "binary" },
    binary: { type: "string", default: DEFAULT_BINARY },
  },
});
if (flags.server !== "binary" && flags.server !== "source")
  throw new Error(`--server must be binary or source, not "${flags.server}"`);

// An empty database has only the ping to load: the old, longer defaults cost little there.
const pingOnly = flags.world === "none" && !flags.db && !flags["compare-scales"];
const settings = {
  runs: wholeFlag("runs", flags.runs ?? (pingOnly ? "5" : "2"), 1),
  seconds: wholeFlag("seconds", flags.seconds ?? (pingOnly ? "5" : "3"), 1),
  warmup: wholeFlag("warmup", flags.warmup ?? (pingOnly ? "2" : "1"), 0),
  connections: wholeFlag("connections", flags.connections, 1),
  cold: wholeFlag("cold", flags.cold, 0),
};

/** One database served by one app server: a seeded world, a given file, or a fresh database. */
interface Served {
  label: string;
  world: BenchWorld | null;
  dbPath: string | null;
  /** The app clock's start (epoch ms), or null for the system clock. */
  now: number | null;
  picks: WorldPicks | null;
  endpoints: BenchEndpoint[];
}

interface Target {
  name: string;
  server: Pinned;
  spec: LoadSpec;
  /** The status every response must have. */
  status: number;
  endpoint: BenchEndpoint | null;
  served: Served | null;
}

interface ColdFigures {
  requests: number;
  p50: number;
  p90: number;
  max: number;
  mean: number;
  /** The same slugs asked again at once: the cached answer, for comparison. */
  cachedP50: number;
}

const say = (line: string) => process.stderr.write(`bench: ${line}\n`);

const SETTLE_POLL_MS = 250;
const SETTLE_LIMIT_MS = 300_000;

/**
 * Waits until the server has used no CPU for one poll: a slow endpoint leaves up to one request
 * per connection queued when its load stops, and the next target must not be measured while the
 * server is still working those off.
 */
async function settle(servers: Pinned[]): Promise<void> {
  const used = () => servers.reduce((sum, server) => sum + cpuSeconds(server.child.pid!), 0);
  const started = performance.now();
  let before = used();
  while (performance.now() - started < SETTLE_LIMIT_MS) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const now = used();
    if (now - before < 0.02) return;
    before = now;
  }
  say(`the server stayed busy for ${SETTLE_LIMIT_MS / 1000} s after a run; measuring anyway`);
}

/** One wrk run from the load core; the server's CPU time is read from /proc around it. */
async function measure(target: Target, seconds: number, servers: Pinned[]): Promise<Run> {
  const pid = target.server.child.pid!;
  await settle(servers);
  const cpuBefore = cpuSeconds(pid);
  const result = await runLoad({ ...target.spec, seconds }, LOAD_CPU);
  const cpuPerRequest = ((cpuSeconds(pid) - cpuBefore) * 1e6) / Math.max(1, result.requests);
  return { ...result, cpuPerRequest, bad: result.non2xx + result.errors + result.timeouts };
}

function authHeaders(tier: Tier | null, keys: Partial<Record<Tier, string>>) {
  const headers: Record<string, string> = {};
  if (tier) {
    const key = keys[tier];
    if (!key) throw new Error(`the app server minted no ${tier} key`);
    headers.authorization = `Bearer ${key}`;
  }
  return headers;
}

function endpointSpec(
  endpoint: BenchEndpoint,
  port: number,
  keys: Partial<Record<Tier, string>>,
): LoadSpec {
  const headers = authHeaders(endpoint.tier, keys);
  if (endpoint.body !== undefined) headers["content-type"] = "application/json";
  return {
    url: `http://127.0.0.1:${port}${endpoint.path}`,
    method: endpoint.method,
    headers,
    body: endpoint.body === undefined ? undefined : JSON.stringify(endpoint.body),
    connections: settings.connections,
    seconds: settings.seconds,
  };
}

/** One request before the load: a wrong status or body here would make every figure meaningless. */
async function check(target: Target): Promise<void> {
  const { url, method, headers, body } = target.spec;
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  if (response.status !== target.status) {
    throw new Error(
      `${target.name}: ${method} ${url} answered ${response.status}, expected ${target.status}: ${text}`,
    );
  }
  if (target.endpoint === null && text !== CEILING_BODY)
    throw new Error(`the ceiling answered ${text}`);
}

/** One request per slug, one at a time: each computes the analysis (nothing cached yet). */
async function analyzeCold(
  port: number,
  headers: Record<string, string>,
  slugs: string[],
): Promise<ColdFigures | null> {
  if (slugs.length === 0) return null;
  const timeAll = async () => {
    const times: number[] = [];
    for (const slug of slugs) {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}${analyzePath(slug)}`, { headers });
      await response.text();
      times.push(performance.now() - started);
      if (response.status !== 200)
        throw new Error(`analyze cold: ${slug} answered ${response.status}`);
    }
    return times.sort((a, b) => a - b);
  };
  const cold = await timeAll();
  const cached = await timeAll();
  const at = (share: number) => cold[Math.min(cold.length - 1, Math.floor(share * cold.length))]!;
  const ms = (value: number) => Number(value.toFixed(2));
  return {
    requests: cold.length,
    p50: ms(median(cold)),
    p90: ms(at(0.9)),
    max: ms(cold[cold.length - 1]!),
    mean: ms(cold.reduce((a, b) => a + b, 0) / cold.length),
    cachedP50: ms(median(cached)),
  };
}

async function prepare(): Promise<Served[]> {
  const only = flags.only?.split(",");
  const select = (endpoints: BenchEndpoint[]) =>
    only ? endpoints.filter((e) => only.includes(e.name)) : endpoints;
  const seed = wholeFlag("seed", flags.seed, 0);
  const fromWorld = async (scale: string): Promise<Served> => {
    if (!isScale(scale)) throw new Error(`--world/--scales: unknown scale "${scale}"`);
    const started = performance.now();
    const world = await worldFor({ scale, seed, rebuild: flags["rebuild-world"], say });
    say(
      world.fresh
        ? `the ${scale} world took ${((performance.now() - started) / 1000).toFixed(0)} s to build`
        : `reusing the ${scale} world ${world.dbPath} (built ${world.build.builtAt} in ${world.build.totalSeconds.toFixed(0)} s)`,
    );
    if (world.staleModels) {
      say(
        `the read-model code changed since the ${scale} world was built: its read models are stale (--rebuild-world)`,
      );
    }
    const picks = pickFromWorld(world.dbPath, settings.cold);
    return {
      label: scale,
      world,
      dbPath: world.dbPath,
      now: world.now,
      picks,
      endpoints: select(benchEndpoints(picks)),
    };
  };

  if (flags["compare-scales"]) {
    const served: Served[] = [];
    for (const scale of flags.scales.split(",")) served.push(await fromWorld(scale));
    // Compare like with like: only the rows every world has.
    const common = (name: string) => served.every((s) => s.endpoints.some((e) => e.name === name));
    for (const s of served) s.endpoints = s.endpoints.filter((e) => common(e.name));
    return served;
  }
  if (flags.db) {
    const picks = pickFromWorld(flags.db, settings.cold);
    return [
      {
        label: "db",
        world: null,
        dbPath: flags.db,
        now: null,
        picks,
        endpoints: select(benchEndpoints(picks)),
      },
    ];
  }
  if (flags.world === "none") {
    return [
      {
        label: "fresh",
        world: null,
        dbPath: null,
        now: null,
        picks: null,
        endpoints: select(benchEndpoints(null)),
      },
    ];
  }
  return [await fromWorld(flags.world)];
}

async function main(): Promise<number> {
  if (availableParallelism() < 2)
    throw new Error("the bench needs two cores: one for the servers, one for the load");
  const served = await prepare();
  const wantCold = !flags.only || flags.only.split(",").includes("analyze-cold");
  if (served.every((s) => s.endpoints.length === 0) && !wantCold)
    throw new Error(`--only ${flags.only}: no such endpoint in bench/lib/endpoints.ts`);
  const tiers = [
    ...new Set(served.flatMap((s) => s.endpoints.flatMap((e) => (e.tier ? [e.tier] : [])))),
  ];
  const loadBefore = loadavg();

  if (flags["cpu-prof"]) rmSync(PROFILE_DIR, { recursive: true, force: true });
  ensureLoadGenerator("wrk", say);
  const appTiers = (tiers.length > 0 ? tiers : ["terminal_pro"]) as Tier[];
  const binary = flags.server === "binary" ? ensureBinary(ROOT, flags.binary, say) : null;
  say(`app server: ${binary ?? "source under tsx (bench/lib/app-server.ts)"}`);
  const profileOption = `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}`;
  const apps = served.map((s) => {
    if (binary) {
      const server = startBinaryServer({
        binary,
        cpu: SERVER_CPU,
        db: s.dbPath,
        now: s.now,
        tiers: appTiers,
        nodeOptions: flags["cpu-prof"] ? profileOption : undefined,
      });
      return { pinned: server as Pinned, ready: server.ready, cleanup: server.cleanup };
    }
    const pinned = spawnPinned(
      SERVER_CPU,
      join(LIB, "app-server.ts"),
      [
        "--tiers",
        appTiers.join(","),
        ...(s.dbPath ? ["--db", s.dbPath] : []),
        ...(s.now === null ? [] : ["--now", String(s.now)]),
      ],
      { cwd: ROOT, nodeArgs: flags["cpu-prof"] ? profileOption.split(" ") : [] },
    );
    const ready = firstJsonLine<{ port: number; keys: Partial<Record<Tier, string>> }>(
      pinned,
      "an app server",
    );
    return { pinned, ready, cleanup: () => {} };
  });
  const ceiling = spawnPinned(SERVER_CPU, join(LIB, "ceiling-server.ts"), [], { cwd: ROOT });
  try {
    const [ceilingReady, ...appsReady] = await Promise.all([
      firstJsonLine<{ port: number }>(ceiling, "the ceiling server"),
      ...apps.map((app) => app.ready),
    ]);
    const ceilingTarget: Target = {
      name: "ceiling (node:http)",
      server: ceiling,
      status: 200,
      endpoint: null,
      served: null,
      spec: {
        url: `http://127.0.0.1:${ceilingReady!.port}/`,
        method: "GET",
        headers: {},
        connections: settings.connections,
        seconds: settings.seconds,
      },
    };
    const multi = served.length > 1;
    // Endpoint by endpoint, each world's row next to the others', so drift hits them alike.
    const appTargets: Target[] = [];
    const names = [...new Set(served.flatMap((s) => s.endpoints.map((e) => e.name)))];
    for (const name of names) {
      served.forEach((s, i) => {
        const endpoint = s.endpoints.find((e) => e.name === name);
        if (!endpoint) return;
        const ready = appsReady[i] as { port: number; keys: Partial<Record<Tier, string>> };
        appTargets.push({
          name: `${multi ? `[${s.label}] ` : ""}${endpoint.name}`,
          server: apps[i]!.pinned,
          status: endpoint.status,
          endpoint,
          served: s,
          spec: endpointSpec(endpoint, ready.port, ready.keys),
        });
      });
    }
    const targets = [ceilingTarget, ...appTargets];
    const servers = [ceiling, ...apps.map((app) => app.pinned)];
    for (const target of targets) await check(target);

    const cold = new Map<Served, ColdFigures | null>();
    if (wantCold) {
      for (const [i, s] of served.entries()) {
        const ready = appsReady[i] as { port: number; keys: Partial<Record<Tier, string>> };
        const figures = await analyzeCold(
          ready.port,
          authHeaders("terminal_pro", ready.keys),
          s.picks?.coldSlugs ?? [],
        );
        cold.set(s, figures);
        if (figures) {
          say(
            `[${s.label}] analyze cold over ${figures.requests} markets: p50 ${figures.p50} ms, p90 ${figures.p90} ms, max ${figures.max} ms (cached: p50 ${figures.cachedP50} ms)`,
          );
        }
      }
    }

    say(
      `servers on cpu ${SERVER_CPU}, load on cpu ${LOAD_CPU}: ${settings.connections} connections, ${settings.runs} runs of ${settings.seconds} s per target after ${settings.warmup} s of warm-up; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")}`,
    );
    if (settings.warmup > 0) {
      for (const target of targets) await measure(target, settings.warmup, servers);
    }
    const runs = new Map<Target, Run[]>(targets.map((t) => [t, []]));
    for (let round = 0; round < settings.runs; round += 1) {
      // Alternate the order so neither side always runs first in a round.
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        const run = await measure(target, settings.seconds, servers);
        runs.get(target)!.push(run);
        say(
          `round ${round + 1}/${settings.runs} ${target.name}: ${Math.round(run.rps)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, ${run.cpuPerRequest.toFixed(1)} µs cpu/req, load cpu ${Math.round(run.loadCpu * 100)}%${run.bad ? `, ${run.bad} BAD` : ""}`,
        );
      }
    }
    const loadAfter = loadavg();

    const ceilingRuns = runs.get(ceilingTarget)!;
    const ceilingSummary = summariseTarget(ceilingTarget.name, ceilingRuns);
    const results = new Map<Served, EndpointSummary[]>(
      served.map((s) => [
        s,
        appTargets
          .filter((t) => t.served === s)
          .map((t) => ({
            ...summariseEndpoint(t.endpoint!, t.name, runs.get(t)!, {
              summary: ceilingSummary,
              runs: ceilingRuns,
            }),
            path: t.endpoint!.path,
          })),
      ]),
    );
    for (const s of served) {
      if (multi) process.stdout.write(`\n${s.label} world\n`);
      process.stdout.write(`${resultTable(ceilingSummary, results.get(s)!)}\n`);
      const figures = cold.get(s);
      if (figures) {
        process.stdout.write(
          `analyze cold (${figures.requests} markets, one request each, nothing cached): p50 ${figures.p50} ms, p90 ${figures.p90} ms, max ${figures.max} ms; cached p50 ${figures.cachedP50} ms\n`,
        );
      }
    }
    const comparison = multi ? compareScales(served, results) : null;
    if (comparison) process.stdout.write(`\n${comparisonTable(comparison, served)}\n`);
    process.stdout.write(
      `load average before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}\n`,
    );
    if (ceilingSummary.loadCpu >= 0.95) {
      say(
        "the load generator used its whole core on the ceiling: the ceiling may be understated, the ratios overstated",
      );
    }

    const report = {
      bench: "http",
      at: new Date().toISOString(),
      node: process.version,
      server: binary ?? "source",
      loadGenerator: "wrk",
      cpus: { server: SERVER_CPU, load: LOAD_CPU },
      loadavg: { before: loadBefore, after: loadAfter },
      settings,
      ceiling: ceilingSummary,
      // The first (or only) world's rows, where they always were.
      endpoints: results.get(served[0]!)!,
      worlds: served.map((s) => ({
        label: s.label,
        scale: s.world?.scale ?? null,
        seed: s.world?.seed ?? null,
        db: s.dbPath,
        build: s.world?.build ?? null,
        picks: s.picks,
        analyzeCold: cold.get(s) ?? null,
        endpoints: results.get(s)!,
      })),
      comparison,
    };
    recordResults("http", report);
    process.stdout.write(`${JSON.stringify(report)}\n`);

    const all = [ceilingSummary, ...[...results.values()].flat()];
    const bad = all.filter((r) => r.bad > 0);
    for (const r of bad)
      say(`${r.name}: ${r.bad} responses with another status, or errors: figures invalid`);
    return bad.length > 0 ? 1 : 0;
  } finally {
    await Promise.all([...apps.map((app) => stop(app.pinned.child)), stop(ceiling.child)]);
    for (const app of apps) app.cleanup();
    if (flags["cpu-prof"]) printProfiles();
  }
}

interface ScaleComparison {
  endpoint: string;
  /** Median p50 per world, in the order of --scales. */
  p50: number[];
  cpuPerRequest: number[];
  /** Last world's p50 over the first's. */
  ratio: number;
  cpuRatio: number;
  met: boolean;
}

function compareScales(
  served: Served[],
  results: Map<Served, EndpointSummary[]>,
): ScaleComparison[] {
  const first = results.get(served[0]!)!;
  const last = results.get(served[served.length - 1]!)!;
  return first.map((row) => {
    const rows = served.map((s) => results.get(s)!.find((r) => r.endpoint === row.endpoint)!);
    const other = last.find((r) => r.endpoint === row.endpoint)!;
    const ratio = Number((other.p50 / Math.max(row.p50, 0.001)).toFixed(2));
    return {
      endpoint: row.endpoint,
      p50: rows.map((r) => r.p50),
      cpuPerRequest: rows.map((r) => r.cpuPerRequest),
      ratio,
      cpuRatio: Number((other.cpuPerRequest / row.cpuPerRequest).toFixed(2)),
      met: ratio <= MAX_SCALE_P50_RATIO,
    };
  });
}

function comparisonTable(rows: ScaleComparison[], served: Served[]): string {
  const labels = served.map((s) => s.label);
  const first = labels[0]!;
  const last = labels[labels.length - 1]!;
  const table = [
    [
      "endpoint",
      ...labels.map((l) => `p50 ${l}`),
      `${last}/${first}`,
      "goal",
      ...labels.map((l) => `cpu µs ${l}`),
      `cpu ${last}/${first}`,
    ],
    ...rows.map((r) => [
      r.endpoint,
      ...r.p50.map(String),
      r.ratio.toFixed(2),
      `<= ${MAX_SCALE_P50_RATIO} ${r.met ? "met" : "MISSED"}`,
      ...r.cpuPerRequest.map((c) => c.toFixed(0)),
      r.cpuRatio.toFixed(2),
    ]),
  ];
  return alignColumns(table, 1);
}

function printProfiles(): void {
  for (const path of profilesIn(PROFILE_DIR)) {
    const heading = `the app server: ${relative(ROOT, path)}`;
    process.stdout.write(`${formatProfile(heading, summariseProfile(path))}\n`);
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
