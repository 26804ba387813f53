/**
 * One load run with wrk, a load generator written in C, pinned to a core of its own; and a steady
 * load with h2load (runSteadyLoad, below) where a run's first requests must not count.
 *
 * A JavaScript load generator (autocannon, which this bench used before) saturates its core near
 * 16–20k requests/s, so against a server that answers faster it measured itself: the ceiling
 * looked five times lower than it is and every ratio to it was flattered. wrk drives the same 50
 * connections from one thread at several times that rate.
 *
 * wrk takes the method, headers and body from a Lua script, and reports through the script's
 * `done` hook, which prints the figures as one JSON line. Its CPU time is read with the shell's
 * `times` builtin after it exits, so the report can say when the load generator was the limit.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { percentileOfSorted } from "./report";

export interface LoadSpec {
  url: string;
  method: "GET" | "POST" | "DELETE";
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  /**
   * A pause after each response before the connection's next request, ms (wrk's Lua `delay`
   * hook): a prober asking at a fixed pace rather than a load. Unset, each connection asks
   * again as soon as it is answered.
   */
  delayMs?: number;
  /**
   * Paths (with their query) the connections walk in turn, each asked once per pass, instead of
   * `url`'s path every time: distinct pages, which no answer cache has seen. `url` gives the
   * host.
   */
  paths?: readonly string[];
}

export interface LoadResult {
  /** Responses per second over the run. */
  rps: number;
  /** Latencies in milliseconds. */
  p50: number;
  p99: number;
  max: number;
  requests: number;
  /** Responses with a status of 400 or above (every benched endpoint answers 200). */
  non2xx: number;
  /** Connect, read and write errors. */
  errors: number;
  timeouts: number;
  /** CPU time the load generator used, as a share of one core: near 1 means it may be the limit. */
  loadCpu: number;
}

/** What the Lua `done` hook prints: wrk's summary, latencies in microseconds. */
interface WrkSummary {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  max_us: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
}

/** Per-attempt timeout: a response slower than this counts as a timeout, not a latency. */
const WRK_TIMEOUT = "10s";

/**
 * Makes sure a load generator is on PATH, installing its Debian package when it is missing and
 * this process may (root); otherwise fails with the command to run. wrk comes in `wrk`, h2load
 * (nghttp2's, in C++) in `nghttp2-client`.
 */
export function ensureLoadGenerator(program: "wrk" | "h2load", say: (line: string) => void): void {
  const debianPackage = program === "wrk" ? "wrk" : "nghttp2-client";
  if (spawnSync(program, ["--version"]).error === undefined) return;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (!root) {
    throw new Error(
      `${program} is missing: install it with \`sudo apt-get install ${debianPackage}\``,
    );
  }
  say(`${program} is missing: installing Debian's package (apt-get install ${debianPackage})`);
  execFileSync("apt-get", ["install", "-y", "-qq", debianPackage], { stdio: "ignore" });
  if (spawnSync(program, ["--version"]).error !== undefined)
    throw new Error(`apt-get install ${debianPackage} did not put ${program} on PATH`);
}

function luaString(text: string): string {
  return JSON.stringify(text); // a JSON string literal is a valid Lua string literal
}

function script(spec: LoadSpec, pathsFile: string | null): string {
  const lines = [`wrk.method = ${luaString(spec.method)}`];
  if (pathsFile !== null) {
    // One thread (-t1): its connections share the walk, so each path is asked once a pass.
    lines.push(
      "local paths = {}",
      `for line in io.lines(${luaString(pathsFile)}) do paths[#paths + 1] = line end`,
      "local next_path = 0",
      "request = function()",
      "  next_path = next_path % #paths + 1",
      "  return wrk.format(nil, paths[next_path])",
      "end",
    );
  }
  if (spec.body !== undefined) lines.push(`wrk.body = ${luaString(spec.body)}`);
  for (const [name, value] of Object.entries(spec.headers)) {
    lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  }
  if (spec.delayMs !== undefined) {
    lines.push(`delay = function() return ${Math.round(spec.delayMs)} end`);
  }
  lines.push(
    "done = function(summary, latency, requests)",
    "  local e = summary.errors",
    '  io.write(string.format(\'{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n\',',
    "    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,",
    "    e.connect, e.read, e.write, e.status, e.timeout))",
    "end",
  );
  return `${lines.join("\n")}\n`;
}

/** The children's user and system seconds from bash's `times` (its second line). */
function childCpuSeconds(timesOutput: string): number {
  const lines = timesOutput.trim().split("\n");
  const children = lines[lines.length - 1] ?? "";
  let total = 0;
  for (const match of children.matchAll(/(\d+)m([\d.]+)s/g)) {
    total += Number(match[1]) * 60 + Number(match[2]);
  }
  return total;
}

/**
 * Runs a load generator on core `cpu` (null: wherever the kernel puts it) under bash, whose
 * `times` prints the generator's CPU time on stderr after its own output (childCpuSeconds).
 */
