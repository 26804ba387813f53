import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import * as z from "zod";
import { ADDRESS } from "../domain";
import { parseInstant } from "../instant";

/**
 * Argument schemas for the tools, in valibot like every other schema of the service. They hold
 * the same ranges as the REST query parameters (src/http/params.ts and the route files) and word
 * their refusals the same way, so an agent reads "limit must be an integer from 1 to 100"
 * whichever door it came in by. Unlike query strings, tool arguments arrive typed: a number is a
 * JSON number, a flag a JSON boolean. `toolArguments` hands a tool's schema to the MCP SDK, which
 * takes zod only.
 */

/** A tool's arguments: an object that refuses unknown keys, possibly with cross-field checks. */
export type ArgumentsSchema =
  | v.StrictObjectSchema<v.ObjectEntries, undefined>
  | v.SchemaWithPipe<
      readonly [
        v.StrictObjectSchema<v.ObjectEntries, undefined>,
        ...v.PipeItem<
          v.InferOutput<v.StrictObjectSchema<v.ObjectEntries, undefined>>,
          unknown,
          v.BaseIssue<unknown>
        >[],
      ]
    >;

export function integer(name: string, min: number, max: number, description: string) {
  const rule = `${name} must be an integer from ${min} to ${max}`;
  return v.pipe(
    v.number(rule),
    v.integer(rule),
    v.minValue(min, rule),
    v.maxValue(max, rule),
    v.description(description),
  );
}

export function decimal(name: string, min: number, max: number, description: string) {
  const unbounded = max === Number.POSITIVE_INFINITY;
  const rule = unbounded
    ? `${name} must be a number of at least ${min}`
    : `${name} must be a number from ${min} to ${max}`;
  return unbounded
    ? v.pipe(v.number(rule), v.minValue(min, rule), v.description(description))
    : v.pipe(
        v.number(rule),
        v.minValue(min, rule),
        v.maxValue(max, rule),
        v.description(description),
      );
}

export function text(name: string, maxLength: number, description: string) {
  return v.pipe(
    v.string(`${name} must be a string`),
    v.minLength(1, `${name} must not be empty`),
    v.maxLength(maxLength, `${name} must be at most ${maxLength} characters`),
    v.description(description),
  );
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  name: string,
  values: T,
  description: string,
) {
  return v.pipe(
    v.picklist(values, `${name} must be one of ${values.join(", ")}`),
    v.description(description),
  );
}

export function address(name: string, description: string) {
  return v.pipe(
    v.string(`${name} must be a string`),
    v.regex(ADDRESS, `${name} must be an address: 0x followed by 40 hex characters`),
    v.transform((s) => s.toLowerCase()),
    v.description(description),
  );
}

export const slug = text(
  "slug",
  300,
  "The market's slug, e.g. from get_trending_markets or a Polymarket URL (polymarket.com/event/<slug>).",
);

export const cursor = v.pipe(
  v.string("cursor must be a string"),
  v.minLength(1, "cursor must not be empty"),
  v.description(
    "next_cursor from this tool's previous answer, unchanged, to get the next page; leave out for the first page.",
  ),
);

export const periodHours = v.optional(
  integer(
    "period_hours",
    1,
    168,
    "Window length in hours (1 to 168): the period_hours whole clock hours before the current hour plus the current hour so far.",
  ),
  24,
);

export const marketCategory = text(
  "category",
  64,
  "Only markets of this category, e.g. politics, crypto, sports, culture, economics, breaking-news.",
);

/** ISO-8601 date-time or Unix milliseconds, as the REST `start` and `end` parameters take. */
export function instant(name: string, description: string) {
  const rule = `${name} must be an ISO-8601 date-time or Unix milliseconds`;
  return v.pipe(
    v.union(
      [
        v.pipe(
          v.number(rule),
          v.integer(rule),
          v.minValue(0, rule),
          v.maxValue(Number.MAX_SAFE_INTEGER, rule),
        ),
        v.string(rule),
      ],
      rule,
    ),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const ms = typeof dataset.value === "number" ? dataset.value : parseInstant(dataset.value);
      if (Number.isFinite(ms)) return ms;
      addIssue({ message: rule });
      return NEVER;
    }),
    v.description(description),
  );
}

