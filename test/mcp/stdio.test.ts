import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { READ_ONLY_ANNOTATIONS } from "../../src/mcp/tool";
import { runCli } from "../helpers/cli";
import { restBody, type SeededWorld, seededWorld, TOOL_NAMES } from "./world";

/**
 * `smartmoney mcp --key … --db …` as a local client starts it: a child process speaking MCP on
 * stdin/stdout, on the seeded database the in-process app also reads (for the REST answers).
 */
let w: SeededWorld;
const stderr: string[] = [];

beforeAll(async () => {
  w = await seededWorld();
}, 120_000);

afterAll(() => {
  w?.t.close();
});

const CLI = ["--import", "tsx", "cli/main.ts", "mcp"];
const ENV = { SMARTMONEY_LOG_LEVEL: "warn" };

async function stdioClient(key: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...CLI, "--key", key, "--db", w.dbPath],
    cwd: process.cwd(),
    env: { ...(process.env as Record<string, string>), ...ENV },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const client = new Client({ name: "smartmoney-stdio-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/**
 * Runs the command to its end in this process (test/helpers/cli.ts): the refusals below happen
 * before anything reads standard input, so they need no child process.
 */
function run(args: string[], env: Record<string, string> = {}) {
  return runCli(["mcp", ...args, "--db", w.dbPath], {
    ...ENV,
    SMARTMONEY_MCP_KEY: undefined,
    ...env,
  });
}

function textOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  return (result.content as { text: string }[])[0]!.text;
}

describe("smartmoney mcp (stdio)", () => {
  it("serves the twelve tools with the REST answers, and the tiers", async () => {
    const { t } = w;
    const key = t.key("terminal", { kind: "mcp" });
    const client = await stdioClient(key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
      for (const tool of tools) expect(tool.annotations).toMatchObject(READ_ONLY_ANNOTATIONS);

      const api = t.key("terminal");
      const whale = w.manifest.planted.whales[1]!;
      for (const [name, path] of [
        ["get_wallet_signal", `/v1/signals/wallet/${whale}`],
        ["get_wallet_dossier", `/v1/wallets/${whale}`],
      ] as const) {
        const result = await client.callTool({ name, arguments: { address: whale } });
        expect(result.isError ?? false).toBe(false);
        expect(result.structuredContent).toEqual(await restBody(t, path, api));
      }

      const refused = await client.callTool({
        name: "list_investigations",
        arguments: {},
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toBe(
        "list_investigations needs the terminal_pro tier or above; this key's account is on terminal",
      );

      const invalid = await client.callTool({ name: "search_wallets", arguments: { query: "x" } });
      expect(invalid.isError).toBe(true);
      expect(textOf(invalid)).toContain("query must be at least 3 characters");

      // A key revoked while the client is connected stops working within the 1 s docs/api.md
      // allows a running server (keys are looked up again at most every KEY_CACHE_MS).
      expect(t.app.accounts.revokeKey(key).ok).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const revoked = await client.callTool({
        name: "get_wallet_signal",
        arguments: { address: whale },
      });
      expect(revoked.isError).toBe(true);
      expect(textOf(revoked)).toBe("invalid or revoked MCP key");
    } finally {
      await client.close();
    }
  });

  it("gives a terminal_pro key the investigations", async () => {
    const { t } = w;
    const client = await stdioClient(t.key("terminal_pro", { kind: "mcp" }));
    try {
      const api = t.key("terminal_pro");
      const list = (await restBody(t, "/v1/investigations?limit=100", api)) as {
        data: { id: number }[];
      };
      expect(list.data.length).toBeGreaterThan(0);
      const listed = await client.callTool({
        name: "list_investigations",
        arguments: { limit: 100 },
      });
      // Cursors are keyed by each installation's secret; this list fits on one page.
      expect(listed.structuredContent).toEqual(list);
      const id = list.data[0]!.id;
      const one = await client.callTool({ name: "list_investigations", arguments: { id } });
      expect(one.structuredContent).toEqual(await restBody(t, `/v1/investigations/${id}`, api));
    } finally {
      await client.close();
    }
  });

  it("counts each tool call against the account's limits", async () => {
    const { t } = w;
    const key = t.key("terminal", { kind: "mcp", account: "stdio-limited" });
    expect(t.app.accounts.setLimits("stdio-limited", { hourly: 2, monthly: 100 }).ok).toBe(true);
    const client = await stdioClient(key);
    try {
      const calls = [];
      for (let i = 0; i < 3; i++) {
        calls.push(await client.callTool({ name: "get_market_movers", arguments: { limit: 1 } }));
      }
      expect(calls.map((c) => c.isError ?? false)).toEqual([false, false, true]);
      expect(textOf(calls[2]!)).toMatch(/^hourly rate limit of 2 calls reached; retry in \d+ s$/);
    } finally {
      await client.close();
    }
    // The calls reached the per-minute ledger that every process shares.
    const account = t.app.accounts.get("stdio-limited")!;
    const ledger = t.db.limits
      .prepare("SELECT sum(calls) AS calls FROM rate_minutes WHERE account_id = ?")
      .get(account.id) as { calls: number };
    expect(ledger.calls).toBe(2);
  });

  it("refuses to start without a usable MCP key: exit 1, one line, nothing on stdout", async () => {
    const { t } = w;
    const cases: [string[], Record<string, string>, string][] = [
      [
        ["--key", t.key("terminal")],
        {},
        "an API key (svc_api_) cannot serve MCP: use an svc_mcp_ key",
      ],
      [
        ["--key", t.key("free", { kind: "mcp" })],
        {},
        "the MCP server needs the terminal tier or above; this key's account is on free",
      ],
      [["--key", `svc_mcp_${"cd".repeat(24)}`], {}, "invalid or revoked MCP key"],
      [[], {}, "no key: pass --key svc_mcp_… or set SMARTMONEY_MCP_KEY"],
      [[], { SMARTMONEY_MCP_KEY: "svc_mcp_nope" }, "invalid or revoked MCP key"],
    ];
    for (const [args, env, message] of cases) {
      const result = await run(args, env);
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: 1,
        stdout: "",
        stderr: `smartmoney: ${message}\n`,
      });
    }
  });
});
