import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { App } from "../../src/app";
import type { Manifest } from "../../src/fixtures/world";
import { seededTestApp, type TestApp } from "../helpers/app";

export const NOW = Date.parse("2026-11-01T12:30:00.000Z");

export const TOOL_NAMES = [
  "get_wallet_signal",
  "get_wallet_dossier",
  "search_wallets",
  "get_market_signal",
  "analyze_market",
  "get_market_flow",
  "get_trending_markets",
  "get_market_movers",
  "get_leaderboard",
  "screen_wallet_edges",
  "query_trades",
  "list_investigations",
];

export interface SeededWorld {
  t: TestApp;
  manifest: Manifest;
  dbPath: string;
}

/** The small fixture world (seed 7) in a fresh temp database, at NOW on the fake clock. */
export async function seededWorld(): Promise<SeededWorld> {
  const { t, manifest } = await seededTestApp({ now: NOW, seed: 7 });
  // The funding graph and investigations are their own read model.
  t.app.funding.refresh();
  return { t, manifest, dbPath: t.db.path };
}

export const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

/** An SDK client talking to the app's /mcp in-process: its fetch is app.http.request. */
export async function httpClient(app: App, key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://smartmoney.test/mcp"), {
    fetch: (url, init) => Promise.resolve(app.http.request(String(url), init)),
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "smartmoney-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** One raw JSON-RPC POST to /mcp, for the HTTP-level answers (status, headers, envelope). */
export function post(
  app: App,
  key: string | undefined,
  body: unknown,
  headers: Record<string, string> = MCP_HEADERS,
): Promise<Response> {
  return Promise.resolve(
    app.http.request("/mcp", {
      method: "POST",
      headers: key ? { ...headers, authorization: `Bearer ${key}` } : headers,
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
}

let rpcId = 0;
export const listRequest = () => ({ jsonrpc: "2.0", id: ++rpcId, method: "tools/list" });
export const callRequest = (name: string, args: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id: ++rpcId,
  method: "tools/call",
  params: { name, arguments: args },
});

/** The REST body for a path, asserting a 200. */
export async function restBody(t: TestApp, path: string, key: string): Promise<unknown> {
  const res = await t.get(path, key);
  const body = await res.json();
  if (res.status !== 200) {
    throw new Error(`REST ${path} answered ${res.status}: ${JSON.stringify(body)}`);
  }
  return body;
}
