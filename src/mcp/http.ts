import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { type Context, Hono } from "hono";
import { describeRoute } from "hono-openapi";
import type { App } from "../app";
import { charge, quotaHeaders, tierRefusal } from "../auth/admission";
import { tierAllows } from "../auth/tiers";
import { ApiError, envelope } from "../errors";
import type { HttpEnv } from "../http/env";
import { setHeader } from "../http/headers";
import { showQuota } from "../http/middleware/auth";
import { createMcpServer, createToolTable, MCP_SERVER, MCP_TIER } from "./server";

/** Not a REST endpoint: left out of the OpenAPI document (docs/mcp.md describes it). */
const hidden = describeRoute({ hide: true });

/**
 * The Streamable HTTP MCP endpoint, stateless: each POST gets its own server and transport (the
 * SDK's stateless pattern) over the tool table built once here. Mounted at /mcp behind
 * authenticate(accounts, "mcp"), so only svc_mcp_ keys reach it.
 */
export function mcpRoutes(app: App) {
  const { limiter } = app;
  const { log, clock } = app.deps;
  const table = createToolTable(app);

  /**
   * access() of the REST routes (auth/admission.ts, charge), charged per JSON-RPC request: the
   * tier gate (403, not counted),
   * then one call per request in the body, at least one per POST (429, not counted, with
   * Retry-After). A batch cannot buy many calls for the price of one, and a batch refused for
   * want of room is charged nothing: all of its calls are admitted together or none is.
   */
  function admit(c: Context<HttpEnv>, calls: number): void {
    const { account } = c.get("caller")!;
    const charged = charge(limiter, account, MCP_TIER, { what: MCP_SERVER, calls });
    quotaHeaders((name, value) => setHeader(c, name, value), charged.quota);
    if (!charged.ok) throw new ApiError(charged.refusal.code, charged.refusal.message);
  }

  return new Hono<HttpEnv>()
    .post("/", hidden, async (c) => {
      const message = parseJson(await c.req.text());
      admit(c, requestCount(message));
      if (message === undefined) {
        throw new ApiError("bad_request", "malformed JSON body: send a JSON-RPC 2.0 message");
      }
      const { account } = c.get("caller")!;
      const server = createMcpServer({
        table,
        gate: (tool) =>
          tierAllows(account.tier, tool.minTier)
            ? undefined
            : tierRefusal(tool.name, tool.minTier, account.tier),
        now: () => clock.now(),
        log,
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      try {
        await server.connect(transport);
        const res = await transport.handleRequest(c.req.raw, { parsedBody: message });
        if (res.status >= 400) return protocolError(c, res);
        return c.newResponse(res.body, res);
      } finally {
        await server.close();
      }
    })
    .all("/", hidden, (c) => {
      // Stateless: there is no session to stream to (GET) or to end (DELETE). Not a call, so not
      // counted, but the caller still sees its quota.
      showQuota(c, limiter);
      setHeader(c, "Allow", "POST");
      const text = `${c.req.method} /mcp is not supported: this MCP server is stateless, send JSON-RPC messages with POST`;
      // An unknown method is `not_found` on every path; the status stays 405, which tells MCP
      // clients that this server offers no event stream.
      return c.json(envelope("not_found", text, c.get("requestId")), 405);
    });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** JSON-RPC requests in a message or batch (notifications and responses carry no id/method pair). */
function requestCount(message: unknown): number {
  const messages = Array.isArray(message) ? message : [message];
  const requests = messages.filter(
    (m) => typeof m === "object" && m !== null && "method" in m && "id" in m,
  ).length;
  return Math.max(1, requests);
}

/**
 * The transport refuses a request at the HTTP level (wrong Accept or Content-Type, a message
 * that is not JSON-RPC) with a JSON-RPC error object; the HTTP surface answers such refusals
 * with its own error envelope, keeping the transport's status.
 */
async function protocolError(c: Context<HttpEnv>, res: Response) {
  let text = `MCP request refused (HTTP ${res.status})`;
  try {
    const body = (await res.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") text = body.error.message;
  } catch {
    // keep the generic text
  }
  for (const name of ["Allow", "WWW-Authenticate"]) {
    const value = res.headers.get(name);
    if (value) setHeader(c, name, value);
  }
  return c.json(envelope("bad_request", text, c.get("requestId")), res.status as 400);
}
