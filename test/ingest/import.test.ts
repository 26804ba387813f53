import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ImportOptions,
  type ImportResult,
  importJsonl,
  MAX_REPORTED_ERRORS,
} from "../../src/ingest/import";
import type { Trade } from "../../src/ingest/ingest";
import { fileSource } from "../../src/ingest/sources";
import { createTestApp, type TestApp } from "../helpers/app";
import {
  address,
  conditionId,
  label,
  market,
  resolution,
  trade,
  transfer,
  txHash,
  wallet,
  writeJsonl,
} from "./builders";

let t: TestApp;
beforeEach(() => {
  t = createTestApp();
});
afterEach(() => t.close());

const TABLES = ["markets", "trades", "transfers", "wallets", "labels"] as const;

function run(path: string, options: ImportOptions = {}, hooks = {}): Promise<ImportResult> {
  return importJsonl({ db: t.db, clock: t.clock, hooks }, fileSource(path), options);
}

async function imported(path: string, options: ImportOptions = {}) {
  const result = await run(path, options);
  if (!result.ok) throw new Error(`${result.reason}: ${JSON.stringify(result.errors)}`);
  return result.value;
}

async function refused(path: string) {
  const result = await run(path);
  if (result.ok) throw new Error("expected the file to be refused");
  return result;
}

/** Every stored row of the market-data tables, for before/after comparisons. */
function snapshot() {
  return Object.fromEntries(
    TABLES.map((table) => [table, t.db.reader.prepare(`SELECT * FROM ${table} ORDER BY 1`).all()]),
  );
}

const count = (table: string) =>
  t.db.reader.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;

describe("importing a valid file", () => {
  it("stores every line type, normalised for storage", async () => {
    const shouting = `0x${"AB".repeat(20)}`;
    const path = writeJsonl(t.dir, "world.jsonl", [
      market(1, { condition_id: conditionId(1).toUpperCase().replace("0X", "0x") }),
      market(2, { resolved_outcome: "NO", resolved_at: "2026-11-30T00:00:00Z" }),
      wallet(1, { address: shouting }),
      label(1, { kind: "proxy_factory" }),
      trade(1, { wallet: shouting, tx_hash: txHash(1).toUpperCase().replace("0X", "0x") }),
      trade(2, { usd_value: 30, outcome: "NO", side: "SELL" }),
      transfer(1, { token: "POL" }),
      resolution(1, { outcome: "YES" }),
    ]);
    const summary = await imported(path);

    expect(summary.rows).toBe(8);
    expect(summary.rejected).toBe(0);
    expect(summary.counts.trade).toEqual({ new: 2, updated: 0, present: 0 });
    expect(summary.counts.market).toEqual({ new: 2, updated: 0, present: 0 });
    expect(summary.counts.resolution).toEqual({ new: 1, updated: 0, present: 0 });

    const m1 = t.db.reader.prepare("SELECT * FROM markets WHERE slug = 'market-1'").get();
    expect(m1).toMatchObject({
      condition_id: conditionId(1),
      category: "politics",
      end_date: Date.parse("2026-12-31T00:00:00Z"),
      created_at: 1_760_000_000_000,
      resolved_outcome: "YES",
      resolved_at: Date.parse("2026-12-31T12:00:00Z"),
    });
    const trades = t.db.reader.prepare("SELECT * FROM trades ORDER BY id").all();
    expect(trades).toEqual([
      {
        id: 1,
        tx_hash: txHash(1),
        log_index: 0,
        wallet: shouting.toLowerCase(),
        market_id: 1,
        outcome: "YES",
        side: "BUY",
        price: 0.25,
        size: 100,
        usd_value: 25, // price × size when the line gives none
        ts: 1_780_000_001_000,
      },
      expect.objectContaining({ outcome: "NO", side: "SELL", usd_value: 30 }),
    ]);
    expect(t.db.reader.prepare("SELECT * FROM transfers").get()).toMatchObject({
      from_address: address(900),
      to_address: address(1),
      token: "POL",
      amount: 500,
    });
    expect(t.db.reader.prepare("SELECT * FROM wallets").get()).toEqual({
      address: shouting.toLowerCase(),
      platform_name: "trader-1",
      platform_pnl: 1234.5,
      platform_pnl_as_of: Date.parse("2026-10-01T00:00:00Z"),
      created_at: null,
    });
    expect(t.db.reader.prepare("SELECT * FROM labels").get()).toEqual({
      address: address(901),
      kind: "proxy_factory",
      name: "Exchange 1",
    });
    expect(count("import_seen")).toBe(0);
  });

  it("accepts ISO-8601 (Z, offsets, dates) and Unix milliseconds mixed in one file", async () => {
    const path = writeJsonl(t.dir, "times.jsonl", [
      market(1, { end_date: "2026-12-31", created_at: "2026-01-01T00:00:00.123+02:00" }),
      trade(1, { timestamp: "2026-05-01T12:00:00Z" }),
      trade(2, { timestamp: "2026-05-01T12:00:00.5Z" }),
      trade(3, { timestamp: "2026-05-01T14:00:00+0200" }),
      trade(4, { timestamp: 1_777_636_800_000 }),
    ]);
    await imported(path);
    const m = t.db.reader.prepare("SELECT end_date, created_at FROM markets").get();
    expect(m).toEqual({
      end_date: Date.UTC(2026, 11, 31),
      created_at: Date.UTC(2025, 11, 31, 22, 0, 0, 123),
    });
    const ts = t.db.reader.prepare("SELECT ts FROM trades ORDER BY id").pluck().all();
    const noon = Date.UTC(2026, 4, 1, 12);
    expect(ts).toEqual([noon, noon + 500, noon, 1_777_636_800_000]);
  });

  it("accepts a trade or resolution whose market is defined further down the file", async () => {
    const path = writeJsonl(t.dir, "late-market.jsonl", [
      trade(1, { condition_id: conditionId(5) }),
      resolution(5),
      trade(2, { condition_id: conditionId(5) }),
      market(5),
    ]);
    const summary = await imported(path);
    expect(summary.counts.trade.new).toBe(2);
    expect(summary.counts.resolution.new).toBe(1);
    expect(t.db.reader.prepare("SELECT resolved_outcome FROM markets").pluck().get()).toBe("YES");
  });

  it("skips blank lines but counts them in line numbers", async () => {
    const path = writeJsonl(t.dir, "blank.jsonl", [market(1), "", "   ", trade(1, { price: 7 })]);
    const result = await refused(path);
    expect(result.errors).toEqual([{ line: 4, reason: expect.stringContaining("price") }]);
  });
});

