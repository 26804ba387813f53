import * as v from "valibot";

/**
 * The interchange import format (docs/import.md): one JSON object per line, `type` first.
 * Each schema's output is already normalised for storage: addresses and hashes lowercase,
 * timestamps as epoch milliseconds, optional fields null when absent.
 */

export const LINE_TYPES = ["market", "resolution", "trade", "transfer", "wallet", "label"] as const;
export type LineType = (typeof LINE_TYPES)[number];

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
const HEX = /^0x[0-9a-fA-F]+$/;
// A time of day must carry its zone: without one, Date.parse would read it in the importing
// machine's local time and the same file would import differently on two machines.
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/;
/** Below this a number is far more likely Unix seconds (e.g. Polymarket's data API) than ms. */
const MIN_MILLIS = 100_000_000_000; // 1973-03-03
const MAX_MILLIS = 10_000_000_000_000; // 2286-11-20

const got = (issue: { received: string }) => ` (got ${issue.received})`;

const text = (what = "a string") =>
  v.pipe(
    v.string((i) => `must be ${what}${got(i)}`),
    v.trim(),
    v.nonEmpty("must not be empty"),
    v.maxLength(1000, "must be at most 1000 characters"),
  );

const address = v.pipe(
  v.string((i) => `must be an address${got(i)}`),
  v.regex(ADDRESS, (i) => `must be 0x followed by 40 hex digits${got(i)}`),
  v.toLowerCase(),
);

const txHash = v.pipe(
  v.string((i) => `must be a transaction hash${got(i)}`),
  v.regex(TX_HASH, (i) => `must be 0x followed by 64 hex digits${got(i)}`),
  v.toLowerCase(),
);

/** Hex condition ids are matched case-insensitively, like addresses; other ids are kept as given. */
const conditionId = v.pipe(
  text(),
  v.transform((id) => (HEX.test(id) ? id.toLowerCase() : id)),
);

const finite = (what: string) =>
  v.pipe(
    v.number((i) => `must be ${what}${got(i)}`),
    v.finite((i) => `must be a finite number${got(i)}`),
  );

const outcome = v.picklist(["YES", "NO"], (i) => `must be "YES" or "NO"${got(i)}`);

/** ISO-8601 text (with a zone when it has a time of day) or Unix milliseconds, as epoch ms. */
export const timestamp = v.pipe(
  v.union([v.number(), v.string()], (i) => `must be ISO-8601 text or Unix milliseconds${got(i)}`),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const value = dataset.value;
    const ms = typeof value === "number" ? millisFromNumber(value) : millisFromIso(value);
    if (typeof ms === "string") {
      addIssue({ message: `${ms} (got ${JSON.stringify(value)})` });
      return NEVER;
    }
    return ms;
  }),
);

function millisFromNumber(value: number): number | string {
  if (!Number.isInteger(value)) return "must be whole Unix milliseconds";
  if (value >= 0 && value < MIN_MILLIS) return "looks like Unix seconds; give Unix milliseconds";
  if (value < 0 || value >= MAX_MILLIS) return "is not a plausible time in Unix milliseconds";
  return value;
}

function millisFromIso(value: string): number | string {
  const match = ISO.exec(value);
  if (!match) return "must be ISO-8601 (e.g. 2026-05-01T12:00:00Z) or Unix milliseconds";
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // Date.parse rolls 2026-02-30 over into March; a calendar check refuses it instead.
  const calendar = new Date(Date.UTC(year, month - 1, day));
  const ms = Date.parse(value);
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day || Number.isNaN(ms)) {
    return "is not a valid date and time";
  }
  return ms;
}

const optional = <T extends v.GenericSchema>(schema: T) => v.nullish(schema, null);

export const MarketLine = v.pipe(
  v.object({
    type: v.literal("market"),
    slug: v.pipe(text(), v.regex(/^\S+$/, "must not contain spaces")),
    title: text(),
    category: text(),
    condition_id: conditionId,
    end_date: timestamp,
    created_at: timestamp,
    resolved_outcome: optional(outcome),
    resolved_at: optional(timestamp),
  }),
  v.check(
    (m) => (m.resolved_outcome === null) === (m.resolved_at === null),
    "resolved_outcome and resolved_at must be given together",
  ),
);

