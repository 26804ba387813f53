import * as v from "valibot";
import { ADDRESS } from "../domain";
import { badRequest } from "../errors";

/**
 * Query and path parameter schemas. Parameters arrive as text, so each parses its own text
 * strictly; anything out of range or of the wrong type is a 400 naming the parameter, never
 * clamped. Each also declares, through `v.metadata`, the JSON Schema of the value a client sends
 * (an integer, a number, a boolean), so the OpenAPI document states exactly what is enforced.
 */

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

export function integer(name: string, min: number, max: number, fallback?: number) {
  const rule = `${name} must be an integer from ${min} to ${max}`;
  return v.pipe(
    v.optional(v.string(), fallback === undefined ? undefined : String(fallback)),
    v.metadata({
      type: "integer",
      minimum: min,
      maximum: max,
      ...(fallback === undefined ? {} : { default: fallback }),
    }),
    v.check((s) => s === undefined || INTEGER.test(s), rule),
    v.transform((s) => (s === undefined ? undefined : Number(s))),
    v.check((n) => n === undefined || (n >= min && n <= max), rule),
  );
}

export function decimal(name: string, options: { min?: number; max?: number } = {}) {
  const { min = -Infinity, max = Infinity } = options;
  const bounds =
    min > -Infinity && max < Infinity
      ? ` from ${min} to ${max}`
      : min > -Infinity
        ? ` of at least ${min}`
        : max < Infinity
          ? ` of at most ${max}`
          : "";
  const rule = `${name} must be a number${bounds}`;
  return v.pipe(
    v.optional(v.string()),
    v.metadata({
      type: "number",
      ...(min > -Infinity ? { minimum: min } : {}),
      ...(max < Infinity ? { maximum: max } : {}),
    }),
    v.check((s) => s === undefined || DECIMAL.test(s), rule),
    v.transform((s) => (s === undefined ? undefined : Number(s))),
    v.check((n) => n === undefined || (Number.isFinite(n) && n >= min && n <= max), rule),
  );
}

export function boolean(name: string, fallback: boolean) {
  return v.pipe(
    v.optional(v.string(), String(fallback)),
    v.metadata({ type: "boolean", default: fallback }),
    v.check((s) => s === "true" || s === "false", `${name} must be true or false`),
    v.transform((s) => s === "true"),
  );
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  name: string,
  values: T,
  fallback?: T[number],
) {
  return v.optional(
    v.picklist(values, `${name} must be one of ${values.join(", ")}`),
    fallback as T[number],
  );
}

/** A wallet address, lowercased. Required where it stands; wrap it in v.optional() otherwise. */
export function address(name: string) {
  return v.pipe(
    v.string(),
    v.regex(ADDRESS, `${name} must be an address: 0x followed by 40 hex characters`),
    v.transform((s) => s.toLowerCase()),
  );
}

export const cursorParam = v.optional(
  v.pipe(
    v.string(),
    v.minLength(1, "cursor must not be empty"),
    v.description("Opaque: next_cursor from this endpoint's previous page, unchanged."),
  ),
);

interface ParamIssue {
  type?: string;
  message: string;
  input?: unknown;
  received?: string;
  path?: ReadonlyArray<{ key: unknown }>;
}

/**
 * The validator hook every route uses: the first problem becomes our 400 envelope, in our words
 * for the two cases the schemas cannot word themselves: a missing parameter, and a query
 * parameter given more than once (hono hands those over as an array).
 */
export function invalidParams(result: {
  success: boolean;
  error?: ReadonlyArray<{ message: string }>;
}): void {
  if (result.success) return;
  const issue = result.error?.[0] as ParamIssue | undefined;
  const name = issue?.path?.map((p) => String(p.key)).join(".");
  if (issue && name) {
    if (Array.isArray(issue.input)) throw badRequest(`${name} must be given at most once`);
    if (issue.type === "object" && issue.received === "undefined") {
      throw badRequest(`${name} is required`);
    }
  }
  throw badRequest(issue?.message ?? "invalid parameters");
}
