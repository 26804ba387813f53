/**
 * Smoke test of the single executable: built by `npm run build`, pointed at by
 * SMARTMONEY_BINARY. It runs from an empty folder with an empty PATH (no node anywhere) and a
 * throwaway HOME, mints a key per tier, serves on a free port and answers for each key; it also
 * replicates and restores with the Litestream it carries, and seeds a world, whose full refresh
 * runs the model worker from the bundle it carries, as does an incremental one after trades by
 * more wallets than WALLETS_IN_WORKER_FROM; it exports and imports Parquet with the DuckDB it
 * carries, and backtests with the uPlot it inlines into the report.
 * CI sets SMARTMONEY_BINARY after building; without it the test fails under CI and is skipped
 * elsewhere, so a plain `npm test` in a checkout does not need a build.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TIERS, type Tier } from "../src/auth/tiers";
import { WALLETS_IN_WORKER_FROM } from "../src/refresh/incremental";

const binary = process.env.SMARTMONEY_BINARY;
const inCi = Boolean(process.env.CI);

interface Sandbox {
  dir: string;
  env: NodeJS.ProcessEnv;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** An empty folder holding only a copy of the binary; PATH points at a folder that is empty too. */
function sandbox(source: string): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-binary-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "home"));
  mkdirSync(join(dir, "empty-bin"));
  copyFileSync(source, join(dir, "smartmoney"));
  return { dir, env: { PATH: join(dir, "empty-bin"), HOME: join(dir, "home") } };
}

function runOnce(box: Sandbox, args: string[]) {
  const result = spawnSync("./smartmoney", args, {
    cwd: box.dir,
    env: box.env,
    encoding: "utf8",
    timeout: 30_000,
  });
  if (result.error) throw result.error;
  return result;
}

interface Server {
  child: ChildProcess;
  /** The port `serve` printed. */
  port: Promise<number>;
  /** Everything written to stderr so far: the JSON log lines. */
  stderr(): string;
}

/** Starts `serve` on a free port. */
function startServer(box: Sandbox, extra: string[] = []): Server {
  const child = spawn("./smartmoney", ["serve", "--db", "./x.db", "--port", "0", ...extra], {
    cwd: box.dir,
    env: box.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const port = new Promise<number>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /smartmoney listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) resolve(Number(match[1]));
    });
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(
        new Error(
          `serve exited before listening (code ${code}, signal ${signal}) in ${box.dir}:\n${stdout}${stderr}`,
        ),
      ),
    );
  });
  return { child, port, stderr: () => stderr };
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

