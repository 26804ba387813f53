import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolTable } from "../../src/mcp/server";
import { READ_ONLY_ANNOTATIONS } from "../../src/mcp/tool";
import {
  callRequest,
  httpClient,
  listRequest,
  MCP_HEADERS,
  NOW,
  post,
  restBody,
  type SeededWorld,
  seededWorld,
  TOOL_NAMES,
} from "./world";

const DAY = 86_400_000;

let w: SeededWorld;
let terminal: Client;
let pro: Client;
/** REST keys of the same tiers, on the same database. */
let apiTerminal: string;
let apiPro: string;
let mcpTerminal: string;
let whale: string;
let slug: string;
let conditionId: string;
let nameWord: string;
let investigationId: number;

beforeAll(async () => {
  w = await seededWorld();
  const { t } = w;
  apiTerminal = t.key("terminal");
  apiPro = t.key("terminal_pro");
  mcpTerminal = t.key("terminal", { kind: "mcp" });
  terminal = await httpClient(t.app, mcpTerminal);
  pro = await httpClient(t.app, t.key("terminal_pro", { kind: "mcp" }));
  whale = w.manifest.planted.whales[0]!;
  const busiest = t.db.reader
    .prepare(
      `SELECT m.slug, m.condition_id FROM markets m JOIN trades tr ON tr.market_id = m.id
        WHERE tr.ts > ? GROUP BY m.id ORDER BY count(*) DESC, m.id LIMIT 1`,
    )
    .get(NOW - DAY) as { slug: string; condition_id: string };
  slug = busiest.slug;
  conditionId = busiest.condition_id;
  const named = t.db.reader
    .prepare(
      `SELECT w.platform_name AS name FROM wallets w JOIN wallet_stats s USING (address)
        WHERE w.platform_name IS NOT NULL ORDER BY s.total_volume DESC LIMIT 1`,
    )
    .get() as { name: string };
  nameWord = named.name.split(/\s+/).find((word) => word.length >= 3)!;
  const list = (await restBody(t, "/v1/investigations?limit=1", apiPro)) as {
    data: { id: number }[];
  };
  investigationId = list.data[0]!.id;
}, 120_000);

afterAll(async () => {
  await terminal?.close();
  await pro?.close();
  w?.t.close();
});

type Call = Awaited<ReturnType<Client["callTool"]>>;

/** The HTTP status and text of the SDK client's StreamableHTTPError. */
async function httpFailure(promise: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  const error = (await promise.then(
    () => {
      throw new Error("expected the MCP client to fail");
    },
    (e: unknown) => e,
  )) as { code?: unknown; message: string };
  return { code: error.code, message: error.message };
}

function textOf(result: Call): string {
  const first = (result.content as { type: string; text: string }[])[0]!;
  expect(first.type).toBe("text");
  return first.text;
}

describe("tools/list", () => {
  it("lists the twelve tools, read-only, each argument described, with output schemas", async () => {
    const { tools } = await terminal.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      expect(tool.annotations).toMatchObject(READ_ONLY_ANNOTATIONS);
      expect(tool.title?.length).toBeGreaterThan(3);
      expect(tool.description?.length).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type).toBe("object");
      const properties = Object.entries(tool.inputSchema.properties ?? {});
      expect(properties.length).toBeGreaterThan(0);
      for (const [name, schema] of properties) {
        expect({ tool: tool.name, name, described: typeof (schema as any).description }).toEqual({
          tool: tool.name,
          name,
          described: "string",
        });
      }
    }
  });

  it("the listing built once equals the one the SDK builds on every tools/list", async () => {
    // A plain McpServer with the same registrations, answering tools/list its own way.
    const sdk = new McpServer({ name: "reference", version: "1" });
    for (const tool of createToolTable(w.t.app).tools) {
      sdk.registerTool(
        tool.name,
        {
          title: tool.title,
          description: tool.description,
          inputSchema: tool.input,
          outputSchema: tool.output,
          annotations: { title: tool.title, ...READ_ONLY_ANNOTATIONS },
        },
        () => ({ content: [] }),
      );
    }
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await sdk.connect(serverSide);
    const reference = new Client({ name: "reference", version: "1" });
    await reference.connect(clientSide);
    expect(await terminal.listTools()).toEqual(await reference.listTools());
    await reference.close();
    await sdk.close();
  });

  it("shows the REST ranges and defaults in the input schemas", async () => {
    const { tools } = await terminal.listTools();
    const flow = tools.find((tool) => tool.name === "get_market_flow")!.inputSchema as any;
    expect(flow.required).toEqual(["slug"]);
    expect(flow.properties.minutes).toMatchObject({
      type: "integer",
      minimum: 5,
      maximum: 1440,
      default: 60,
    });
    expect(flow.properties.whales_only).toMatchObject({ type: "boolean", default: true });
    expect(flow.additionalProperties).toBe(false);
    const board = tools.find((tool) => tool.name === "get_leaderboard")!.inputSchema as any;
    expect(board.properties.kind.enum).toEqual(["whales", "pnl", "category"]);
    expect(board.properties.limit).toMatchObject({ minimum: 1, maximum: 100, default: 50 });
  });
});

