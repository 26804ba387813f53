import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { sqlFiles } from "../../src/db/sql-files";
import { migrate } from "../../src/migrations/migrate";
import { refreshReadModels } from "../../src/refresh/refresh";
import {
  createTestApp,
  expectSameGetAnswers,
  seededTestApp,
  type TestApp,
  unsigned,
} from "../helpers/app";
import { timingJsonSql } from "../helpers/wallet-read-models";

/**
 * sql/0024 (category records and timing keyed on wallet ids) on a populated database: the small
 * world is seeded on the current schema, its category records and timing put back in 0023's
 * layout (by address, with its indexes; timing as the answer's JSON), and the copy migrated.
 * Every GET endpoint, and every page of the rankings whose ties are longest, must answer the
 * same from both.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const BEFORE = 23;
let current: TestApp;
let migrated: TestApp;

/** wallet_category_stats, wallet_timing and their indexes as sql/0023 left them. */
function layoutBefore(): string[] {
  const scratch = openConnection(":memory:");
  try {
    migrate(scratch, { files: sqlFiles().slice(0, BEFORE) });
    return scratch
      .prepare(
        `SELECT sql FROM sqlite_master
          WHERE tbl_name IN ('wallet_category_stats', 'wallet_timing') AND sql IS NOT NULL
          ORDER BY type = 'index', name`,
      )
      .pluck()
      .all() as string[];
  } finally {
    scratch.close();
  }
}

beforeAll(async () => {
  ({ t: current } = await seededTestApp({ now: NOW }));
  current.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  const oldPath = join(current.dir, "at-23.db");
  copyFileSync(current.config.dbPath, oldPath);
  const old = openConnection(oldPath);
  old.transaction(() => {
    old.exec(`CREATE TABLE category_by_address AS
      SELECT w.address, c.category, c.bets, c.resolved_bets, c.wins, c.win_rate, c.global_win_rate,
             c.edge, c.pnl, c.volume, c.counter_consensus_wins
        FROM wallet_category_stats c JOIN wallet_ids w ON w.id = c.wallet_id;
      CREATE TABLE timing_by_address AS
      SELECT w.address, ${timingJsonSql("t.counts")} AS buckets
        FROM wallet_timing t JOIN wallet_ids w ON w.id = t.wallet_id;
      DROP TABLE wallet_category_stats;
      DROP TABLE wallet_timing;`);
    for (const sql of layoutBefore()) old.exec(sql);
    old.exec(`INSERT INTO wallet_category_stats SELECT * FROM category_by_address;
      INSERT INTO wallet_timing SELECT * FROM timing_by_address;
      DROP TABLE category_by_address;
      DROP TABLE timing_by_address;`);
    // Tables and indexes of later migrations, which create them again.
    old.exec(`DROP TABLE wallet_sealed_trades; DROP TABLE history_tx_keys;
      DROP TABLE history_wallets; DROP TABLE history_markets; DROP TABLE history_partitions;
      DROP TABLE history_replica_unlisted; DROP INDEX signals_by_trade; DROP TABLE fill_id_floor;`);
    old.pragma(`user_version = ${BEFORE}`);
  })();
  old.close();
  migrated = createTestApp({ env: { SMARTMONEY_DB: oldPath } });
  migrated.clock.set(NOW);
}, 180_000);
afterAll(() => {
  migrated?.close();
  current?.close();
});

const timing = (t: TestApp) =>
  t.db.reader
    .prepare(
      `SELECT w.address, t.counts FROM wallet_timing t JOIN wallet_ids w ON w.id = t.wallet_id
        ORDER BY w.address`,
    )
    .all();

const rows = (t: TestApp) =>
  t.db.reader
    .prepare(
      `SELECT w.address, c.* FROM wallet_category_stats c JOIN wallet_ids w ON w.id = c.wallet_id
        ORDER BY w.address, c.category`,
    )
    .all();

