import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { createTestApp, type TestApp } from "../helpers/app";

/**
 * The compact fill store (sql/0010): what goes in through the ingest path comes back from the
 * trades view exactly, whichever encoding each amount took, and (tx_hash, log_index) stays
 * unique although its index keys on the hash's first 8 bytes only.
 */
let t: TestApp;
let marketId: number;

beforeEach(() => {
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  marketId = t.db.writer.transaction(() => {
    const r = ingest.upsertMarket({
      slug: "m",
      title: "M?",
      category: "crypto",
      condition_id: `0x${"c".repeat(64)}`,
      end_date: null,
      created_at: null,
      resolved_outcome: null,
      resolved_at: null,
    });
    if (!r.ok) throw new Error(r.reason);
    return r.id;
  })();
});
afterEach(() => t.close());

const fill = (over: Partial<NewTrade>): NewTrade => ({
  tx_hash: `0x${"a".repeat(64)}`,
  log_index: 0,
  wallet: `0x${"1".repeat(40)}`,
  market_id: marketId,
  outcome: "YES",
  side: "BUY",
  price: 0.5,
  size: 10,
  usd_value: 5,
  ts: 1_700_000_000_123,
  ...over,
});

describe("the compact fill store", () => {
  it("gives back every value exactly, in millionths where exact and as REAL otherwise", () => {
    const rows = [
      fill({}),
      fill({ log_index: 1, price: 0.123456789, size: 1e12, usd_value: 123456789.5, side: "SELL" }),
      fill({ log_index: 2, price: 1 / 3, size: 0.000001, usd_value: 0, outcome: "NO" }),
      fill({
        log_index: 3,
        price: 1,
        size: 12345.67,
        usd_value: 12345.67,
        outcome: "NO",
        side: "SELL",
      }),
    ];
    const ingest = createIngest(t.db, t.clock);
    const inserted = t.db.writer.transaction(() => ingest.insertTrades(rows))();
    expect(inserted).toHaveLength(4);
    const stored = t.db.reader
      .prepare(
        "SELECT tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts FROM trades ORDER BY id",
      )
      .all();
    expect(stored).toEqual(rows);
    const types = t.db.reader
      .prepare(
        "SELECT typeof(price) || ',' || typeof(size) || ',' || typeof(usd_value) FROM fills ORDER BY id",
      )
      .pluck()
      .all();
    expect(types).toEqual([
      "integer,integer,integer",
      "real,real,integer",
      "real,integer,integer",
      "integer,integer,integer",
    ]);
  });

  it("stores two fills whose hashes share the first 8 bytes, and skips a fill stored already", () => {
    const a = `0x${"ab".repeat(8)}${"0".repeat(48)}`;
    const b = `0x${"ab".repeat(8)}${"f".repeat(48)}`;
    const ingest = createIngest(t.db, t.clock);
    const first = t.db.writer.transaction(() =>
      ingest.insertTrades([fill({ tx_hash: a }), fill({ tx_hash: b })]),
    )();
    expect(first).toHaveLength(2);
    const again = t.db.writer.transaction(() =>
      ingest.insertTrades([fill({ tx_hash: b }), fill({ tx_hash: b, log_index: 7 })]),
    )();
    expect(again.map((r) => [r.tx_hash, r.log_index])).toEqual([[b, 7]]);
    expect(ingest.tradeIdOf(a, 0)).toBe(first[0]!.id);
    expect(ingest.tradeIdOf(b, 0)).toBe(first[1]!.id);
    expect(ingest.tradeIdOf(b, 1)).toBeUndefined();
  });

  it("refuses a hash that is not 0x and 64 lowercase hex digits", () => {
    const ingest = createIngest(t.db, t.clock);
    expect(() =>
      t.db.writer.transaction(() =>
        ingest.insertTrades([fill({ tx_hash: `0x${"A".repeat(64)}` })]),
      )(),
    ).toThrow(/not 0x and 64 lowercase hex digits/);
    expect(t.db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(0);
  });
});