describe("every tool answers what its REST endpoint answers", () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const cases: {
    tool: string;
    args: () => Record<string, unknown>;
    path: () => string;
    tier?: "terminal_pro";
    /** A non-trivial answer, so that equal does not mean equally empty. */
    filled: (body: any) => boolean;
  }[] = [
    {
      tool: "get_wallet_signal",
      args: () => ({ address: `0x${whale.slice(2).toUpperCase()}` }),
      path: () => `/v1/signals/wallet/${whale}`,
      filled: (b) => b.wallet === whale && b.stats.total_bets > 0,
    },
    {
      tool: "get_wallet_dossier",
      args: () => ({ address: whale }),
      path: () => `/v1/wallets/${whale}`,
      filled: (b) => b.recent_trades.length > 0,
    },
    {
      tool: "search_wallets",
      args: () => ({ query: nameWord, limit: 5 }),
      path: () => `/v1/wallets/search?q=${encodeURIComponent(nameWord)}&limit=5`,
      filled: (b) => b.results.length > 0,
    },
    {
      tool: "get_market_signal",
      args: () => ({ slug }),
      path: () => `/v1/signals/market/${slug}`,
      filled: (b) => b.market.slug === slug && b.smart_money_probability !== null,
    },
    {
      tool: "analyze_market",
      args: () => ({ slug }),
      path: () => `/v1/analyze/market/${slug}`,
      tier: "terminal_pro",
      filled: (b) => b.top_positions.length > 0,
    },
    {
      tool: "get_market_flow",
      args: () => ({ slug }),
      path: () => `/v1/markets/${slug}/flow`,
      filled: (b) => b.window_minutes === 60 && b.whales_only === true,
    },
    {
      tool: "get_market_flow",
      args: () => ({ slug, minutes: 1440, whales_only: false }),
      path: () => `/v1/markets/${slug}/flow?minutes=1440&whales_only=false`,
      filled: (b) => b.total_volume > 0,
    },
    {
      tool: "get_trending_markets",
      args: () => ({}),
      path: () => "/v1/markets/trending",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "get_trending_markets",
      args: () => ({ rank_by: "price_change", period_hours: 168, limit: 5 }),
      path: () => "/v1/markets/moving?period_hours=168&limit=5",
      filled: (b) => b.data.length === 5 && b.next_cursor !== null,
    },
    {
      tool: "get_trending_markets",
      args: () => ({ category: "politics", period_hours: 168, search: "e" }),
      path: () => "/v1/markets/trending?category=politics&period_hours=168&search=e",
      filled: (b) => b.data.length > 0 && b.data.every((m: any) => m.category === "politics"),
    },
    {
      tool: "get_market_movers",
      args: () => ({}),
      path: () => "/v1/signals/movers",
      filled: (b) => b.count > 0,
    },
    {
      tool: "get_market_movers",
      args: () => ({ period_hours: 72, limit: 5, category: "crypto" }),
      path: () => "/v1/signals/movers?period_hours=72&limit=5&category=crypto",
      filled: (b) => b.count > 0 && b.period_hours === 72,
    },
    {
      tool: "get_leaderboard",
      args: () => ({ kind: "whales" }),
      path: () => "/v1/leaderboards/whales",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "get_leaderboard",
      args: () => ({ kind: "whales", sort: "winRate", limit: 3, min_resolved_bets: 1 }),
      path: () => "/v1/leaderboards/whales?sort=winRate&limit=3&min_resolved_bets=1",
      filled: (b) => b.data.length === 3,
    },
    {
      tool: "get_leaderboard",
      args: () => ({ kind: "pnl", sort_dir: "asc", min_resolved_bets: 0, limit: 10 }),
      path: () => "/v1/leaderboards/pnl?sort_dir=asc&min_resolved_bets=0&limit=10",
      filled: (b) => b.data.length === 10,
    },
    {
      tool: "get_leaderboard",
      args: () => ({ kind: "pnl" }),
      path: () => "/v1/leaderboards/pnl",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "get_leaderboard",
      args: () => ({ kind: "category", category: "politics", sort: "volume", min_bets: 1 }),
      path: () => "/v1/leaderboards/category/politics?sort=volume&min_bets=1",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "screen_wallet_edges",
      args: () => ({}),
      path: () => "/v1/signals/screen",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "screen_wallet_edges",
      args: () => ({ min_edge: 0.05, min_bets: 2, limit: 10, category: "sports" }),
      path: () => "/v1/signals/screen?min_edge=0.05&min_bets=2&limit=10&category=sports",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "query_trades",
      args: () => ({ wallet: whale }),
      path: () => `/v1/trades?wallet=${whale}`,
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "query_trades",
      args: () => ({ market: conditionId, side: "BUY", min_bet: 10, limit: 50 }),
      path: () => `/v1/trades?market=${conditionId}&side=BUY&min_bet=10&limit=50`,
      filled: (b) => b.data.length > 0 && b.data.every((t: any) => t.side === "BUY"),
    },
    {
      tool: "query_trades",
      args: () => ({ start: iso(NOW - 2 * DAY), end: NOW }),
      path: () => `/v1/trades?start=${iso(NOW - 2 * DAY)}&end=${NOW}`,
      filled: (b) => b.data.length === 25,
    },
    {
      tool: "list_investigations",
      args: () => ({}),
      path: () => "/v1/investigations",
      tier: "terminal_pro",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "list_investigations",
      args: () => ({ type: "wallet", limit: 2 }),
      path: () => "/v1/investigations?type=wallet&limit=2",
      tier: "terminal_pro",
      filled: (b) => b.data.length > 0,
    },
    {
      tool: "list_investigations",
      args: () => ({ id: investigationId }),
      path: () => `/v1/investigations/${investigationId}`,
      tier: "terminal_pro",
      filled: (b) => b.id === investigationId && b.evidence.length > 0,
    },
  ];

  it("covers all twelve tools", () => {
    expect([...new Set(cases.map((c) => c.tool))].sort()).toEqual([...TOOL_NAMES].sort());
  });

  it.each(cases.map((c, i) => [`${c.tool} #${i}`, c] as const))("%s", async (_, c) => {
    const client = c.tier === "terminal_pro" ? pro : terminal;
    const key = c.tier === "terminal_pro" ? apiPro : apiTerminal;
    const result = await client.callTool({ name: c.tool, arguments: c.args() });
    const rest = await restBody(w.t, c.path(), key);
    expect(result.isError ?? false, textOf(result)).toBe(false);
    expect(result.structuredContent).toEqual(rest);
    expect(c.filled(rest)).toBe(true);
    // The text carries a one-line summary, then the same body as JSON.
    const [summary, json] = textOf(result).split("\n");
    expect(summary!.length).toBeGreaterThan(10);
    expect(JSON.parse(json!)).toEqual(rest);
  });

  it("pages like REST: a tool's next_cursor pages REST, and the other way round", async () => {
    const first = await terminal.callTool({
      name: "get_trending_markets",
      arguments: { rank_by: "price_change", period_hours: 168, limit: 4 },
    });
    const cursor = (first.structuredContent as { next_cursor: string }).next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await terminal.callTool({
      name: "get_trending_markets",
      arguments: { rank_by: "price_change", period_hours: 168, limit: 4, cursor },
    });
    const rest = await restBody(
      w.t,
      `/v1/markets/moving?period_hours=168&limit=4&cursor=${encodeURIComponent(cursor)}`,
      apiTerminal,
    );
    expect(second.structuredContent).toEqual(rest);

    const page = (await restBody(w.t, `/v1/trades?wallet=${whale}&limit=3`, apiTerminal)) as {
      next_cursor: string;
    };
    const next = await terminal.callTool({
      name: "query_trades",
      arguments: { wallet: whale, limit: 3, cursor: page.next_cursor },
    });
    const restNext = await restBody(
      w.t,
      `/v1/trades?wallet=${whale}&limit=3&cursor=${encodeURIComponent(page.next_cursor)}`,
      apiTerminal,
    );
    expect(next.structuredContent).toEqual(restNext);
    expect((restNext as { data: unknown[] }).data.length).toBe(3);
  });
});