describe("the single executable", () => {
  it.skipIf(!binary && !inCi)(
    "runs without node: mints a key per tier, serves, answers each key, stops on SIGTERM",
    async () => {
      if (!binary) {
        throw new Error(
          "SMARTMONEY_BINARY is not set: CI must run `npm run build` and point it at dist/smartmoney",
        );
      }
      const box = sandbox(binary);
      expect(spawnSync("sh", ["-c", "command -v node"], { env: box.env }).status).not.toBe(0);

      const keys = new Map<Tier, string>();
      for (const tier of TIERS) {
        const minted = runOnce(box, ["keys", "mint", "--tier", tier, "--db", "./x.db", "--json"]);
        expect(minted.status, minted.stderr).toBe(0);
        const printed = JSON.parse(minted.stdout) as Record<string, unknown>;
        expect(printed).toMatchObject({
          tier,
          key: expect.stringMatching(/^svc_api_[0-9a-f]{48}$/),
        });
        keys.set(tier, printed.key as string);
      }

      const server = startServer(box);
      const exited = exitOf(server.child);
      const port = await server.port;
      const base = `http://127.0.0.1:${port}`;

      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true, storage: { state: "ok" } });

      for (const [tier, key] of keys) {
        const ping = await fetch(`${base}/v1/_ping`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(ping.status).toBe(200);
        expect(await ping.json()).toEqual({ ok: true, tier });
      }
      const anonymous = await fetch(`${base}/v1/_ping`);
      expect(anonymous.status).toBe(401);

      // The bundled OpenAPI generator is the code most likely to miss something at bundle time.
      const openapi = await fetch(`${base}/v1/openapi.json`);
      expect(openapi.status).toBe(200);
      expect(((await openapi.json()) as { paths: object }).paths).toHaveProperty("/v1/_ping");

      server.child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
      // pino made it into the bundle: structured lines on stderr, up to the shutdown.
      const logs = server
        .stderr()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { msg?: string });
      expect(logs.map((line) => line.msg)).toEqual(
        expect.arrayContaining(["listening", "stopped"]),
      );
    },
    60_000,
  );

  it.skipIf(!binary && !inCi)(
    "carries Litestream: serve --replicate streams to a folder, restore brings the database back",
    async () => {
      if (!binary) throw new Error("SMARTMONEY_BINARY is not set");
      const box = sandbox(binary);
      const minted = runOnce(box, ["keys", "mint", "--tier", "free", "--db", "./x.db", "--json"]);
      expect(minted.status, minted.stderr).toBe(0);
      const replica = join(box.dir, "replica");
      const server = startServer(box, ["--replicate", `file://${replica}`]);
      const exited = exitOf(server.child);
      await server.port;
      let status: { replication: { state: string; lag_seconds: number | null } | null } = {
        replication: null,
      };
      for (let i = 0; i < 100 && status.replication?.lag_seconds !== 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = JSON.parse(runOnce(box, ["status", "--db", "./x.db", "--json"]).stdout);
      }
      expect(status.replication).toMatchObject({ state: "running", lag_seconds: 0 });
      server.child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });

      const restored = runOnce(box, ["restore", "--from", `file://${replica}`, "--db", "./y.db"]);
      expect(restored.status, restored.stderr).toBe(0);
      const keys = runOnce(box, ["keys", "list", "--db", "./y.db", "--json"]);
      expect(JSON.parse(keys.stdout)).toEqual([
        expect.objectContaining({ id: JSON.parse(minted.stdout).id }),
      ]);
    },
    60_000,
  );

  it.skipIf(!binary && !inCi)(
    "carries the refresh's model workers: seed's full refresh, and an incremental one after trades by many wallets, run their models in threads",
    () => {
      if (!binary) throw new Error("SMARTMONEY_BINARY is not set");
      const box = sandbox(binary);
      const seeded = runOnce(box, ["seed", "--db", "./x.db"]);
      expect(seeded.status, seeded.stderr).toBe(0);
      expect(seeded.stdout).toMatch(/read models: [1-9]\d* wallets, [1-9]\d* markets/);
      // The worker's bundle came out of the binary, as the SQLite addon did.
      const cache = readdirSync(join(box.env.HOME!, ".cache", "smartmoney"));
      expect(cache).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^model-worker-[0-9a-f]{16}\.cjs$/),
          expect.stringMatching(/^better_sqlite3-[0-9a-f]{16}\.node$/),
        ]),
      );
      const full = runOnce(box, ["jobs", "run", "refresh", "--full", "--db", "./x.db"]);
      expect(full.status, full.stderr).toBe(0);
      expect(full.stdout).toMatch(/kind full/);

      // Trades by more new wallets than WALLETS_IN_WORKER_FROM: the incremental refresh after
      // them models its wallets in the worker too, and copies its WAL back in another.
      const market = "0x".padEnd(66, "7");
      const at = Date.now() - 60_000;
      const lines = [
        JSON.stringify({
          type: "market",
          slug: "binary-worker-market",
          title: "Binary worker market",
          category: "crypto",
          condition_id: market,
          end_date: at + 86_400_000,
          created_at: at - 86_400_000,
        }),
      ];
      for (let i = 1; i <= WALLETS_IN_WORKER_FROM + 100; i += 1) {
        lines.push(
          JSON.stringify({
            type: "trade",
            tx_hash: `0x${i.toString(16).padStart(64, "0")}`,
            log_index: 0,
            wallet: `0x${(i + 0xabc000).toString(16).padStart(40, "0")}`,
            condition_id: market,
            outcome: i % 2 ? "YES" : "NO",
            side: "BUY",
            price: 0.5,
            size: 10,
            usd_value: 5,
            timestamp: at + i,
          }),
        );
      }
      writeFileSync(join(box.dir, "new.jsonl"), `${lines.join("\n")}\n`);
      const imported = runOnce(box, ["import", "./new.jsonl", "--db", "./x.db"]);
      expect(imported.status, imported.stderr).toBe(0);
      const incremental = runOnce(box, ["jobs", "run", "refresh", "--db", "./x.db", "--json"]);
      expect(incremental.status, incremental.stderr).toBe(0);
      const summary = JSON.parse(incremental.stdout);
      expect(summary).toMatchObject({ kind: "incremental" });
      expect(summary.wallets).toBeGreaterThanOrEqual(WALLETS_IN_WORKER_FROM + 100);
      expect(summary.wal_checkpoint.log).toBeGreaterThan(0);
      expect(summary.wal_checkpoint.checkpointed).toBe(summary.wal_checkpoint.log);
    },
    60_000,
  );

  it.skipIf(!binary && !inCi)(
    "carries uPlot: the backtest's report.html inlines the charting library and its charts' data",
    () => {
      if (!binary) throw new Error("SMARTMONEY_BINARY is not set");
      const box = sandbox(binary);
      expect(runOnce(box, ["seed", "--db", "./x.db"]).status).toBe(0);
      const run = runOnce(box, ["backtest", "--db", "./x.db", "--out", "./report"]);
      expect(run.status, run.stderr).toBe(0);
      const html = readFileSync(join(box.dir, "report", "report.html"), "utf8");
      expect(html).toContain("var uPlot=");
      expect(html).toContain('<script type="application/json" id="reliability-data">');
      expect(html).toContain('<figure class="chart" id="reliability-all">');
    },
    60_000,
  );

  it.skipIf(!binary && !inCi)(
    "carries DuckDB: exports Parquet and imports it back into a fresh database",
    () => {
      if (!binary) throw new Error("SMARTMONEY_BINARY is not set");
      const box = sandbox(binary);
      expect(runOnce(box, ["seed", "--db", "./x.db"]).status).toBe(0);
      const exported = runOnce(box, ["export", "--db", "./x.db", "--out", "./out", "--json"]);
      expect(exported.status, exported.stderr).toBe(0);
      const files = JSON.parse(exported.stdout).files as { file: string; rows: number }[];
      const fills = files.find((f) => f.file === "fills.parquet")!.rows;
      expect(fills).toBeGreaterThan(0);
      // The addon and its library came out of the binary, side by side.
      const cache = join(box.env.HOME!, ".cache", "smartmoney");
      const duckdb = readdirSync(cache).find((name) => /^duckdb-[0-9a-f]{16}$/.test(name));
      expect(readdirSync(join(cache, duckdb!)).sort()).toEqual(["duckdb.node", "libduckdb.so"]);
      const imported = runOnce(box, [
        "import",
        "--db",
        "./fresh.db",
        "--json",
        "./out/markets.parquet",
        "./out/fills.parquet",
      ]);
      expect(imported.status, imported.stderr).toBe(0);
      const [, trades] = JSON.parse(imported.stdout) as { counts: { trade: { new: number } } }[];
      expect(trades!.counts.trade.new).toBe(fills);
    },
    60_000,
  );
});