function runTimed(
  program: "wrk" | "h2load",
  programArgs: string[],
  cpu: number | null,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const measured = ["bash", "-c", `${program} "$@"; status=$?; times >&2; exit $status`, program];
    const [command, ...args] =
      cpu === null ? measured : ["taskset", "-c", String(cpu), ...measured];
    const child = spawn(command!, args.concat(programArgs), { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs wrk for `spec.seconds` from core `cpu` (null: wherever the kernel puts it), one thread,
 * `spec.connections` connections.
 */
export async function runLoad(spec: LoadSpec, cpu: number | null): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-wrk-"));
  const scriptPath = join(dir, "load.lua");
  let pathsFile: string | null = null;
  if (spec.paths !== undefined) {
    if (spec.paths.length === 0) throw new Error("runLoad: an empty list of paths");
    pathsFile = join(dir, "paths.txt");
    writeFileSync(pathsFile, `${spec.paths.join("\n")}\n`);
  }
  writeFileSync(scriptPath, script(spec, pathsFile));
  const wrkArgs = [
    "-t1",
    `-c${spec.connections}`,
    `-d${spec.seconds}s`,
    `--timeout`,
    WRK_TIMEOUT,
    "-s",
    scriptPath,
    spec.url,
  ];
  try {
    const { code, stdout, stderr } = await runTimed("wrk", wrkArgs, cpu);
    const line = stdout.split("\n").find((l) => l.startsWith('{"requests"'));
    if (code !== 0 || line === undefined) {
      throw new Error(`wrk failed (exit ${code}):\n${stdout}${stderr}`);
    }
    const summary = JSON.parse(line) as WrkSummary;
    const seconds = summary.duration_us / 1e6;
    return {
      rps: summary.requests / seconds,
      p50: Math.round(summary.p50_us / 10) / 100,
      p99: Math.round(summary.p99_us / 10) / 100,
      max: Math.round(summary.max_us / 10) / 100,
      requests: summary.requests,
      non2xx: summary.status,
      errors: summary.connect + summary.read + summary.write,
      timeouts: summary.timeout,
      loadCpu: childCpuSeconds(stderr) / seconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The nearest-rank percentile `p` of ascending durations in µs, in ms to two places. */
const percentileMs = (sorted: Float64Array, p: number): number =>
  Math.round(percentileOfSorted(sorted, p) / 10) / 100;

/**
 * A steady load: h2load over HTTP/1.1 from core `cpu`, one thread, `spec.connections`
 * connections, measured for `spec.seconds` after `warmupSeconds` of load on the same connections.
 *
 * Why not wrk here: every wrk run opens its connections at once, and the first requests on 50
 * new connections to a Node server wait up to 150–220 ms on these machines (a bare node:http
 * server's too; a server in C answers the same burst within 10 ms: docs/architecture.md, "The
 * API never stalls"). wrk counts them in its maximum, so the maximum measured the connection
 * burst at the start of the run, not the server under ingest and refreshes. h2load's warm-up
 * keeps the connections and leaves their first requests out; its per-request log gives the
 * percentiles. GET only.
 */
export async function runSteadyLoad(
  spec: LoadSpec,
  cpu: number,
  warmupSeconds: number,
): Promise<LoadResult> {
  if (spec.method !== "GET" || spec.body !== undefined || spec.delayMs !== undefined) {
    throw new Error("runSteadyLoad: a GET without a body or a delay");
  }
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-h2load-"));
  const logPath = join(dir, "requests.tsv");
  const args = [
    "--h1",
    "-t1",
    `-c${spec.connections}`,
    `-D${spec.seconds}`,
    `--warm-up-time=${warmupSeconds}`,
    `--log-file=${logPath}`,
    ...Object.entries(spec.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
    spec.url,
  ];
  try {
    const { code, stdout, stderr } = await runTimed("h2load", args, cpu);
    const counts =
      /requests: (\d+) total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(
        stdout,
      );
    const statuses = /status codes: \d+ 2xx, \d+ 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
    if (code !== 0 || counts === null || statuses === null || Number(counts[1]) === 0) {
      throw new Error(`h2load failed or measured no request (exit ${code}):\n${stdout}${stderr}`);
    }
    // One line per request measured: start (µs since the epoch), status, duration (µs).
    const lines = readFileSync(logPath, "utf8").split("\n");
    const durations = new Float64Array(lines.length);
    let n = 0;
    let first = Number.POSITIVE_INFINITY;
    let last = 0;
    for (const line of lines) {
      const [start, , duration] = line.split("\t");
      if (duration === undefined) continue;
      const startUs = Number(start);
      first = Math.min(first, startUs);
      last = Math.max(last, startUs + Number(duration));
      durations[n++] = Number(duration);
    }
    const sorted = durations.subarray(0, n).sort();
    const seconds = n > 0 ? (last - first) / 1e6 : spec.seconds;
    return {
      rps: n / seconds,
      p50: percentileMs(sorted, 50),
      p99: percentileMs(sorted, 99),
      max: percentileMs(sorted, 100),
      requests: n,
      non2xx: Number(statuses[1]) + Number(statuses[2]),
      // h2load's "failed" counts the 4xx and 5xx again: only "errored" is a request that failed.
      errors: Number(counts[3]),
      timeouts: Number(counts[4]),
      loadCpu: childCpuSeconds(stderr) / (spec.seconds + warmupSeconds),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