describe("refusing a file", () => {
  const cases: [string, (Record<string, unknown> | string)[], number, RegExp][] = [
    ["bad JSON", ['{"type":"trade",'], 2, /not valid JSON/],
    ["a JSON value that is not an object", ["[1,2]"], 2, /must be a JSON object/],
    ["a missing type", [{ slug: "x" }], 2, /missing "type"/],
    ["an unknown type", [{ type: "order" }], 2, /unknown type "order"/],
    ["a missing field", [trade(1, { price: undefined })], 2, /^price: missing$/],
    [
      "a wrong type",
      [trade(1, { size: "10" })],
      2,
      /^size: must be a number of shares \(got "10"\)/,
    ],
    [
      "a price above 1",
      [trade(1, { price: 1.01 })],
      2,
      /^price: must be between 0 and 1 \(got 1\.01\)/,
    ],
    ["a negative price", [trade(1, { price: -0.1 })], 2, /^price: must be between 0 and 1/],
    ["a size of 0", [trade(1, { size: 0 })], 2, /^size: must be more than 0/],
    [
      "a bad address",
      [trade(1, { wallet: "0x1234" })],
      2,
      /^wallet: must be 0x followed by 40 hex/,
    ],
    [
      "a bad tx hash",
      [trade(1, { tx_hash: "0xzz" })],
      2,
      /^tx_hash: must be 0x followed by 64 hex/,
    ],
    ["a bad outcome", [trade(1, { outcome: "yes" })], 2, /^outcome: must be "YES" or "NO"/],
    ["a bad side", [trade(1, { side: "HOLD" })], 2, /^side: must be "BUY" or "SELL"/],
    ["a negative log index", [trade(1, { log_index: -1 })], 2, /^log_index: must be 0 or more/],
    ["Unix seconds", [trade(1, { timestamp: 1_780_000_000 })], 2, /looks like Unix seconds/],
    ["a time without zone", [trade(1, { timestamp: "2026-05-01T12:00:00" })], 2, /ISO-8601/],
    [
      "an impossible date",
      [trade(1, { timestamp: "2026-02-30T00:00:00Z" })],
      2,
      /not a valid date/,
    ],
    ["a bad token", [transfer(1, { token: "ETH" })], 2, /^token: must be "USDC" or "POL"/],
    ["a bad label kind", [label(1, { kind: "bank" })], 2, /^kind: must be "exchange"/],
    ["a half-given resolution", [market(2, { resolved_outcome: "YES" })], 2, /given together/],
    [
      "an unknown condition_id",
      [trade(1, { condition_id: conditionId(9) })],
      2,
      /unknown condition_id 0x/,
    ],
    ["a resolution of an unknown market", [resolution(9)], 2, /unknown condition_id/],
    [
      "a repeated trade key",
      [trade(1), trade(1, { price: 0.3 })],
      3,
      /duplicate trade: .* also on line 2$/,
    ],
    [
      "a repeated transfer key",
      [transfer(1), transfer(1)],
      3,
      /duplicate transfer: .* also on line 2$/,
    ],
    ["a repeated market", [market(1)], 2, /duplicate market .*: also on line 1$/],
    [
      "a repeated slug",
      [market(2, { slug: "market-1" })],
      2,
      /duplicate market slug "market-1": also on line 1/,
    ],
    ["a repeated wallet", [wallet(1), wallet(1)], 3, /duplicate wallet .*: also on line 2$/],
    [
      "a repeated label",
      [label(1), label(1, { name: "x" })],
      3,
      /duplicate label .*: also on line 2$/,
    ],
    [
      "a repeated resolution",
      [resolution(1), resolution(1)],
      3,
      /duplicate resolution .*: also on line 2$/,
    ],
  ];

  it.each(cases)(
    "with %s, naming the line and leaving the database as it was",
    async (_name, lines, badLine, reason) => {
      await imported(
        writeJsonl(t.dir, "before.jsonl", [market(7), trade(70, { condition_id: conditionId(7) })]),
      );
      const before = snapshot();
      const result = await refused(writeJsonl(t.dir, "bad.jsonl", [market(1), ...lines]));
      expect(result.errorCount).toBe(1);
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]!.line).toBe(badLine);
      expect(result.errors[0]!.reason).toMatch(reason);
      expect(result.reason).toBe(
        `${t.dir}/bad.jsonl: refused, 1 invalid line; nothing was imported from it`,
      );
      expect(snapshot()).toEqual(before);
      expect(count("import_seen")).toBe(0);
    },
  );

  it("reports every bad line, not only the first", async () => {
    const path = writeJsonl(t.dir, "many.jsonl", [
      market(1),
      trade(1, { price: 2 }),
      trade(2),
      "nope",
      trade(3, { wallet: "x", size: -1 }),
    ]);
    const result = await refused(path);
    expect(result.errorCount).toBe(3);
    expect(result.errors.map((e) => e.line)).toEqual([2, 4, 5]);
    expect(result.errors[2]!.reason).toMatch(/^wallet: .*; size: must be more than 0/);
    expect(count("trades")).toBe(0);
  });

  it("checks foreign keys again after a file, imported or refused", async () => {
    await imported(writeJsonl(t.dir, "good.jsonl", [market(1), trade(1)]));
    expect(t.db.writer.pragma("foreign_keys", { simple: true })).toBe(1);
    await refused(writeJsonl(t.dir, "bad.jsonl", [market(2), trade(2, { price: 2 })]));
    expect(t.db.writer.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(t.db.writer.pragma("foreign_key_check")).toEqual([]);
  });

  it("caps the reported list but counts every bad line", async () => {
    const bad = Array.from({ length: MAX_REPORTED_ERRORS + 250 }, (_, i) => trade(i, { price: 9 }));
    const result = await refused(writeJsonl(t.dir, "junk.jsonl", [market(1), ...bad]));
    expect(result.errorCount).toBe(MAX_REPORTED_ERRORS + 250);
    expect(result.errors).toHaveLength(MAX_REPORTED_ERRORS);
    expect(result.reason).toContain(`refused, ${MAX_REPORTED_ERRORS + 250} invalid lines`);
  });

  it("refuses an empty file, and one with only blank lines, with a clear reason", async () => {
    for (const lines of [[], ["", "  "]]) {
      const result = await refused(writeJsonl(t.dir, "empty.jsonl", lines));
      expect(result.reason).toBe(`${t.dir}/empty.jsonl: empty file: no lines to import`);
      expect(result.errors).toEqual([]);
    }
  });

  it("refuses a market whose slug another stored market already has", async () => {
    await imported(writeJsonl(t.dir, "one.jsonl", [market(1)]));
    const result = await refused(writeJsonl(t.dir, "two.jsonl", [market(2, { slug: "market-1" })]));
    expect(result.errors).toEqual([
      { line: 1, reason: 'slug "market-1" already belongs to another market' },
    ]);
  });

  it("refuses an overlong line without holding it whole", async () => {
    const path = writeJsonl(t.dir, "long.jsonl", [
      market(1),
      trade(1, { title: "x".repeat(1_100_000) }),
    ]);
    const result = await refused(path);
    expect(result.errors).toEqual([{ line: 2, reason: expect.stringMatching(/longer than/) }]);
  });
});

