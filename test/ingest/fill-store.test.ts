import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createIngest, FILL_ID_BY_KEY_SQL, type NewTrade } from "../../src/ingest/ingest";
import { TRADE_BY_TX_SQL } from "../../src/read/trades";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { queryPlan } from "../helpers/plan";

/**
 * The compact fill store (sql/0010): what goes in through the ingest path comes back from the
 * trades view exactly, whichever encoding each amount took, and (tx_hash, log_index) stays
 * unique although its index keys on the hash's first and last 4 bytes only (sql/0030).
 */
let t: TestApp;
let marketId: number;

beforeEach(() => {
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  marketId = t.db.writer.transaction(() => {
    return addMarket(ingest, {
      slug: "m",
      title: "M?",
      category: "crypto",
      condition_id: `0x${"c".repeat(64)}`,
      created_at: null,
    });
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

  it("stores two fills whose hashes share the key's bytes, and skips a fill stored already", () => {
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

  it("finds a fill by its hash through fills_by_tx's key: the ingest path, the trades view, GET /v1/trades/{txHash}", () => {
    const plan = (sql: string) => queryPlan(t.db.reader, sql);
    expect(plan(FILL_ID_BY_KEY_SQL)).toMatch(
      /SEARCH fills USING INDEX fills_by_tx \(<expr>=\? AND <expr>=\? AND log_index=\?\)/,
    );
    expect(plan(TRADE_BY_TX_SQL)).toMatch(
      /SEARCH fills USING INDEX fills_by_tx \(<expr>=\? AND <expr>=\?\)/,
    );
    // The view's INSTEAD OF trigger has no plan of its own to show: it must name the index's key.
    const sqlOf = (name: string) =>
      t.db.reader
        .prepare("SELECT sql FROM sqlite_master WHERE name = ?")
        .pluck()
        .get(name) as string;
    const key =
      /ON fills \((substr\(tx_hash, 1, \d\)), (substr\(tx_hash, \d+, \d\)), log_index\)/.exec(
        sqlOf("fills_by_tx"),
      )!;
    expect([key[1], key[2]]).toEqual(["substr(tx_hash, 1, 4)", "substr(tx_hash, 29, 4)"]);
    expect(sqlOf("trades_insert")).toContain(
      `WHERE ${key[1]} = substr(unhex(substr(NEW.tx_hash, 3)), 1, 4)
      AND ${key[2]} = substr(unhex(substr(NEW.tx_hash, 3)), 29, 4)`,
    );

    // Through the view too, a fill stored already is skipped, and one sharing its key is not.
    const a = `0x${"cd".repeat(4)}${"0".repeat(56)}`;
    const b = `0x${"cd".repeat(4)}${"e".repeat(56)}`;
    const viaView = t.db.writer.prepare(
      `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts)
       VALUES (?, 0, ?, ?, 'YES', 'BUY', 0.5, 10, 5, 1)`,
    );
    for (const hash of [a, b, a]) viaView.run(hash, `0x${"2".repeat(40)}`, marketId);
    expect(t.db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(2);
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
