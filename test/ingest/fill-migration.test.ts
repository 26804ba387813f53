import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { sqlFiles } from "../../src/db/sql-files";
import { migrate } from "../../src/migrations/migrate";
import { expectSameFills, expectSameGetAnswers, type TestApp } from "../helpers/app";
import { worldFromSchema } from "../helpers/old-schema";
import { timingJsonSql } from "../helpers/wallet-read-models";

/**
 * sql/0010 (the compact fill store) and sql/0012 (bets keyed on wallet ids) on a populated
 * database: the small world is seeded on the current schema, copied table by table into a
 * database at schema 7 (the text-keyed trades table, filled from the trades view; bets by
 * address), migrated, and then every GET endpoint must answer the same body from both.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const BETS_BY_ADDRESS = `(SELECT address FROM source.wallet_ids i WHERE i.id = wallet_id),
  market_id, category, side, entry_price, buy_usd, volume, yes_flow, no_flow, yes_shares,
  no_shares, trade_count, two_sided, first_ts, entry_ts, last_ts, resolved, won, pnl_base, move_24h`;
const CATEGORIES_BY_ADDRESS = `(SELECT address FROM source.wallet_ids i WHERE i.id = wallet_id),
  category, bets, resolved_bets, wins, win_rate, global_win_rate, edge, pnl, volume,
  counter_consensus_wins`;
const TIMING_BY_ADDRESS = `(SELECT address FROM source.wallet_ids i WHERE i.id = wallet_id),
  ${timingJsonSql("counts")}`;
const BY_ADDRESS = new Map([
  ["wallet_bets", BETS_BY_ADDRESS],
  ["wallet_category_stats", CATEGORIES_BY_ADDRESS],
  ["wallet_timing", TIMING_BY_ADDRESS],
]);
let current: TestApp;
let migrated: TestApp;
let progress: { done: number; total: number }[];

beforeAll(async () => {
  // Bets name their wallet by address at schema 7, by wallet id since sql/0012; category records
  // and timing since sql/0024. Other tables by the old columns' names: later migrations add
  // columns (markets.compacted_at, sql/0023) and store others in another form than they serve
  // them (market_hours, sql/0022).
  ({ current, migrated } = await worldFromSchema({
    now: NOW,
    version: 7,
    select: (table) => BY_ADDRESS.get(table),
  }));
  progress = [];
  // createTestApp migrated it already; the progress of a second database at schema 7 is below.
}, 180_000);
afterAll(() => {
  migrated?.close();
  current?.close();
});

describe("migrating a populated database to the compact fill store", () => {
  it("keeps every fill, field for field", () => {
    expectSameFills(current, migrated);
  });

  it("answers every GET endpoint with the same body", async () => {
    await expectSameGetAnswers(current, migrated);
  });

  it("reports its progress in rows and rolls back whole when a hash is not hex", () => {
    const path = join(current.dir, "broken.db");
    const db = openConnection(path);
    migrate(db, { files: sqlFiles().slice(0, 7) });
    db.exec(`INSERT INTO markets (id, slug, condition_id) VALUES (1, 'm', '0xc');
      INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
        usd_value, ts)
      VALUES ('0x${"a".repeat(64)}', 0, '0x${"1".repeat(40)}', 1, 'YES', 'BUY', 0.5, 10, 5, 1),
             ('0x${"z".repeat(64)}', 0, '0x${"1".repeat(40)}', 1, 'NO', 'SELL', 0.25, 4, 1, 2)`);
    expect(() =>
      migrate(db, { onProgress: (p) => progress.push({ done: p.done, total: p.total }) }),
    ).toThrow();
    expect(progress[0]).toEqual({ done: 0, total: 2 });
    // The migrations before the compact store's (0008, 0009) stay applied; 0010 rolled back whole.
    expect(db.pragma("user_version", { simple: true })).toBe(9);
    expect(db.prepare("SELECT count(*) FROM trades").pluck().get()).toBe(2);
    db.exec(
      `UPDATE trades SET tx_hash = '0x${"b".repeat(64)}' WHERE log_index = 0 AND side = 'SELL'`,
    );
    progress = [];
    migrate(db, { onProgress: (p) => progress.push({ done: p.done, total: p.total }) });
    expect(progress.at(-1)).toEqual({ done: 2, total: 2 });
    expect(
      db
        .prepare("SELECT tx_hash, outcome, side, price, size, usd_value FROM trades ORDER BY id")
        .all(),
    ).toEqual([
      {
        tx_hash: `0x${"a".repeat(64)}`,
        outcome: "YES",
        side: "BUY",
        price: 0.5,
        size: 10,
        usd_value: 5,
      },
      {
        tx_hash: `0x${"b".repeat(64)}`,
        outcome: "NO",
        side: "SELL",
        price: 0.25,
        size: 4,
        usd_value: 1,
      },
    ]);
    db.close();
  });
});
