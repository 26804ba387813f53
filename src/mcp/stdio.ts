import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { App } from "../app";
import type { Caller } from "../auth/accounts";
import { charge, tierRefusal } from "../auth/admission";
import { tierAllows } from "../auth/tiers";
import { fail, ok, type Result } from "../result";
import { createMcpServer, createToolTable, MCP_SERVER, MCP_TIER, type ToolGate } from "./server";

/** The caller behind an MCP key, or why the key cannot serve MCP. */
export function mcpCaller(app: App, key: string): Result<Caller> {
  const caller = app.accounts.authenticate(key);
  if (!caller) return fail("invalid or revoked MCP key");
  if (caller.kind !== "mcp") {
    return fail("an API key (svc_api_) cannot serve MCP: use an svc_mcp_ key");
  }
  if (!tierAllows(caller.account.tier, MCP_TIER)) {
    return fail(tierRefusal(MCP_SERVER, MCP_TIER, caller.account.tier));
  }
  return ok(caller);
}

/**
 * Per tool call, as REST does per request: the key is looked up again (a revocation, a tier or
 * a limit change made meanwhile applies at once), then the tool's tier, then the account's rate
 * limit, one call per tool call, decided on the ledger every process shares (a server in
 * another process may be charging the same account).
 */
function stdioGate(app: App, key: string): ToolGate {
  return (tool) => {
    const caller = mcpCaller(app, key);
    if (!caller.ok) return caller.reason;
    const charged = charge(app.limiter, caller.value.account, tool.minTier, { what: tool.name });
    return charged.ok ? undefined : charged.refusal.message;
  };
}

/**
 * Serves the tools over stdin/stdout for a local MCP client until the client closes stdin (or
 * the process is told to stop). The key must already have passed mcpCaller.
 */
export async function serveStdio(
  app: App,
  key: string,
  io: { stdin?: Readable; stdout?: Writable } = {},
): Promise<void> {
  const server = createMcpServer({
    table: createToolTable(app),
    gate: stdioGate(app, key),
    now: () => app.deps.clock.now(),
    log: app.deps.log,
  });
  const transport = new StdioServerTransport(io.stdin, io.stdout);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  const input = io.stdin ?? process.stdin;
  // The SDK's transport does not watch for the end of its input: that is the client leaving.
  const onEnd = () => void server.close();
  input.once("end", onEnd);
  const stop = () => void server.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await server.connect(transport);
    await closed;
  } finally {
    input.off("end", onEnd);
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
