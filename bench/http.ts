/**
 * `npm run bench`: HTTP throughput of the app against a ceiling, measured in the same run.
 *
 * The app (bench/lib/app-server.ts) and a bare node:http server answering a constant JSON
 * (bench/lib/ceiling-server.ts) are both pinned to one core; autocannon loads them from the other
 * (bench/lib/load.ts), one target at a time, alternating, so drift on a noisy machine hits both
 * alike. Reports medians of requests/s, p50 and p99 per target and, per endpoint, the ratio of
 * its median requests/s to the ceiling's. Also the server CPU time per response, which other
 * processes on the machine disturb far less than throughput. Endpoints: bench/lib/endpoints.ts.
 *
 *   npm run bench -- [--runs 5] [--seconds 5] [--warmup 2] [--connections 50]
 *                    [--only ping,...] [--db PATH] [--cpu-prof]
 *
 * --db serves an existing database (e.g. a seeded fixture world) instead of a fresh one.
 * --cpu-prof profiles the app server (node --cpu-prof) and prints where its time went.
 * Prints a table and one JSON line; writes the JSON to bench/results/http.json.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Tier } from "../src/auth/tiers";
import { type BenchEndpoint, CEILING_BODY, ENDPOINTS } from "./lib/endpoints";
import type { LoadResult, LoadSpec } from "./lib/load";
import { cpuSeconds, firstJsonLine, type Pinned, spawnPinned, stop } from "./lib/procs";
import { summariseProfile } from "./lib/profile";
import { type Run, resultTable, summariseEndpoint, summariseTarget } from "./lib/report";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const LIB = join(ROOT, "bench", "lib");
const RESULTS_DIR = join(ROOT, "bench", "results");
const PROFILE_DIR = join(RESULTS_DIR, "profiles");
const SERVER_CPU = 0;
const LOAD_CPU = 1;

const { values: flags } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "50" },
    only: { type: "string" },
    db: { type: "string" },
    "cpu-prof": { type: "boolean", default: false },
  },
});

function count(name: string, text: string | undefined, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`--${name} must be a whole number >= ${min}, not "${text}"`);
  }
  return value;
}

const settings = {
  runs: count("runs", flags.runs, 1),
  seconds: count("seconds", flags.seconds, 1),
  warmup: count("warmup", flags.warmup, 0),
  connections: count("connections", flags.connections, 1),
};

interface Target {
  name: string;
  server: Pinned;
  spec: LoadSpec;
  /** The status every response must have. */
  status: number;
  endpoint: BenchEndpoint | null;
}

const say = (line: string) => process.stderr.write(`bench: ${line}\n`);

/** One autocannon run from the load core; the server's CPU time is read from /proc around it. */
async function measure(target: Target, seconds: number): Promise<Run> {
  const pid = target.server.child.pid!;
  const cpuBefore = cpuSeconds(pid);
  const load = spawnPinned(
    LOAD_CPU,
    join(LIB, "load.ts"),
    [JSON.stringify({ ...target.spec, seconds })],
    {
      cwd: ROOT,
    },
  );
  const result = await firstJsonLine<LoadResult>(load, "the load generator");
  await stop(load.child);
  const cpuPerRequest = ((cpuSeconds(pid) - cpuBefore) * 1e6) / Math.max(1, result.requests);
  const expected = result.statusCodes[String(target.status)] ?? 0;
  const answered = Object.values(result.statusCodes).reduce((a, b) => a + b, 0);
  return { ...result, cpuPerRequest, bad: answered - expected + result.errors };
}

