import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  feedMarkets,
  realGammaMarkets,
  realLeaderboard,
  replayFeed,
} from "../fixtures-polymarket/payloads";
import { type ApiServer, startApiServer } from "../fixtures-polymarket/servers";
import { runCli } from "../helpers/cli";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-ingest-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let server: ApiServer;
let dbSeq = 0;
beforeEach(async () => {
  server = await startApiServer({
    markets: [...feedMarkets(), ...realGammaMarkets()],
    trades: replayFeed(),
    leaderboard: realLeaderboard(),
  });
});
afterEach(() => server.close());

interface Run {
  child: ChildProcess;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** The CLI from source, asynchronously, as a real process: only the SIGTERM test needs one. */
function cli(args: string[], db: string): Run {
  const child = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    cwd: root,
    env: {
      ...process.env,
      SMARTMONEY_DB: db,
      SMARTMONEY_LOG_LEVEL: "error",
      SMARTMONEY_POLYMARKET_STREAM_URL: "",
    },
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

/** The same in this process (test/helpers/cli.ts), for runs that need no signal. */
function inProcess(args: string[], db: string) {
  return runCli(args, { SMARTMONEY_DB: db, SMARTMONEY_LOG_LEVEL: "error" });
}

const sources = () => [
  "--data-url",
  server.url,
  "--gamma-url",
  server.url,
  "--since",
  "2026-07-14T00:00:00Z",
];

describe("smartmoney ingest polymarket", () => {
  it("--once --json runs one round, prints its summary, and adds nothing the second time", async () => {
    const db = join(dir, `once-${++dbSeq}.db`);
    const first = await inProcess(["ingest", "polymarket", "--once", "--json", ...sources()], db);
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({ ok: true, error: null, source: "data-api", trades_new: 47 });
    // Piped stderr: no progress line.
    expect(first.stderr).not.toContain("polymarket:");

    const second = await inProcess(["ingest", "polymarket", "--once", "--json", ...sources()], db);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ trades_new: 0, since_ignored: true });
  });

  it("loops until SIGTERM, then prints the totals", async () => {
    const db = join(dir, `loop-${++dbSeq}.db`);
    const run = cli(["ingest", "polymarket", "--json", "--interval", "1h", ...sources()], db);
    // The leaderboard is a round's last stage: once it is read, the loop is sleeping.
    while (!server.requests.some((r) => r.startsWith("/v1/leaderboard"))) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    run.child.kill("SIGTERM");
    const { code, stdout } = await run.done;
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ rounds: 1, failures: 0, trades_new: 47 });
  });

  it("quarantines a malformed record, reports it, and fails a stage with one line", async () => {
    const feed = replayFeed();
    feed[3] = { ...feed[3], proxyWallet: "nobody" };
    server.world.trades = feed;
    const db = join(dir, `bad-${++dbSeq}.db`);
    const run = await inProcess(["ingest", "polymarket", "--once", "--json", ...sources()], db);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, quarantined: 1 });
    const status = await inProcess(["ingest", "status", "--json"], db);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as {
      quarantined: { stage: string; count: number; last_reason: string }[];
    };
    expect(report.quarantined).toEqual([expect.objectContaining({ stage: "tail", count: 1 })]);
    expect(report.quarantined[0]!.last_reason).toContain(
      "proxyWallet: must be 0x followed by 40 hex digits",
    );
  });

  it("backfill without an RPC URL fails with one line saying why", async () => {
    const db = join(dir, `backfill-${++dbSeq}.db`);
    const run = await inProcess(
      [
        "ingest",
        "polymarket",
        "backfill",
        "--from",
        "2026-07-01T00:00:00Z",
        "--gamma-url",
        server.url,
      ],
      db,
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("backfill reads chain logs: give --rpc-url");
  });

  it("refuses a bad --since or URL as a usage error", async () => {
    const db = join(dir, `usage-${++dbSeq}.db`);
    const since = await inProcess(
      ["ingest", "polymarket", "--once", "--since", "last tuesday"],
      db,
    );
    expect(since.code).toBe(2);
    const url = await inProcess(["ingest", "polymarket", "--once", "--rpc-url", "ftp://x"], db);
    expect(url.code).toBe(2);
    expect(url.stderr).toContain("must be an absolute http(s) URL");
  });

  it("is one of the jobs `jobs run` knows", async () => {
    const db = join(dir, `jobs-${++dbSeq}.db`);
    const { code, stderr } = await inProcess(["jobs", "run", "nope"], db);
    expect(code).toBe(1);
    expect(stderr).toMatch(/choose one of .*ingest/);
  });
});