describe("importing again", () => {
  it("changes nothing and reports every row as already present", async () => {
    const lines = [
      market(1),
      market(2, { resolved_outcome: "NO", resolved_at: 1_790_000_000_000 }),
      wallet(1),
      label(1),
      ...Array.from({ length: 5000 }, (_, i) => trade(i)),
      transfer(1),
      resolution(1),
    ];
    const path = writeJsonl(t.dir, "world.jsonl", lines);
    const first = await imported(path);
    expect(first.counts.trade.new).toBe(5000);
    const after = snapshot();
    t.db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets");

    const second = await imported(path);
    expect(second.counts).toEqual({
      market: { new: 0, updated: 0, present: 2 },
      resolution: { new: 0, updated: 0, present: 1 },
      trade: { new: 0, updated: 0, present: 5000 },
      transfer: { new: 0, updated: 0, present: 1 },
      wallet: { new: 0, updated: 0, present: 1 },
      label: { new: 0, updated: 0, present: 1 },
    });
    expect(snapshot()).toEqual(after);
    expect(count("dirty_wallets") + count("dirty_markets")).toBe(0);
  });

  it("updates changed facts and reports them as updated", async () => {
    await imported(writeJsonl(t.dir, "a.jsonl", [market(1), wallet(1), label(1)]));
    const summary = await imported(
      writeJsonl(t.dir, "b.jsonl", [
        market(1, { title: "Renamed" }),
        wallet(1, { platform_pnl: -5 }),
        label(1, { kind: "platform" }),
      ]),
    );
    expect(summary.counts.market).toEqual({ new: 0, updated: 1, present: 0 });
    expect(summary.counts.wallet).toEqual({ new: 0, updated: 1, present: 0 });
    expect(summary.counts.label).toEqual({ new: 0, updated: 1, present: 0 });
    expect(t.db.reader.prepare("SELECT title FROM markets").pluck().get()).toBe("Renamed");
    expect(t.db.reader.prepare("SELECT platform_pnl FROM wallets").pluck().get()).toBe(-5);
  });
});