export const ResolutionLine = v.object({
  type: v.literal("resolution"),
  condition_id: conditionId,
  outcome,
  resolved_at: timestamp,
});

export const TradeLine = v.object({
  type: v.literal("trade"),
  tx_hash: txHash,
  log_index: v.pipe(
    v.number((i) => `must be a number${got(i)}`),
    v.safeInteger((i) => `must be a whole number${got(i)}`),
    v.minValue(0, (i) => `must be 0 or more${got(i)}`),
  ),
  wallet: address,
  condition_id: conditionId,
  outcome,
  side: v.picklist(["BUY", "SELL"], (i) => `must be "BUY" or "SELL"${got(i)}`),
  price: v.pipe(
    finite("a number"),
    v.minValue(0, (i) => `must be between 0 and 1${got(i)}`),
    v.maxValue(1, (i) => `must be between 0 and 1${got(i)}`),
  ),
  size: v.pipe(
    finite("a number of shares"),
    v.gtValue(0, (i) => `must be more than 0${got(i)}`),
  ),
  usd_value: optional(
    v.pipe(
      finite("a number"),
      v.minValue(0, (i) => `must be 0 or more${got(i)}`),
    ),
  ),
  timestamp,
});

export const TransferLine = v.object({
  type: v.literal("transfer"),
  tx_hash: txHash,
  log_index: TradeLine.entries.log_index,
  from: address,
  to: address,
  token: v.picklist(["USDC", "POL"], (i) => `must be "USDC" or "POL"${got(i)}`),
  amount: v.pipe(
    finite("a number"),
    v.gtValue(0, (i) => `must be more than 0${got(i)}`),
  ),
  timestamp,
});

export const WalletLine = v.object({
  type: v.literal("wallet"),
  address,
  platform_name: optional(text()),
  platform_pnl: optional(finite("a number")),
  platform_pnl_as_of: optional(timestamp),
  created_at: optional(timestamp),
});

export const LabelLine = v.object({
  type: v.literal("label"),
  address,
  kind: v.picklist(
    ["exchange", "platform", "proxy_factory"],
    (i) => `must be "exchange", "platform" or "proxy_factory"${got(i)}`,
  ),
  name: text(),
});

const SCHEMAS = {
  market: MarketLine,
  resolution: ResolutionLine,
  trade: TradeLine,
  transfer: TransferLine,
  wallet: WalletLine,
  label: LabelLine,
} as const;

export type MarketLine = v.InferOutput<typeof MarketLine>;
export type ResolutionLine = v.InferOutput<typeof ResolutionLine>;
export type TradeLine = v.InferOutput<typeof TradeLine>;
export type TransferLine = v.InferOutput<typeof TransferLine>;
export type WalletLine = v.InferOutput<typeof WalletLine>;
export type LabelLine = v.InferOutput<typeof LabelLine>;
export type Line = MarketLine | ResolutionLine | TradeLine | TransferLine | WalletLine | LabelLine;

export type ParsedLine = { ok: true; line: Line } | { ok: false; reason: string };

/** Parses and validates one line of text; the reason names every problem found on the line. */
export function parseLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not valid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, reason: "must be a JSON object" };
  }
  const type = (value as { type?: unknown }).type;
  if (type === undefined) return { ok: false, reason: `missing "type" (${LINE_TYPES.join(", ")})` };
  const schema = typeof type === "string" ? SCHEMAS[type as LineType] : undefined;
  if (schema === undefined || !Object.hasOwn(SCHEMAS, type as string)) {
    return {
      ok: false,
      reason: `unknown type ${JSON.stringify(type)} (expected one of ${LINE_TYPES.join(", ")})`,
    };
  }
  if (type === "trade") {
    const trade = plainTrade(value as Record<string, unknown>);
    if (trade !== undefined) return { ok: true, line: trade };
  }
  const result = v.safeParse(schema as v.GenericSchema<unknown, Line>, value);
  if (result.success) return { ok: true, line: result.output };
  return { ok: false, reason: describeIssues(result.issues) };
}

