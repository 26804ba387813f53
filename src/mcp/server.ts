import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import * as z from "zod";
import type { App } from "../app";
import type { Tier } from "../auth/tiers";
import { ApiError } from "../errors";
import type { Log } from "../log";
import { listTools } from "./list-tools";
import { marketTools } from "./market-tools";
import { type McpTool, READ_ONLY_ANNOTATIONS } from "./tool";
import { walletTools } from "./wallet-tools";

/** Same interface version as the REST API (API_VERSION in src/http/router.ts). */
const SERVER_INFO = { name: "smartmoney", version: "1.0.0" };

const INSTRUCTIONS = `Read-only smart-money intelligence over Polymarket: wallet scores and dossiers, market sentiment, whale flow, rankings, leaderboards, trades and investigations. Wallets are 0x addresses; markets are slugs (get_trending_markets and get_market_movers list them). Paged tools return next_cursor: pass it back as cursor for the next page. Every call counts against the account's rate limit.`;

/** The twelve tools and their tools/list answer, built once per app. */
export interface ToolTable {
  tools: McpTool[];
  listing: ListToolsResult;
  /**
   * The SDK builds a JSON Schema validator (an Ajv instance, a third of a small call's cost) for
   * every server unless given one; it only serves elicitation, which these tools never use.
   */
  validator: AjvJsonSchemaValidator;
}

/**
 * The tool table: schemas, descriptions and bound read queries, reused by every request's
 * short-lived server. The tools/list answer is built here once too: the SDK would convert every
 * schema to JSON Schema again on each listing (about 10 ms), the same conversion it does
 * (zod's toJSONSchema, draft-07, input side for arguments, output side for results).
 */
export function createToolTable(app: App): ToolTable {
  const tools = [...walletTools(app), ...marketTools(app), ...listTools(app)];
  const listing: ListToolsResult = {
    tools: tools.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: z.toJSONSchema(tool.input, { target: "draft-07", io: "input" }) as {
        type: "object";
      },
      outputSchema: z.toJSONSchema(tool.output, { target: "draft-07", io: "output" }) as {
        type: "object";
      },
      annotations: annotationsOf(tool),
      execution: { taskSupport: "forbidden" },
    })),
  };
  return { tools, listing, validator: new AjvJsonSchemaValidator() };
}

const annotationsOf = (tool: McpTool) => ({ title: tool.title, ...READ_ONLY_ANNOTATIONS });

/**
 * Decides, just before a tool runs, whether this caller may run it now: undefined to go ahead,
 * else the text of the tool error to answer (a tier below the tool's, a rate limit reached).
 */
export type ToolGate = (tool: McpTool) => string | undefined;

export interface McpServerDeps {
  table: ToolTable;
  gate: ToolGate;
  now: () => number;
  log: Log;
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * An MCP server over the tool table. Stateless HTTP makes one per request (the SDK's pattern):
 * registering is a few object writes, the schemas themselves are shared. Expected failures
 * (400- and 404-like ApiErrors, tier, limits) are tool errors the agent can read and act on;
 * anything else is a bug, logged here and answered without its message, which could hold SQL.
 */
export function createMcpServer(deps: McpServerDeps): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: deps.table.validator,
  });
  for (const tool of deps.table.tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        outputSchema: tool.output,
        annotations: annotationsOf(tool),
      },
      async (args: Record<string, unknown>): Promise<CallToolResult> => {
        const refusal = deps.gate(tool);
        if (refusal !== undefined) return toolError(refusal);
        let body: object;
        try {
          body = await tool.run(args, { now: deps.now() });
        } catch (error) {
          if (error instanceof ApiError) return toolError(error.message);
          deps.log.error({ err: error, tool: tool.name }, "MCP tool failed");
          return toolError(`internal error in ${tool.name}; the server logged the details`);
        }
        return {
          content: [{ type: "text", text: `${tool.summarize(body)}\n${JSON.stringify(body)}` }],
          structuredContent: body as Record<string, unknown>,
        };
      },
    );
  }
  const { listing } = deps.table;
  server.server.setRequestHandler(ListToolsRequestSchema, () => listing);
  // The SDK advertises tools.listChanged once a tool is registered; the tool list is fixed and a
  // stateless server has no stream to announce a change on, so it never will.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}

/** The MCP server comes with the terminal tier and above (docs/mcp.md). */
export const MCP_TIER: Tier = "terminal";

/** What a refusal of the whole server calls it (auth/admission.ts words the refusal). */
export const MCP_SERVER = "the MCP server";
