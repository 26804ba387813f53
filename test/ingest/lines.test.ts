import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { parseLine, TradeLine } from "../../src/ingest/lines";

/**
 * Trade lines take a direct path (plainTrade in src/ingest/lines.ts) that must give exactly what
 * the TradeLine schema gives: the same normalised line when valid, a refusal when not. Each case
 * changes one field of a valid trade to a value at or past an edge of one of the schema's checks.
 */
const base = {
  type: "trade",
  tx_hash: `0x${"ab".repeat(32)}`,
  log_index: 3,
  wallet: `0x${"Cd".repeat(20)}`,
  condition_id: `0x${"EF".repeat(32)}`,
  outcome: "YES",
  side: "BUY",
  price: 0.42,
  size: 100.5,
  usd_value: 42.21,
  timestamp: "2026-05-01T12:00:00.000Z",
};

const variants: Record<string, unknown[]> = {
  tx_hash: [`0x${"AB".repeat(32)}`, `0x${"ab".repeat(31)}`, `0X${"ab".repeat(32)}`, 7, null],
  log_index: [0, -0, -1, 1.5, 2 ** 53, 2 ** 53 - 1, "3", null, Number.POSITIVE_INFINITY],
  wallet: [`0x${"ab".repeat(20)}`, `0x${"ab".repeat(21)}`, "0x1234", ` 0x${"ab".repeat(20)}`],
  condition_id: [
    "plain-id",
    " padded ",
    "MixedCase",
    "0xABC",
    "",
    "   ",
    "x".repeat(1000),
    "x".repeat(1001),
    ` ${"x".repeat(1000)} `,
    "0xAB\n",
    5,
  ],
  outcome: ["NO", "yes", "MAYBE", null],
  side: ["SELL", "buy", "HOLD"],
  price: [0, 1, -0, 1.0000001, -0.1, "0.5", null, Number.POSITIVE_INFINITY],
  size: [1e-9, 0, -1, Number.POSITIVE_INFINITY, "1", 1e300],
  usd_value: [undefined, null, 0, -0, -1, Number.POSITIVE_INFINITY, "5", 1e15],
  timestamp: [
    "2026-05-01T12:00:00Z",
    "2026-05-01T12:00:00.1Z",
    "2026-05-01T12:00:00.123456Z",
    "2026-05-01T12:00:00",
    "2026-05-01T12:00:00+02:00",
    "2026-05-01 12:00:00Z",
    "2026-05-01",
    "2026-02-29T00:00:00Z",
    "2028-02-29T00:00:00.000Z",
    "2026-02-30T00:00:00.000Z",
    "2026-04-31T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-01T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T23:60:00Z",
    "2026-01-01T23:59:60Z",
    "2026-01-01T23:59:59.999Z",
    "0099-01-01T00:00:00Z",
    "0999-12-31T23:59:59Z",
    "1000-01-01T00:00:00.000Z",
    "1970-01-01T00:00:00Z",
    "２026-01-01T00:00:00Z",
    "2026-01-01T00:00:00.00ZZ",
    1_780_000_000_000,
    1_780_000_000,
    100_000_000_000,
    99_999_999_999,
    10_000_000_000_000,
    9_999_999_999_999,
    1.5e12 + 0.5,
    -1,
    null,
  ],
};

function bySchema(value: unknown) {
  const result = v.safeParse(TradeLine, value);
  return result.success ? { ok: true, line: result.output } : { ok: false };
}

describe("trade lines", () => {
  const cases = Object.entries(variants).flatMap(([field, values]) =>
    values.map((value) => [field, value] as const),
  );

  it.each(cases)("with %s = %j parse as the schema parses them", (field, value) => {
    const input: Record<string, unknown> = { ...base, [field]: value };
    if (value === undefined) delete input[field];
    const text = JSON.stringify(input);
    const parsed = parseLine(text);
    const expected = bySchema(JSON.parse(text));
    expect(parsed.ok).toBe(expected.ok);
    if (parsed.ok) expect(parsed.line).toStrictEqual(expected.line);
  });

  it("drop fields the format does not define, as the schema does", () => {
    const parsed = parseLine(JSON.stringify({ ...base, note: "x", id: 7 }));
    expect(parsed).toStrictEqual({ ok: true, line: bySchema(base).line });
  });

  it("still name every problem on a refused line", () => {
    const parsed = parseLine(JSON.stringify({ ...base, price: 2, side: "HOLD" }));
    expect(parsed).toEqual({
      ok: false,
      reason: 'side: must be "BUY" or "SELL" (got "HOLD"); price: must be between 0 and 1 (got 2)',
    });
  });
});
