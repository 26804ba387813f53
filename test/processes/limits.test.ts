import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, mintKey, type Server, startServer, stopServer } from "./helpers";

/**
 * Rate limits across real processes on one database: two `serve`s, and a `serve` beside the
 * stdio MCP server a local client starts. Each admits only what the account has left overall.
 */
const dir = mkdtempSync(join(tmpdir(), "smartmoney-limits-"));
const db = join(dir, "shared.db");
const servers: Server[] = [];
/** Each test starts real processes from source; a loaded machine makes that slow. */
const PROCESS_TEST_MS = 120_000;

beforeAll(async () => {
  await cli(db, ["keys", "list"]); // migrates the new database before two servers race to
  // Started side by side; one that started is stopped in afterAll even if the other failed.
  // The API alone (--no-jobs): the jobs count no calls, and each would be one more process.
  const started = await Promise.allSettled([
    startServer(db, ["--no-jobs"]),
    startServer(db, ["--no-jobs"]),
  ]);
  for (const result of started) {
    if (result.status === "fulfilled") servers.push(result.value);
  }
  for (const result of started) if (result.status === "rejected") throw result.reason;
}, PROCESS_TEST_MS);

afterAll(async () => {
  await Promise.all(servers.map(stopServer));
  rmSync(dir, { recursive: true, force: true });
});

async function ping(server: Server, key: string): Promise<number> {
  const res = await fetch(`${server.base}/v1/_ping`, {
    headers: { authorization: `Bearer ${key}` },
  });
  await res.arrayBuffer();
  return res.status;
}

describe("limits across processes", () => {
  it(
    "two servers on one database admit the account's hourly cap between them, no more",
    async () => {
      const key = await mintKey(db, "two-servers");
      await cli(db, [
        "accounts",
        "set-limits",
        "two-servers",
        "--hourly",
        "50",
        "--monthly",
        "1000",
      ]);
      const statuses = await Promise.all(
        Array.from({ length: 100 }, (_, i) => ping(servers[i % 2]!, key)),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(50);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    },
    PROCESS_TEST_MS,
  );

  it(
    "a server and the stdio MCP server share the account's quota",
    async () => {
      const api = await mintKey(db, "mixed");
      const mcp = await mintKey(db, "mixed", "mcp");
      await cli(db, ["accounts", "set-limits", "mixed", "--hourly", "5", "--monthly", "1000"]);
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", "cli/main.ts", "mcp", "--key", mcp, "--db", db],
        cwd: new URL("../..", import.meta.url).pathname,
        env: { ...(process.env as Record<string, string>), SMARTMONEY_LOG_LEVEL: "warn" },
        stderr: "pipe",
      });
      const client = new Client({ name: "limits-test", version: "1.0.0" });
      await client.connect(transport);
      try {
        const outcomes: string[] = [];
        const viaMcp = async () => {
          const result = await client.callTool({ name: "get_market_movers", arguments: {} });
          outcomes.push(result.isError ? "refused" : "ok");
        };
        const viaHttp = async (server: Server) => {
          outcomes.push((await ping(server, api)) === 200 ? "ok" : "refused");
        };
        await viaHttp(servers[0]!);
        await viaMcp();
        await viaHttp(servers[1]!);
        await viaMcp();
        await viaHttp(servers[0]!);
        // Five admitted; from here on every process refuses.
        await viaMcp();
        await viaHttp(servers[1]!);
        await viaMcp();
        await viaHttp(servers[0]!);
        expect(outcomes).toEqual(["ok", "ok", "ok", "ok", "ok", ...Array(4).fill("refused")]);
      } finally {
        await client.close();
      }
    },
    PROCESS_TEST_MS,
  );
});
