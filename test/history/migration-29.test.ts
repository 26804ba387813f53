import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { sqlFiles } from "../../src/db/sql-files";
import { historyDir, partitions } from "../../src/history/store";
import { migrate } from "../../src/migrations/migrate";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import {
  createTestApp,
  expectSameFills,
  expectSameGetAnswers,
  seededTestApp,
  type TestApp,
} from "../helpers/app";

/**
 * An installation upgraded from schema 29, the last one before the fill history: the small world
 * is seeded on the current schema and copied table by table into a database at schema 29, which
 * `migrate` then takes to the current one (0030 re-keys fills_by_tx, 0031 to 0033 add the
 * history's manifest and what the read models keep of sealed fills). Every GET must answer the
 * same body as the database built new; then a first compaction moves every resolved market's
 * fills into the Parquet history at once, as the first `jobs run compact` of such an
 * installation does, and every GET still answers the same.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const DAY = 86_400_000;
const RETENTION = 30 * DAY;
/** The fill history's tables, which schema 29 does not have. */
const SINCE_30 = [
  "history_partitions",
  "history_markets",
  "history_tx_keys",
  "wallet_sealed_trades",
];
let current: TestApp;
let upgraded: TestApp;
let oldPath: string;

beforeAll(async () => {
  ({ t: current } = await seededTestApp({ now: NOW }));
  current.db.writer.pragma("wal_checkpoint(TRUNCATE)");

  oldPath = join(current.dir, "schema-29.db");
  const old = openConnection(oldPath);
  migrate(old, { files: sqlFiles().slice(0, 29) });
  expect(old.pragma("user_version", { simple: true })).toBe(29);
  old.pragma("foreign_keys = OFF");
  old.prepare("ATTACH DATABASE ? AS source").run(current.config.dbPath);
  // Plain tables and the search index's content; not the full-text indexes' own shadow tables.
  const tables = old
    .prepare(
      `SELECT t.name FROM main.sqlite_master t
        WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%' AND t.sql NOT LIKE 'CREATE VIRTUAL%'
          AND NOT EXISTS (SELECT 1 FROM main.sqlite_master v
                           WHERE v.sql LIKE 'CREATE VIRTUAL%' AND t.name GLOB v.name || '_*'
                             AND substr(t.name, length(v.name) + 2)
                                 IN ('data', 'idx', 'content', 'docsize', 'config'))`,
    )
    .pluck()
    .all() as string[];
  expect(tables).toContain("fills");
  for (const table of SINCE_30) expect(tables).not.toContain(table);
  old.transaction(() => {
    for (const table of tables) {
      const columns = (
        old.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).pluck().all(table) as string[]
      )
        .map((c) => `"${c}"`)
        .join(", ");
      old.exec(
        `INSERT OR REPLACE INTO main."${table}" (${columns}) SELECT ${columns} FROM source."${table}"`,
      );
    }
    // The search indexes by their rowid, which is their order (sql/0006).
    for (const index of ["wallet_search", "wallet_search_hot"]) {
      old.exec(
        `INSERT INTO main.${index} (rowid, platform_name) SELECT rowid, platform_name FROM source.${index}`,
      );
    }
  })();
  old.exec("DETACH DATABASE source");
  old.close();
  upgraded = createTestApp({ env: { SMARTMONEY_DB: oldPath } });
  upgraded.clock.set(NOW);
}, 180_000);

afterAll(() => {
  upgraded?.close();
  current?.close();
});

describe("upgrading a populated database from schema 29", () => {
  it("migrates to the current schema with every fill in place", () => {
    expectSameFills(current, upgraded);
  });

  it("answers every GET endpoint with the same body", async () => {
    await expectSameGetAnswers(current, upgraded);
  });

  it("moves every resolved market's fills into the history in one compaction, answers unchanged", async () => {
    const fillsBefore = upgraded.db.reader.prepare("SELECT count(*) FROM fills").pluck().get();
    const progress: [number, number][] = [];
    // A year on: every resolved market is past the window.
    const summary = await compactResolvedMarkets(upgraded.db, NOW + 365 * DAY, RETENTION, {
      batch: 50,
      onProgress: (done, total) => progress.push([done, total]),
    });
    const resolved = upgraded.db.reader
      .prepare("SELECT count(*) FROM markets WHERE resolved_at IS NOT NULL")
      .pluck()
      .get() as number;
    expect(summary.markets_waiting).toBe(0);
    expect(summary.markets).toBeGreaterThan(50);
    expect(summary.markets).toBeLessThanOrEqual(resolved);
    expect(summary.fills_deleted).toBeGreaterThan(1_000);
    // Progress from 0 to every due market, by batches, never backwards.
    expect(progress[0]).toEqual([0, summary.markets]);
    expect(progress.at(-1)).toEqual([summary.markets, summary.markets]);
    for (let i = 1; i < progress.length; i += 1) {
      expect(progress[i]![0]).toBeGreaterThanOrEqual(progress[i - 1]![0]);
    }
    // Every fill is in exactly one place: the database or a listed file.
    const listed = partitions(upgraded.db.reader);
    const sealed = listed.reduce((n, p) => n + p.fills, 0);
    const left = upgraded.db.reader.prepare("SELECT count(*) FROM fills").pluck().get() as number;
    expect(sealed).toBe(summary.fills_deleted);
    expect(left + sealed).toBe(fillsBefore);
    expect(readdirSync(historyDir(oldPath)).sort()).toEqual(listed.map((p) => p.file).sort());

    upgraded.app.readModelsChanged();
    await expectSameGetAnswers(current, upgraded);
  });
});
