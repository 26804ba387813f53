/**
 * The built binary as the benchmarks' app server: what self-hosters run. Keys are minted and
 * their accounts' limits raised through the binary's own CLI (`keys mint`, `accounts set-limits`)
 * before `serve` starts, so the load is never throttled; the server is then pinned to one core.
 *
 * A fixture world is served at its own time (`serve --now`), as the source app server does with
 * its clock. It serves without its jobs process (`--no-jobs`) unless a refresh schedule is given:
 * bench:stall is the benchmark that measures serving beside the jobs.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Tier } from "../../src/auth/tiers";
import type { Pinned } from "./procs";

/** Far above anything a benchmark sends in an hour or a month. */
const RAISED_LIMIT = 1_000_000_000;
/** The token the benchmarks' servers want on GET /metrics. */
export const BENCH_METRICS_TOKEN = "bench-metrics-token-0123456789";

export const DEFAULT_BINARY = "dist/smartmoney";

export interface BinaryServer extends Pinned {
  ready: Promise<{ port: number; keys: Partial<Record<Tier, string>> }>;
  /** Removes the scratch database, if the server made one. */
  cleanup(): void;
}

/** Builds dist/smartmoney when it is missing (`npm run build`, a few seconds). */
export function ensureBinary(root: string, binary: string, say: (line: string) => void): string {
  const path = resolve(root, binary);
  if (existsSync(path)) return path;
  if (binary !== DEFAULT_BINARY) throw new Error(`--binary ${binary}: no such file`);
  say(`${binary} is missing: building it (npm run build)`);
  execFileSync("npm", ["run", "-s", "build"], { cwd: root, stdio: "inherit" });
  return path;
}

function mintKeys(binary: string, db: string, tiers: Tier[]): Partial<Record<Tier, string>> {
  const keys: Partial<Record<Tier, string>> = {};
  const cli = (args: string[]) =>
    execFileSync(binary, [...args, "--db", db], {
      encoding: "utf8",
      env: { ...process.env, SMARTMONEY_LOG_LEVEL: "warn" },
    });
  for (const tier of tiers) {
    const account = `bench-${tier.replace("_", "-")}`;
    const minted = JSON.parse(
      cli(["keys", "mint", "--tier", tier, "--account", account, "--json"]),
    ) as {
      key: string;
    };
    cli([
      "accounts",
      "set-limits",
      account,
      "--hourly",
      String(RAISED_LIMIT),
      "--monthly",
      String(RAISED_LIMIT),
    ]);
    keys[tier] = minted.key;
  }
  return keys;
}

export function startBinaryServer(options: {
  binary: string;
  cpu: number;
  db: string | null;
  /** The clock's start (epoch ms), or null for the system clock. */
  now: number | null;
  tiers: Tier[];
  /** Extra NODE_OPTIONS for the server (e.g. --cpu-prof). */
  nodeOptions?: string;
  /**
   * Run the scheduled jobs beside the server (`serve` without --no-jobs), refreshing on this
   * schedule; by default the server runs alone, as a measurement of the request path wants.
   */
  refreshCron?: string;
}): BinaryServer {
  const scratch = options.db ? undefined : mkdtempSync(join(tmpdir(), "smartmoney-bench-"));
  const db = options.db ?? join(scratch!, "bench.db");
  const keys = mintKeys(options.binary, db, options.tiers);
  const args = ["serve", "--db", db, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"];
  if (options.now !== null) args.push("--now", new Date(options.now).toISOString());
  if (options.refreshCron === undefined) args.push("--no-jobs");
  const child = spawn("taskset", ["-c", String(options.cpu), options.binary, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      ...(options.refreshCron ? { SMARTMONEY_REFRESH_CRON: options.refreshCron } : {}),
      SMARTMONEY_INGEST_CRON: "",
      SMARTMONEY_METRICS_TOKEN: BENCH_METRICS_TOKEN,
      ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
    },
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ready = new Promise<{ port: number; keys: Partial<Record<Tier, string>> }>(
    (resolveReady, reject) => {
      let stdout = "";
      const onExit = (code: number | null) =>
        reject(new Error(`${options.binary} serve exited (code ${code}):\n${stdout}${stderr}`));
      child.once("exit", onExit);
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
        if (!match) return;
        child.off("exit", onExit);
        resolveReady({ port: Number(match[1]), keys });
      });
    },
  );
  return {
    child,
    stderr: () => stderr,
    ready,
    cleanup: () => {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    },
  };
}
