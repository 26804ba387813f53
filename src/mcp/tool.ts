import type * as v from "valibot";
import type * as z from "zod";
import type { Tier } from "../auth/tiers";
import { type ArgumentsSchema, toolArguments } from "./inputs";

/** Every tool only reads the database: no side effects, same answer for the same data. */
export const READ_ONLY_ANNOTATIONS = {
  readOnlyHint: true,
  idempotentHint: true,
  destructiveHint: false,
  openWorldHint: false,
} as const;

/** What a tool needs at call time; the app's services are bound when the table is built. */
export interface ToolCall {
  now: number;
}

/**
 * One MCP tool: a thin transport over the read layer, like a REST route. `run` answers exactly
 * the body the REST endpoint `rest` answers for the same input and throws the same ApiError
 * (bad_request, not_found) where REST would answer 400 or 404.
 */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** The REST endpoint behind the tool, whose minimum tier the tool enforces. */
  rest: string;
  minTier: Tier;
  input: z.ZodObject;
  output: z.ZodType;
  /** The body, or a promise of it for a tool whose read yields to other requests meanwhile. */
  run(args: Record<string, unknown>, call: ToolCall): object | Promise<object>;
  /** One line for the text content, ahead of the JSON. */
  summarize(body: object): string;
}

interface ToolDefinition<S extends ArgumentsSchema, B extends object> {
  name: string;
  title: string;
  description: string;
  rest: string;
  minTier: Tier;
  input: S;
  output: z.ZodType;
  run(args: v.InferOutput<S>, call: ToolCall): B | Promise<B>;
  summarize(body: B): string;
}

/**
 * Types a tool's handler against its own argument schema (valibot, src/mcp/inputs.ts), hands that
 * schema to the SDK as zod, then erases the handler's type for the table.
 */
export function defineTool<S extends ArgumentsSchema, B extends object>(
  definition: ToolDefinition<S, B>,
): McpTool {
  return { ...definition, input: toolArguments(definition.input) } as unknown as McpTool;
}

/** A number for a summary line: short, and "n/a" where the figure is not known. */
export function figure(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined) return "n/a";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined) return "n/a";
  return `${Math.round(value).toLocaleString("en-US")} USD`;
}

export function morePages(page: { next_cursor: string | null }): string {
  return page.next_cursor === null ? "" : "; more: pass next_cursor as cursor";
}