function endpointSpec(
  endpoint: BenchEndpoint,
  port: number,
  keys: Partial<Record<Tier, string>>,
): LoadSpec {
  const headers: Record<string, string> = {};
  if (endpoint.tier) {
    const key = keys[endpoint.tier];
    if (!key) throw new Error(`the app server minted no ${endpoint.tier} key`);
    headers.authorization = `Bearer ${key}`;
  }
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

async function main(): Promise<number> {
  if (availableParallelism() < 2)
    throw new Error("the bench needs two cores: one for the servers, one for the load");
  const only = flags.only?.split(",");
  const endpoints = only ? ENDPOINTS.filter((e) => only.includes(e.name)) : ENDPOINTS;
  if (endpoints.length === 0)
    throw new Error(`--only ${flags.only}: no such endpoint in bench/lib/endpoints.ts`);
  const tiers = [...new Set(endpoints.flatMap((e) => (e.tier ? [e.tier] : [])))];

  if (flags["cpu-prof"]) rmSync(PROFILE_DIR, { recursive: true, force: true });
  const app = spawnPinned(
    SERVER_CPU,
    join(LIB, "app-server.ts"),
    ["--tiers", tiers.join(",") || "terminal_pro", ...(flags.db ? ["--db", flags.db] : [])],
    {
      cwd: ROOT,
      nodeArgs: flags["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : [],
    },
  );
  const ceiling = spawnPinned(SERVER_CPU, join(LIB, "ceiling-server.ts"), [], { cwd: ROOT });
  try {
    const [appReady, ceilingReady] = await Promise.all([
      firstJsonLine<{ port: number; keys: Partial<Record<Tier, string>> }>(app, "the app server"),
      firstJsonLine<{ port: number }>(ceiling, "the ceiling server"),
    ]);
    const ceilingTarget: Target = {
      name: "ceiling (node:http)",
      server: ceiling,
      status: 200,
      endpoint: null,
      spec: {
        url: `http://127.0.0.1:${ceilingReady.port}/`,
        method: "GET",
        headers: {},
        connections: settings.connections,
        seconds: settings.seconds,
      },
    };
    const appTargets: Target[] = endpoints.map((endpoint) => ({
      name: `${endpoint.method} ${endpoint.path}`,
      server: app,
      status: endpoint.status,
      endpoint,
      spec: endpointSpec(endpoint, appReady.port, appReady.keys),
    }));
    const targets = [ceilingTarget, ...appTargets];
    for (const target of targets) await check(target);

    say(
      `servers on cpu ${SERVER_CPU}, load on cpu ${LOAD_CPU}: ${settings.connections} connections, ${settings.runs} runs of ${settings.seconds} s per target after ${settings.warmup} s of warm-up`,
    );
    if (settings.warmup > 0) {
      for (const target of targets) await measure(target, settings.warmup);
    }
    const runs = new Map<Target, Run[]>(targets.map((t) => [t, []]));
    for (let round = 0; round < settings.runs; round += 1) {
      // Alternate the order so neither side always runs first in a round.
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        const run = await measure(target, settings.seconds);
        runs.get(target)!.push(run);
        say(
          `round ${round + 1}/${settings.runs} ${target.name}: ${Math.round(run.rps)} req/s, p99 ${run.p99} ms, ${run.cpuPerRequest.toFixed(1)} µs cpu/req, load cpu ${Math.round(run.loadCpu * 100)}%${run.bad ? `, ${run.bad} BAD` : ""}`,
        );
      }
    }

    const ceilingRuns = runs.get(ceilingTarget)!;
    const ceilingSummary = summariseTarget(ceilingTarget.name, ceilingRuns);
    const endpointResults = appTargets.map((target) =>
      summariseEndpoint(target.endpoint!, target.name, runs.get(target)!, {
        summary: ceilingSummary,
        runs: ceilingRuns,
      }),
    );
    process.stdout.write(`${resultTable(ceilingSummary, endpointResults)}\n`);
    if (ceilingSummary.loadCpu >= 0.95) {
      say(
        "the load generator used its whole core on the ceiling: the ceiling may be understated, the ratios overstated",
      );
    }

    const report = {
      bench: "http",
      at: new Date().toISOString(),
      node: process.version,
      cpus: { server: SERVER_CPU, load: LOAD_CPU },
      settings,
      ceiling: ceilingSummary,
      endpoints: endpointResults,
    };
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, "http.json"), `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(report)}\n`);

    const bad = [ceilingSummary, ...endpointResults].filter((r) => r.bad > 0);
    for (const r of bad)
      say(`${r.name}: ${r.bad} responses with another status, or errors: figures invalid`);
    return bad.length > 0 ? 1 : 0;
  } finally {
    await Promise.all([stop(app.child), stop(ceiling.child)]);
    if (flags["cpu-prof"]) printProfiles();
  }
}

function printProfiles(): void {
  const share = (value: number) => `${(value * 100).toFixed(1).padStart(5)}%`;
  for (const file of readdirSync(PROFILE_DIR).filter((name) => name.endsWith(".cpuprofile"))) {
    const path = join(PROFILE_DIR, file);
    const summary = summariseProfile(path);
    const lines = [
      `profile of the app server: ${relative(ROOT, path)} (${Math.round(summary.busyMs)} ms busy)`,
    ];
    lines.push(
      "  self time by area:",
      ...summary.byArea.map((l) => `    ${share(l.share)}  ${l.name}`),
    );
    lines.push(
      "  self time by function:",
      ...summary.byFunction.map((l) => `    ${share(l.share)}  ${l.name}`),
    );
    lines.push(
      "  our functions, callees included:",
      ...summary.ourInclusive.map((l) => `    ${share(l.share)}  ${l.name}`),
    );
    process.stdout.write(`${lines.join("\n")}\n`);
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
