import * as v from "valibot";

/**
 * Shared pieces of the upstream record schemas: Polymarket's APIs send addresses in mixed case,
 * amounts as numbers or numeric strings, and times in several formats. Every schema's output is
 * normalised for storage (lowercase hex, epoch milliseconds).
 */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;
const TOKEN_ID = /^\d{1,78}$/;

const got = (issue: { received: string }) => ` (got ${issue.received})`;

export const address = v.pipe(
  v.string((i) => `must be an address${got(i)}`),
  v.regex(ADDRESS, (i) => `must be 0x followed by 40 hex digits${got(i)}`),
  v.toLowerCase(),
);

export const hash = v.pipe(
  v.string((i) => `must be a 32-byte hex string${got(i)}`),
  v.regex(HASH, (i) => `must be 0x followed by 64 hex digits${got(i)}`),
  v.toLowerCase(),
);

/** An ERC-1155 outcome token id: a uint256 in decimal. */
export const tokenId = v.pipe(
  v.string((i) => `must be a token id${got(i)}`),
  v.regex(TOKEN_ID, (i) => `must be a decimal token id${got(i)}`),
  // Leading zeros would make one token look like two.
  v.transform((id) => BigInt(id).toString()),
);

export const finite = (what = "a number") =>
  v.pipe(
    v.number((i) => `must be ${what}${got(i)}`),
    v.finite((i) => `must be a finite number${got(i)}`),
  );

export const price = v.pipe(
  finite(),
  v.minValue(0, (i) => `must be between 0 and 1${got(i)}`),
  v.maxValue(1, (i) => `must be between 0 and 1${got(i)}`),
);

export const positive = (what = "a number") =>
  v.pipe(
    finite(what),
    v.gtValue(0, (i) => `must be more than 0${got(i)}`),
  );

/** Unix seconds, as the data API sends them, converted to epoch milliseconds. */
export const unixSeconds = v.pipe(
  v.number((i) => `must be Unix seconds${got(i)}`),
  v.safeInteger((i) => `must be whole Unix seconds${got(i)}`),
  v.minValue(1, (i) => `must be a positive time${got(i)}`),
  // Milliseconds by mistake would land in the year 50,000+.
  v.maxValue(10_000_000_000, (i) => `looks like milliseconds, not Unix seconds${got(i)}`),
  v.transform((seconds) => seconds * 1000),
);

const TIME =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Gamma's times come as ISO-8601 ("2026-07-23T00:02:08.939464Z"), as Postgres text
 * ("2026-07-24 00:00:16+00") or as a bare date ("2026-07-24"); all are UTC when no zone is
 * given. Returns epoch ms, or undefined for anything else.
 */
export function parseUpstreamTime(text: string): number | undefined {
  const match = TIME.exec(text.trim());
  if (!match) return undefined;
  const [, date, time = "00:00", fraction = "", zone = "Z"] = match;
  const seconds = time.length === 5 ? `${time}:00` : time;
  const millis = fraction === "" ? "" : `.${fraction.slice(0, 3).padEnd(3, "0")}`;
  let offset = zone;
  if (zone !== "Z") {
    const digits = zone.slice(1).replace(":", "");
    offset = `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2, 4).padEnd(2, "0")}`;
  }
  const ms = Date.parse(`${date}T${seconds}${millis}${offset}`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Optional upstream time text: absent, null or "" give null; anything unreadable is an issue. */
export const upstreamTime = v.pipe(
  v.nullish(v.string((i) => `must be a date-time text${got(i)}`)),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const text = dataset.value;
    if (text === null || text === undefined || text.trim() === "") return null;
    const ms = parseUpstreamTime(text);
    if (ms === undefined) {
      addIssue({ message: `is not a date-time (got ${JSON.stringify(text)})` });
      return NEVER;
    }
    return ms;
  }),
);

/** One line naming every problem valibot found, each with its field path. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .map((issue) => {
      const path = v.getDotPath(issue);
      if (issue.kind === "schema" && issue.received === "undefined") return `${path}: missing`;
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}

/** A short, safe name for an upstream record in messages: its id-like fields, never all of it. */
export function describeRecord(raw: unknown, fields: readonly string[]): string {
  if (typeof raw !== "object" || raw === null) return JSON.stringify(raw)?.slice(0, 80) ?? "?";
  const record = raw as Record<string, unknown>;
  const parts = fields
    .filter((f) => typeof record[f] === "string" || typeof record[f] === "number")
    .map((f) => `${f} ${String(record[f]).slice(0, 80)}`);
  return parts.length > 0 ? parts.join(", ") : "a record without id fields";
}