describe("--skip-invalid", () => {
  it("imports the valid lines and copies the invalid ones, verbatim, to FILE.rejects.jsonl", async () => {
    const badJson = '{"type":"trade",';
    const badPrice = JSON.stringify(trade(2, { price: 3 }));
    const path = writeJsonl(t.dir, "mixed.jsonl", [
      market(1),
      trade(1),
      badJson,
      badPrice,
      trade(3),
      trade(1),
    ]);
    const summary = await imported(path, { skipInvalid: true });
    expect(summary.counts.trade.new).toBe(2);
    expect(summary.rejected).toBe(3);
    expect(summary.errors.map((e) => e.line)).toEqual([3, 4, 6]);
    expect(summary.rejectsPath).toBe(`${path}.rejects.jsonl`);
    const duplicate = JSON.stringify(trade(1));
    expect(readFileSync(`${path}.rejects.jsonl`, "utf8")).toBe(
      `${badJson}\n${badPrice}\n${duplicate}\n`,
    );
    expect(count("trades")).toBe(2);
  });

  it("writes no rejects file when every line is valid", async () => {
    const path = writeJsonl(t.dir, "clean.jsonl", [market(1), trade(1)]);
    const summary = await imported(path, { skipInvalid: true });
    expect(summary.rejectsPath).toBeNull();
    expect(existsSync(`${path}.rejects.jsonl`)).toBe(false);
  });

  it("writes no rejects file for a refused file", async () => {
    const path = writeJsonl(t.dir, "bad.jsonl", [market(1), trade(1, { price: 3 })]);
    await refused(path);
    expect(existsSync(`${path}.rejects.jsonl`)).toBe(false);
  });
});

