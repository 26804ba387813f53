import * as v from "valibot";
import { badRequest } from "./errors";

/**
 * Query-parameter schemas. Query strings arrive as text, so each parses its own text strictly;
 * anything out of range or of the wrong type is a 400 naming the parameter, never clamped.
 */
export function integer(name: string, min: number, max: number, fallback?: number) {
  const rule = `${name} must be an integer from ${min} to ${max}`;
  return v.pipe(
    v.optional(v.string(), fallback === undefined ? undefined : String(fallback)),
    v.check((s) => s === undefined || /^-?\d+$/.test(s), rule),
    v.transform((s) => (s === undefined ? undefined : Number(s))),
    v.check((n) => n === undefined || (n >= min && n <= max), rule),
  );
}

export function requiredInteger(name: string, min: number, max: number) {
  const rule = `${name} must be an integer from ${min} to ${max}`;
  // A missing key never reaches an inner schema's message: default it, then check.
  return v.pipe(
    v.optional(v.string(), ""),
    v.check((s) => s !== "", `${name} is required`),
    v.regex(/^-?\d+$/, rule),
    v.transform(Number),
    v.check((n) => n >= min && n <= max, rule),
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
    v.check((s) => s === undefined || /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(s), rule),
    v.transform((s) => (s === undefined ? undefined : Number(s))),
    v.check((n) => n === undefined || (Number.isFinite(n) && n >= min && n <= max), rule),
  );
}

export function boolean(name: string, fallback: boolean) {
  return v.pipe(
    v.optional(v.string(), String(fallback)),
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

export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function address(name: string) {
  return v.pipe(
    v.optional(v.string(), ""),
    v.check((s) => s !== "", `${name} is required`),
    v.regex(ADDRESS, `${name} must be an address: 0x followed by 40 hex characters`),
    v.transform((s) => s.toLowerCase()),
  );
}

export const cursorParam = v.optional(
  v.pipe(v.string(), v.minLength(1, "cursor must not be empty")),
);

/** The validator hook every route uses: the first problem becomes our 400 envelope. */
export function invalidParams(result: {
  success: boolean;
  error?: ReadonlyArray<{ message: string }>;
}): void {
  if (result.success) return;
  const first = result.error?.[0]?.message ?? "invalid parameters";
  throw badRequest(first);
}
