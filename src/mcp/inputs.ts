import * as z from "zod";
import { ADDRESS } from "../domain";

/**
 * Argument schemas for the tools. They hold the same ranges as the REST query parameters
 * (src/http/params.ts and the route files) and word their refusals the same way, so an agent
 * reads "limit must be an integer from 1 to 100" whichever door it came in by. Unlike query
 * strings, tool arguments arrive typed: a number is a JSON number, a flag a JSON boolean.
 */

/** The message for a value of the wrong type, or for a required one left out. */
const typeError = (name: string, rule: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? `${name} is required` : rule;

export function integer(name: string, min: number, max: number, description: string) {
  const rule = `${name} must be an integer from ${min} to ${max}`;
  return z
    .int({ error: typeError(name, rule) })
    .min(min, rule)
    .max(max, rule)
    .describe(description);
}

export function decimal(name: string, min: number, max: number, description: string) {
  const rule =
    max === Number.POSITIVE_INFINITY
      ? `${name} must be a number of at least ${min}`
      : `${name} must be a number from ${min} to ${max}`;
  const schema = z.number({ error: typeError(name, rule) }).min(min, rule);
  return (max === Number.POSITIVE_INFINITY ? schema : schema.max(max, rule)).describe(description);
}

export function text(name: string, maxLength: number, description: string) {
  return z
    .string({ error: typeError(name, `${name} must be a string`) })
    .min(1, `${name} must not be empty`)
    .max(maxLength, `${name} must be at most ${maxLength} characters`)
    .describe(description);
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  name: string,
  values: T,
  description: string,
) {
  const rule = `${name} must be one of ${values.join(", ")}`;
  return z.enum(values, { error: typeError(name, rule) }).describe(description);
}

export function address(name: string, description: string) {
  return z
    .string({ error: typeError(name, `${name} must be a string`) })
    .regex(ADDRESS, `${name} must be an address: 0x followed by 40 hex characters`)
    .transform((s) => s.toLowerCase())
    .describe(description);
}

export const slug = text(
  "slug",
  300,
  "The market's slug, e.g. from get_trending_markets or a Polymarket URL (polymarket.com/event/<slug>).",
);

export const cursor = z
  .string({ error: "cursor must be a string" })
  .min(1, "cursor must not be empty")
  .describe(
    "next_cursor from this tool's previous answer, unchanged, to get the next page; leave out for the first page.",
  );

export const periodHours = integer(
  "period_hours",
  1,
  168,
  "Window length in hours (1 to 168): the period_hours whole clock hours before the current hour plus the current hour so far.",
).default(24);

export const marketCategory = text(
  "category",
  64,
  "Only markets of this category, e.g. politics, crypto, sports, culture, economics, breaking-news.",
);

/** ISO-8601 date-time or Unix milliseconds, as the REST `start` and `end` parameters take. */
export function instant(name: string, description: string) {
  const rule = `${name} must be an ISO-8601 date-time or Unix milliseconds`;
  return z
    .union([z.int().min(0), z.string()], { error: typeError(name, rule) })
    .transform((value, ctx) => {
      const ms = typeof value === "number" ? value : parseInstant(value);
      if (!Number.isFinite(ms)) {
        ctx.addIssue({ code: "custom", message: rule });
        return z.NEVER;
      }
      return ms;
    })
    .describe(description);
}

function parseInstant(text: string): number {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return Date.parse(text);
  return Number.NaN;
}