describe("the onNewTrades hook and dirty marks", () => {
  it("receives exactly the new trades, once, with their stored ids", async () => {
    const seen: Trade[] = [];
    const hooks = { onNewTrades: (trades: readonly Trade[]) => seen.push(...trades) };
    await imported(writeJsonl(t.dir, "old.jsonl", [market(1), trade(1), trade(2)]));
    // 9000 trades span several ingest batches; 2 of them are already stored.
    const path = writeJsonl(t.dir, "new.jsonl", [
      market(1),
      ...Array.from({ length: 9000 }, (_, i) => trade(i + 1)),
    ]);
    const first = await run(path, {}, hooks);
    expect(first.ok).toBe(true);
    expect(seen).toHaveLength(8998);
    const stored = t.db.reader.prepare("SELECT * FROM trades WHERE id > 2 ORDER BY id").all();
    expect(seen).toEqual(stored);

    seen.length = 0;
    await run(path, {}, hooks);
    expect(seen).toEqual([]);
  });

  it("rolls back what the hook wrote when the file is refused, and stops calling it", async () => {
    const seen: string[] = [];
    const hooks = {
      onNewTrades: (trades: readonly Trade[]) => {
        seen.push(...trades.map((tr) => tr.tx_hash));
        t.db.writer
          .prepare("INSERT INTO ingest_state (key, value, updated_at) VALUES (?, 'x', 0)")
          .run(`hook-${trades[0]!.id}`);
      },
    };
    // Enough trades before the bad line for at least one batch to reach the hook.
    const before = Array.from({ length: 5000 }, (_, i) => trade(i));
    const after = Array.from({ length: 5000 }, (_, i) => trade(10_000 + i));
    const path = writeJsonl(t.dir, "late-error.jsonl", [
      market(1),
      ...before,
      trade(99_999, { price: 5 }),
      ...after,
    ]);
    const result = await run(path, {}, hooks);
    expect(result.ok).toBe(false);
    expect(seen.length).toBeGreaterThan(0);
    // Only trades read before the bad line: once a file is refused, the hook keeps quiet.
    const early = new Set(before.map((tr) => tr.tx_hash));
    expect(seen.every((hash) => early.has(hash))).toBe(true);
    expect(count("ingest_state")).toBe(0);
    expect(count("trades")).toBe(0);
  });

  it("marks new trades' wallets and markets dirty, and a resolved market as changed", async () => {
    await imported(
      writeJsonl(t.dir, "trades.jsonl", [
        market(1),
        market(2),
        trade(1, { wallet: address(1) }),
        trade(2, { wallet: address(2) }),
        trade(3, { wallet: address(3), condition_id: conditionId(2) }),
      ]),
    );
    const dirty = () => ({
      wallets: t.db.reader.prepare("SELECT address FROM dirty_wallets ORDER BY 1").pluck().all(),
      markets: t.db.reader
        .prepare("SELECT market_id, changed FROM dirty_markets ORDER BY 1")
        .raw()
        .all(),
    });
    // New markets count as changed; trades alone do not change a market.
    expect(dirty()).toEqual({
      wallets: [address(1), address(2), address(3)],
      markets: [
        [1, 1],
        [2, 1],
      ],
    });

    t.db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets");
    await imported(writeJsonl(t.dir, "trades2.jsonl", [trade(4, { wallet: address(4) })]));
    expect(dirty()).toEqual({ wallets: [address(4)], markets: [[1, 0]] });
    // A resolution changes every bet in the market: the refresh recomputes its holders.
    await imported(writeJsonl(t.dir, "resolve.jsonl", [resolution(1)]));
    expect(dirty()).toEqual({ wallets: [address(4)], markets: [[1, 1]] });
  });
});
