import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { historyDir, listedFiles, partitions } from "../../src/history/store";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { expectSameFills, expectSameGetAnswers, type TestApp } from "../helpers/app";
import { worldFromSchema } from "../helpers/old-schema";

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
let current: TestApp;
let upgraded: TestApp;
let oldPath: string;

beforeAll(async () => {
  ({
    current,
    migrated: upgraded,
    path: oldPath,
  } = await worldFromSchema({ now: NOW, version: 29 }));
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
    expect(readdirSync(historyDir(oldPath)).sort()).toEqual(
      listedFiles(upgraded.db.reader)
        .map((f) => f.file)
        .sort(),
    );

    upgraded.app.readModelsChanged();
    await expectSameGetAnswers(current, upgraded);
  });
});