describe("migrating category records and timing to wallet ids (sql/0024)", () => {
  it("keeps every record, field for field, with its address prefix", () => {
    const before = rows(current);
    expect(before.length).toBeGreaterThan(1_000);
    expect(rows(migrated)).toEqual(before);
    expect(migrated.db.reader.pragma("user_version", { simple: true })).toBe(sqlFiles().length);
    const indexes = (t: TestApp) =>
      t.db.reader
        .prepare(
          "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'wallet_category_stats' ORDER BY name",
        )
        .all();
    expect(indexes(migrated)).toEqual(indexes(current));
  });

  it("keeps every wallet's timing counts, and answers each wallet's timing the same", async () => {
    const before = timing(current);
    expect(before.length).toBeGreaterThan(500);
    expect(timing(migrated)).toEqual(before);
    const keyA = current.key("terminal_pro");
    const keyB = migrated.key("terminal_pro");
    for (const { address } of before.slice(0, 200) as { address: string }[]) {
      const path = `/v1/wallets/${address}/timing`;
      const [a, b] = await Promise.all([current.get(path, keyA), migrated.get(path, keyB)]);
      expect(await b.text(), path).toBe(await a.text());
    }
  });

  it("answers every GET endpoint with the same body", async () => {
    await expectSameGetAnswers(current, migrated);
  });

  it("pages the rankings' long runs of ties in the same order, cursor for cursor", async () => {
    const keyA = current.key("terminal_pro");
    const keyB = migrated.key("terminal_pro");
    // Counter-consensus wins and win rates of the wallets with a resolved bet: most of a
    // category's wallets share a handful of values. The screener's edges tie as well. With each
    // path, the longest run of one value among the rows it ranks.
    const ranked = "FROM wallet_category_stats WHERE resolved_bets >= 1";
    const paths: [string, string][] = [
      [
        "/v1/leaderboards/category/politics?sort=counter_consensus_wins&min_bets=1&limit=100",
        `SELECT count(*) AS n ${ranked} AND category = 'politics' GROUP BY counter_consensus_wins`,
      ],
      [
        "/v1/leaderboards/category/sports?sort=win_rate&min_bets=1&limit=100",
        `SELECT count(*) AS n ${ranked} AND category = 'sports' GROUP BY win_rate`,
      ],
      [
        "/v1/signals/screen?min_edge=-1&limit=100",
        "SELECT count(*) AS n FROM wallet_category_stats WHERE edge IS NOT NULL GROUP BY edge",
      ],
      [
        "/v1/signals/screen?category=politics&min_edge=-1&limit=100",
        `SELECT count(*) AS n FROM wallet_category_stats WHERE category = 'politics'
           AND edge IS NOT NULL GROUP BY edge`,
      ],
      ["/v1/leaderboards/category/crypto?sort=volume&min_bets=1&limit=100", "SELECT 1 AS n"],
    ];
    const longestRun = (sql: string) =>
      current.db.reader.prepare(`SELECT max(n) FROM (${sql})`).pluck().get() as number;
    expect(longestRun(paths[0]![1])).toBeGreaterThan(300);
    expect(longestRun(paths[1]![1])).toBeGreaterThan(100);
    expect(longestRun(paths[2]![1])).toBeGreaterThan(100);
    for (const [path] of paths) {
      let cursors: [string | null, string | null] = [null, null];
      let pages = 0;
      do {
        const [a, b] = await Promise.all(
          ([current, migrated] as const).map(async (t, i) => {
            const cursor = cursors[i];
            const url = cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path;
            const res = await t.get(url, i === 0 ? keyA : keyB);
            expect(res.status, url).toBe(200);
            return (await res.json()) as { data: Record<string, unknown>[]; next_cursor: string };
          }),
        );
        expect(unsigned(b), `${path} page ${pages}`).toEqual(unsigned(a));
        cursors = [a!.next_cursor, b!.next_cursor];
        pages += 1;
      } while (cursors[0] !== null && pages < 10);
      expect(pages, path).toBeGreaterThan(1);
    }
  });

  it("leaves the migrated database as a refresh writes it", () => {
    const before = [rows(migrated), timing(migrated)];
    refreshReadModels(migrated.db, NOW, { full: true });
    expect([rows(migrated), timing(migrated)]).toEqual(before);
  });
});
