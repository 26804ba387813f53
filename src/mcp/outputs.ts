import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import * as z from "zod";

type JsonObjectSchema = {
  type?: unknown;
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
};

function jsonOf(schema: v.GenericSchema): JsonObjectSchema {
  return toJsonSchema(schema, { errorMode: "ignore" }) as JsonObjectSchema;
}

/**
 * A REST response schema (src/schemas/) as a tool's output schema. One definition
 * describes the body in the OpenAPI document and the structuredContent of the tool, which is the
 * same object: the contract test holds REST to it, the SDK holds the tools to it.
 */
export function outputOf(schema: v.GenericSchema): z.ZodType {
  return z.fromJSONSchema(jsonOf(schema) as z.core.JSONSchema.JSONSchema);
}

/**
 * One output schema for a tool that answers either of two bodies (a list, or one item when an
 * id is given). MCP wants an object schema, not a union, so this is the object with the
 * properties of both, none of them required; each property keeps its own shape.
 */
export function eitherOutput(a: v.GenericSchema, b: v.GenericSchema): z.ZodType {
  const left = jsonOf(a);
  const right = jsonOf(b);
  return z.fromJSONSchema({
    type: "object",
    properties: { ...left.properties, ...right.properties },
  } as z.core.JSONSchema.JSONSchema);
}