function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .map((issue) => {
      const path = v.getDotPath(issue);
      if (issue.kind === "schema" && issue.type === "object" && issue.received === "undefined") {
        return `${path}: missing`;
      }
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}

/**
 * A trade line as TradeLine would give it, or undefined for anything TradeLine has to look at
 * (which then parses it, and words every problem). Trades are nearly every line of a bulk file
 * and valibot's general machinery was a tenth of an import's time, so the common shape takes
 * this direct path: each check here is the schema's own, only written out. A value it is not
 * sure of (a condition id with spaces around it, a date outside 1000–9999, an hour past 23)
 * goes to the schema, never to a guess. test/ingest/lines.test.ts compares both paths.
 */
function plainTrade(value: Record<string, unknown>): TradeLine | undefined {
  const { tx_hash, log_index, wallet, condition_id, outcome, side, price, size, usd_value } = value;
  if (typeof tx_hash !== "string" || !TX_HASH.test(tx_hash)) return undefined;
  if (typeof log_index !== "number" || !Number.isSafeInteger(log_index) || log_index < 0) {
    return undefined;
  }
  if (typeof wallet !== "string" || !ADDRESS.test(wallet)) return undefined;
  if (typeof condition_id !== "string" || condition_id.length === 0) return undefined;
  if (condition_id.length > 1000 || condition_id !== condition_id.trim()) return undefined;
  if (outcome !== "YES" && outcome !== "NO") return undefined;
  if (side !== "BUY" && side !== "SELL") return undefined;
  if (typeof price !== "number" || !(price >= 0 && price <= 1)) return undefined;
  if (typeof size !== "number" || !Number.isFinite(size) || !(size > 0)) return undefined;
  let usd: number | null = null;
  if (usd_value !== undefined && usd_value !== null) {
    if (typeof usd_value !== "number" || !Number.isFinite(usd_value) || !(usd_value >= 0)) {
      return undefined;
    }
    usd = usd_value;
  }
  const ts = plainMillis(value.timestamp);
  if (ts === undefined) return undefined;
  return {
    type: "trade",
    tx_hash: tx_hash.toLowerCase(),
    log_index,
    wallet: wallet.toLowerCase(),
    condition_id: HEX.test(condition_id) ? condition_id.toLowerCase() : condition_id,
    outcome,
    side,
    price,
    size,
    usd_value: usd,
    timestamp: ts,
  };
}

/** Digits of a fixed-width field, or -1. */
function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * Epoch ms of a timestamp in the two shapes files nearly always use (Unix milliseconds, and
 * `YYYY-MM-DDTHH:MM:SS[.sss]Z` as toISOString writes it), as `timestamp` reads them; undefined
 * for every other shape and every value timestamp would refuse or has to look at.
 */
function plainMillis(value: unknown): number | undefined {
  if (typeof value === "number") {
    return Number.isInteger(value) && value >= MIN_MILLIS && value < MAX_MILLIS ? value : undefined;
  }
  if (typeof value !== "string") return undefined;
  const n = value.length;
  if (n !== 20 && n !== 24) return undefined;
  if (value[4] !== "-" || value[7] !== "-" || value[10] !== "T") return undefined;
  if (value[13] !== ":" || value[16] !== ":" || value[n - 1] !== "Z") return undefined;
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 2);
  const day = digits(value, 8, 2);
  const hour = digits(value, 11, 2);
  const minute = digits(value, 14, 2);
  const second = digits(value, 17, 2);
  const ms = n === 24 ? (value[19] === "." ? digits(value, 20, 3) : -1) : 0;
  if (year < 1000 || month < 1 || month > 12 || day < 1 || ms < 0) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) {
    return undefined;
  }
  const at = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Day 31 of a 30-day month rolls over: the schema refuses it, so let it say so.
  return new Date(at).getUTCDate() === day ? at : undefined;
}