describe("tool errors", () => {
  it("a tool above the key's tier is a tool error naming the tier, not a protocol error", async () => {
    for (const [name, args] of [
      ["analyze_market", { slug }],
      ["list_investigations", {}],
    ] as const) {
      const result = await terminal.callTool({ name, arguments: args });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(
        `${name} needs the terminal_pro tier or above; this key's account is on terminal`,
      );
      expect(result.structuredContent).toBeUndefined();
    }
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ["get_market_flow", { slug: "x", minutes: 2 }, "minutes must be an integer from 5 to 1440"],
    ["get_market_flow", { slug: "x", minutes: 60.5 }, "minutes must be an integer from 5 to 1440"],
    ["get_market_flow", { slug: "x", whales_only: "yes" }, "whales_only must be true or false"],
    ["get_market_flow", {}, "slug is required"],
    ["get_wallet_signal", { address: "0x123" }, "address must be an address"],
    ["get_wallet_signal", {}, "address is required"],
    ["search_wallets", { query: "ab" }, "query must be at least 3 characters"],
    ["search_wallets", { query: "abc", limit: 26 }, "limit must be an integer from 1 to 25"],
    ["get_leaderboard", {}, "kind is required"],
    ["get_leaderboard", { kind: "nope" }, "kind must be one of whales, pnl, category"],
    ["get_leaderboard", { kind: "category" }, "category is required with kind category"],
    ["get_leaderboard", { kind: "pnl", sort: "volume" }, "sort does not apply to kind pnl"],
    ["get_leaderboard", { kind: "whales", sort: "pnl" }, "sort for kind whales must be one of"],
    ["get_leaderboard", { kind: "whales", limit: 0 }, "limit must be an integer from 1 to 100"],
    ["get_leaderboard", { kind: "pnl", min_bets: 3 }, "min_bets goes only with kind category"],
    [
      "get_trending_markets",
      { period_hours: 169 },
      "period_hours must be an integer from 1 to 168",
    ],
    ["get_trending_markets", { cursor: "garbage" }, "cursor is invalid"],
    ["get_market_movers", { limt: 5 }, 'Unrecognized key: "limt"'],
    ["get_market_movers", { limt: 5, lmit: 5 }, 'Unrecognized keys: "limt", "lmit"'],
    ["screen_wallet_edges", { min_edge: 2 }, "min_edge must be a number from -1 to 1"],
    [
      "query_trades",
      {},
      "give at least one selective filter: wallet, market, or a start+end window",
    ],
    ["query_trades", { start: NOW }, "a time window needs both start and end"],
    ["query_trades", { start: NOW - 91 * DAY, end: NOW }, "must not exceed 90 days"],
    ["query_trades", { start: NOW, end: NOW - 1 }, "end must not be before start"],
    ["query_trades", { start: "yesterday", end: NOW }, "start must be an ISO-8601 date-time"],
    // As /v1/trades: a date-time needs its offset (without one it would be read in server time).
    [
      "query_trades",
      { start: "2026-10-01T10:00", end: NOW },
      "start must be an ISO-8601 date-time",
    ],
    ["query_trades", { start: 0, end: -1 }, "end must be an ISO-8601 date-time"],
    ["query_trades", { market: "0x12" }, "market must be a condition id"],
    ["query_trades", { wallet: `0x${"1".repeat(40)}`, side: "buy" }, "side must be one of BUY"],
    ["get_market_signal", { slug: "no-such-market" }, "no market with slug 'no-such-market'"],
    ["get_wallet_dossier", { address: `0x${"0".repeat(39)}1` }, "has never traded"],
    ["no_such_tool", {}, "no_such_tool not found"],
  ];

  it.each(invalid)("%s %j → %s", async (name, args, fragment) => {
    const result = await terminal.callTool({ name, arguments: args });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(fragment);
  });

  it("a cursor of the other ranking is refused, as REST refuses it", async () => {
    const moving = await terminal.callTool({
      name: "get_trending_markets",
      arguments: { rank_by: "price_change", period_hours: 168, limit: 2 },
    });
    const cursor = (moving.structuredContent as { next_cursor: string }).next_cursor;
    const result = await terminal.callTool({
      name: "get_trending_markets",
      arguments: { period_hours: 168, limit: 2, cursor },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("cursor is invalid");
  });

  it("an investigation that does not exist is a tool error", async () => {
    const result = await pro.callTool({ name: "list_investigations", arguments: { id: 999_999 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("no open investigation with id 999999");
  });
});

describe("the HTTP endpoint", () => {
  async function envelopeOf(res: Response, status: number, code: string) {
    expect(res.status).toBe(status);
    const body = (await res.json()) as {
      error: { code: string; message: string; request_id: string };
    };
    expect(body.error.code).toBe(code);
    expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
    return body.error.message;
  }

  it("answers 200 JSON with the rate-limit headers and a request id", async () => {
    const res = await post(w.t.app, mcpTerminal, listRequest());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
      expect(res.headers.get(name)).toMatch(/^\d+$/);
    }
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const body = (await res.json()) as { result: { tools: unknown[] } };
    expect(body.result.tools).toHaveLength(12);
  });

  it("refuses a missing, malformed, unknown or revoked key and an API key with 401", async () => {
    const { t } = w;
    expect(
      await envelopeOf(await post(t.app, undefined, listRequest()), 401, "unauthorized"),
    ).toContain("missing Authorization header");
    const api = await post(t.app, apiTerminal, listRequest());
    expect(await envelopeOf(api, 401, "unauthorized")).toBe(
      "an API key (svc_api_) cannot call the MCP endpoint: use an svc_mcp_ key",
    );
    const unknown = await post(t.app, `svc_mcp_${"ab".repeat(24)}`, listRequest());
    await envelopeOf(unknown, 401, "unauthorized");
    const revoked = t.key("terminal", { kind: "mcp" });
    expect(t.app.accounts.revokeKey(revoked).ok).toBe(true);
    await envelopeOf(await post(t.app, revoked, listRequest()), 401, "unauthorized");
    // And the other way round: an MCP key on the REST API.
    const rest = await t.get("/v1/_ping", mcpTerminal);
    await envelopeOf(rest, 401, "unauthorized");
  });

  it("an SDK client with an API key fails to connect", async () => {
    const failure = await httpFailure(httpClient(w.t.app, apiTerminal));
    expect(failure.code).toBe(401);
    expect(failure.message).toContain("use an svc_mcp_ key");
  });

  it("refuses a free account's MCP key with 403, not counted", async () => {
    const free = w.t.key("free", { kind: "mcp" });
    for (let i = 0; i < 3; i++) {
      const res = await post(w.t.app, free, callRequest("get_wallet_signal", { address: whale }));
      expect(await envelopeOf(res, 403, "forbidden")).toBe(
        "the MCP server needs the terminal tier or above; this key's account is on free",
      );
      expect(res.headers.get("x-ratelimit-limit")).toBe("50");
      expect(res.headers.get("x-ratelimit-remaining")).toBe("50");
    }
    const failure = await httpFailure(httpClient(w.t.app, free));
    expect(failure.code).toBe(403);
    expect(failure.message).toContain("needs the terminal tier");
  });

  it("answers GET and DELETE with 405 and Allow: POST, not counted", async () => {
    const key = w.t.key("terminal", { kind: "mcp" });
    for (const method of ["GET", "DELETE", "PUT"]) {
      const res = await w.t.app.http.request("/mcp", {
        method,
        headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" },
      });
      expect(await envelopeOf(res, 405, "not_found")).toContain("stateless");
      expect(res.headers.get("allow")).toBe("POST");
      expect(res.headers.get("x-ratelimit-remaining")).toBe("1000");
    }
    const unauthenticated = await w.t.app.http.request("/mcp");
    expect(unauthenticated.status).toBe(401);
  });

  it("answers malformed requests with the error envelope", async () => {
    const { app } = w.t;
    const notJson = await post(app, mcpTerminal, "{not json");
    expect(await envelopeOf(notJson, 400, "bad_request")).toContain("malformed JSON");
    const notRpc = await post(app, mcpTerminal, { hello: "world" });
    expect(await envelopeOf(notRpc, 400, "bad_request")).toContain("JSON-RPC");
    const noStream = await post(app, mcpTerminal, listRequest(), {
      ...MCP_HEADERS,
      accept: "application/json",
    });
    expect(await envelopeOf(noStream, 406, "bad_request")).toContain("text/event-stream");
    const text = await post(app, mcpTerminal, listRequest(), {
      ...MCP_HEADERS,
      "content-type": "text/plain",
    });
    expect(await envelopeOf(text, 415, "bad_request")).toContain("application/json");
    const huge = await post(
      app,
      mcpTerminal,
      callRequest("search_wallets", { query: "x".repeat(70_000) }),
    );
    expect(await envelopeOf(huge, 413, "bad_request")).toContain("64 KiB");
  });

  it("works the same behind a real loopback server", async () => {
    const server = serve({ fetch: w.t.app.http.fetch, hostname: "127.0.0.1", port: 0 });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    try {
      const client = new Client({ name: "loopback", version: "1" });
      await client.connect(
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { authorization: `Bearer ${mcpTerminal}` } },
        }),
      );
      expect((await client.listTools()).tools).toHaveLength(12);
      const result = await client.callTool({
        name: "get_wallet_signal",
        arguments: { address: whale },
      });
      expect(result.structuredContent).toEqual(
        await restBody(w.t, `/v1/signals/wallet/${whale}`, apiTerminal),
      );
      await client.close();

      const res = await fetch(url, {
        method: "POST",
        headers: { ...MCP_HEADERS, authorization: `Bearer ${mcpTerminal}` },
        body: JSON.stringify(listRequest()),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/);
      expect(res.headers.get("x-request-id")).toMatch(/^req_/);
      await res.json();
      const get = await fetch(url, { headers: { authorization: `Bearer ${mcpTerminal}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST");
      expect(((await get.json()) as { error: { code: string } }).error.code).toBe("not_found");
      const denied = await fetch(url, {
        method: "POST",
        headers: { ...MCP_HEADERS, authorization: `Bearer ${apiTerminal}` },
        body: JSON.stringify(listRequest()),
      });
      expect(denied.status).toBe(401);
      await denied.json();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("is not part of the REST API's OpenAPI document", async () => {
    const doc = (await (await w.t.get("/v1/openapi.json")).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths).some((path) => path.startsWith("/mcp"))).toBe(false);
  });
});

describe("rate limits", () => {
  function limitedKey(name: string, hourly: number): string {
    const key = w.t.key("terminal", { kind: "mcp", account: name });
    expect(w.t.app.accounts.setLimits(name, { hourly, monthly: 1_000 }).ok).toBe(true);
    return key;
  }

  it("counts each call against the account; past the cap 429 with Retry-After, not counted", async () => {
    const key = limitedKey("mcp-limited", 3);
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await post(w.t.app, key, callRequest("get_market_movers", { limit: 1 }));
      expect(res.status).toBe(200);
      remaining.push(res.headers.get("x-ratelimit-remaining"));
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    for (const body of [listRequest(), callRequest("get_market_movers", {})]) {
      const res = await post(w.t.app, key, body);
      expect(res.status).toBe(429);
      const error = (await res.json()) as { error: { code: string; message: string } };
      expect(error.error.code).toBe("rate_limited");
      expect(error.error.message).toContain("hourly rate limit of 3 calls reached");
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(res.headers.get("x-ratelimit-limit")).toBe("3");
      expect(res.headers.get("x-ratelimit-remaining")).toBe("0");
    }
    // Keys of one account share its quota, REST and MCP alike.
    const api = w.t.key("terminal", { account: "mcp-limited" });
    expect((await w.t.get("/v1/_ping", api)).status).toBe(429);
  });

  it("a batch is charged one call per request in it", async () => {
    const key = limitedKey("mcp-batch", 3);
    const two = await post(w.t.app, key, [listRequest(), listRequest()]);
    expect(two.status).toBe(200);
    expect(two.headers.get("x-ratelimit-remaining")).toBe("1");
    expect((await two.json()) as unknown[]).toHaveLength(2);
    const again = await post(w.t.app, key, [listRequest(), listRequest()]);
    expect(again.status).toBe(429);
  });

  it("a batch refused with 429 uses no quota: its calls are admitted together or not at all", async () => {
    const key = limitedKey("mcp-batch-refused", 5);
    const batch = Array.from({ length: 6 }, () => listRequest());
    const refused = await post(w.t.app, key, batch);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    const one = await post(w.t.app, key, listRequest());
    expect(one.status).toBe(200);
    expect(one.headers.get("x-ratelimit-remaining")).toBe("4");
    const five = await post(w.t.app, key, batch.slice(0, 4));
    expect(five.status).toBe(200);
    expect(five.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  it("an SDK client sees the 429 as an error of the call that crossed the cap", async () => {
    // initialize and the initialized notification are two POSTs; tools/list is the third.
    const key = limitedKey("mcp-client", 3);
    const client = await httpClient(w.t.app, key);
    await client.listTools();
    const failure = await httpFailure(
      client.callTool({ name: "get_market_movers", arguments: {} }),
    );
    expect(failure.code).toBe(429);
    expect(failure.message).toContain("rate_limited");
    await client.close();
  });
});