/** Whether a key's schema (optional or not) changes the value it checks. */
function transforms(schema: v.GenericSchema): boolean {
  const inner = "wrapped" in schema ? (schema.wrapped as v.GenericSchema) : schema;
  const pipe = "pipe" in inner ? (inner.pipe as { kind: string }[]) : [];
  return pipe.some((item) => item.kind === "transformation");
}

const KEYWORD_ORDER = [
  "type",
  "anyOf",
  "enum",
  "pattern",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "description",
];

/**
 * A key's JSON Schema with its keywords in the order tools/list has always shown them (the
 * order zod writes): the default first, and the description ahead of the rest where the value is
 * transformed. The same schema either way; the order only keeps the listing byte for byte.
 */
function inListingOrder(
  property: Record<string, unknown>,
  transformed: boolean,
): Record<string, unknown> {
  const order = transformed
    ? ["default", "description", ...KEYWORD_ORDER]
    : ["default", ...KEYWORD_ORDER];
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length);
  return Object.fromEntries(Object.entries(property).sort(([a], [b]) => rank(a) - rank(b)));
}

type JsonObjectSchema = {
  properties?: Record<string, Record<string, unknown>>;
  required?: string[];
};

/** The object schema underneath a pipe of cross-field checks. */
function objectOf(schema: ArgumentsSchema): v.StrictObjectSchema<v.ObjectEntries, undefined> {
  return "pipe" in schema ? schema.pipe[0] : schema;
}

/** A problem as the SDK prints it: the message, then " at <key>" when it belongs to one key. */
type ArgumentIssue = { code: "custom"; message: string; path?: string[]; input: unknown };

/**
 * The tool's schema as the MCP SDK takes it: a zod object. Its JSON Schema, for tools/list, is
 * the valibot schema's own (@valibot/to-json-schema), carried per key as zod metadata; its one
 * check runs the valibot schema and hands the SDK the parsed arguments (defaults filled in,
 * addresses lowercased, instants in milliseconds) or the refusals. A missing key and unknown keys
 * are worded here, as valibot names neither in these terms.
 */
export function toolArguments(schema: ArgumentsSchema): z.ZodObject {
  const json = toJsonSchema(schema, { errorMode: "ignore" }) as JsonObjectSchema;
  const entries = objectOf(schema).entries;
  const required = new Set(json.required ?? []);
  // Every key reaches the check below, a missing one too: zod lets a key with a fallback (catch)
  // be absent, yet lists it as required, as the valibot schema has it.
  const shape = Object.fromEntries(
    Object.entries(json.properties ?? {}).map(([key, property]) => {
      const listed = inListingOrder(property, transforms(entries[key]!));
      return [
        key,
        required.has(key) ? z.any().catch(undefined).meta(listed) : z.any().optional().meta(listed),
      ];
    }),
  );
  return z
    .looseObject(shape)
    .meta({ additionalProperties: false })
    .check((ctx) => {
      const given = ctx.value as Record<string, unknown>;
      const parsed = v.safeParse(schema, given, { abortPipeEarly: true });
      if (parsed.success) {
        ctx.value = parsed.output as Record<string, unknown>;
        return;
      }
      const unknown = Object.keys(given).filter((key) => !Object.hasOwn(entries, key));
      for (const issue of parsed.issues) {
        const key = issue.path?.[0]?.key;
        if (issue.path && typeof key === "string" && !Object.hasOwn(entries, key)) continue;
        const missing = issue.type === "strict_object" && issue.received === "undefined";
        const problem: ArgumentIssue = {
          code: "custom",
          message: missing ? `${String(key)} is required` : issue.message,
          input: issue.input,
        };
        if (typeof key === "string") problem.path = [key];
        ctx.issues.push(problem);
      }
      if (unknown.length > 0) {
        const s = unknown.length === 1 ? "" : "s";
        ctx.issues.push({
          code: "custom",
          message: `Unrecognized key${s}: ${unknown.map((key) => `"${key}"`).join(", ")}`,
          input: given,
        });
      }
    }) as unknown as z.ZodObject;
}
