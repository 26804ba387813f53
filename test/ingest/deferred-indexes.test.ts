import { afterEach, describe, expect, it } from "vitest";
import type { Connection } from "../../src/db/open";
import { generateWorld } from "../../src/fixtures/world";
import { deferFillIndexes } from "../../src/ingest/deferred-fill-indexes";
import { hashBytes } from "../../src/ingest/fill-codec";
import { importJsonl } from "../../src/ingest/import";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import type { ImportSource } from "../../src/ingest/sources";
import { createTestApp, type TestApp } from "../helpers/app";
import { newTrade } from "../helpers/trades";
import { market, trade, txHash } from "./builders";

/**
 * An import into an empty fill store builds fills_by_tx and fills_by_time after the load
 * (src/ingest/deferred-fill-indexes.ts). What it stores, what it reports and what it leaves
 * behind on a refusal must be those of an import that keeps every index.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const DEFERRED = ["fills_by_tx", "fills_by_time"];

const apps: TestApp[] = [];
afterEach(() => {
  for (const t of apps.splice(0)) t.close();
});
function app(): TestApp {
  const t = createTestApp();
  apps.push(t);
  return t;
}

const source = (lines: readonly (object | string)[]): ImportSource => ({
  name: "file.jsonl",
  open: () => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))),
});

function indexSql(c: Connection): Record<string, string | undefined> {
  const sql = c.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").pluck();
  return Object.fromEntries(DEFERRED.map((name) => [name, sql.get(name) as string | undefined]));
}

/** Every table's rows, in a fixed order, as text. */
function tables(c: Connection): Record<string, unknown[]> {
  const names = c
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  return Object.fromEntries(
    names.map((name) => {
      const columns = c.pragma(`table_info("${name}")`) as unknown[];
      const order = columns.map((_, i) => i + 1).join(", ");
      return [name, c.prepare(`SELECT * FROM "${name}" ORDER BY ${order}`).raw().all()];
    }),
  );
}

describe("an import into an empty store", () => {
  it("stores what an import keeping every index stores, and leaves the same indexes", async () => {
    const world = generateWorld({ scale: "small", seed: 7, now: NOW });
    const file: ImportSource = { name: "small-world", open: () => world.lines };
    const [deferred, kept] = [app(), app()];
    const before = indexSql(deferred.db.writer);
    expect(Object.values(before).every((sql) => sql !== undefined)).toBe(true);

    const results = [];
    for (const [t, deferFillIndexes] of [
      [deferred, true],
      [kept, false],
    ] as const) {
      t.clock.set(NOW);
      const deps = { db: t.db, clock: t.clock, hooks: t.app.ingestHooks, deferFillIndexes };
      const result = await importJsonl(deps, file);
      if (!result.ok) throw new Error(result.reason);
      results.push(result.value.counts);
    }
    expect(results[0]).toEqual(results[1]);
    expect(results[0]!.trade.new).toBeGreaterThan(10_000);
    expect(indexSql(deferred.db.writer)).toEqual(before);
    expect(tables(deferred.db.writer)).toEqual(tables(kept.db.writer));
    expect(deferred.db.writer.pragma("integrity_check", { simple: true })).toBe("ok");

    // A second file meets the built indexes: its fills already stored are found there.
    const again = await importJsonl({ db: deferred.db, clock: deferred.clock }, file);
    if (!again.ok) throw new Error(again.reason);
    expect(again.value.counts.trade.new).toBe(0);
    expect(again.value.counts.trade.present).toBe(results[0]!.trade.new);
  });

  it("reports a fill repeated in the file as an import keeping every index does", async () => {
    const lines = [market(1), trade(1), trade(2), trade(1, { price: 0.3 }), trade(2)];
    const reasons = [];
    for (const deferFillIndexes of [true, false]) {
      const t = app();
      const result = await importJsonl(
        { db: t.db, clock: t.clock, deferFillIndexes },
        source(lines),
      );
      expect(result.ok).toBe(false);
      if (result.ok) return;
      reasons.push(result.errors);
      // Refused: nothing stored, and the indexes are as they were.
      expect(t.db.writer.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(0);
      expect(Object.values(indexSql(t.db.writer)).every((sql) => sql !== undefined)).toBe(true);
    }
    expect(reasons[0]).toEqual(reasons[1]);
    expect(reasons[0]!.map((e) => e.line)).toEqual([4, 5]);
    expect(reasons[0]![0]!.reason).toMatch(/duplicate trade: .* also on line 2$/);
  });

  it("leaves the indexes in place when a refused file rolls back", async () => {
    const t = app();
    const before = indexSql(t.db.writer);
    const result = await importJsonl(
      { db: t.db, clock: t.clock },
      source([market(1), trade(1), trade(2), "{not json"]),
    );
    expect(result.ok).toBe(false);
    expect(indexSql(t.db.writer)).toEqual(before);
    expect(t.db.writer.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(0);
  });

  it("builds the indexes whether or not the connection's temporary database is open", async () => {
    // The build sorts through temporary files, a setting SQLite lets a transaction change only
    // while the temporary database is closed; a process that refreshed before (the funding
    // graph's temporary tables) has it open. Either way the import stores the file, and the
    // setting is as it was after.
    for (const openTemp of [false, true]) {
      const t = app();
      if (openTemp) t.db.writer.exec("CREATE TEMP TABLE scratch (x)");
      const before = t.db.writer.pragma("temp_store", { simple: true });
      const result = await importJsonl(
        { db: t.db, clock: t.clock },
        source([market(1), trade(1), trade(2)]),
      );
      if (!result.ok) throw new Error(result.reason);
      expect(result.value.counts.trade.new).toBe(2);
      expect(Object.values(indexSql(t.db.writer)).every((sql) => sql !== undefined)).toBe(true);
      expect(t.db.writer.pragma("temp_store", { simple: true })).toBe(before);
    }
  });

  it("keeps every index for a store that already holds fills", async () => {
    const t = app();
    const first = await importJsonl({ db: t.db, clock: t.clock }, source([market(1), trade(1)]));
    expect(first.ok).toBe(true);
    t.db.writer.exec("BEGIN IMMEDIATE");
    try {
      expect(deferFillIndexes(t.db.writer, 2 ** 20)).toBeNull();
      expect(Object.values(indexSql(t.db.writer)).every((sql) => sql !== undefined)).toBe(true);
    } finally {
      t.db.writer.exec("ROLLBACK");
    }
  });

  it("builds the indexes mid-file when its key table reaches its bound, and finds every fill after", () => {
    const t = app();
    const w = t.db.writer;
    w.exec("BEGIN IMMEDIATE");
    try {
      // 16 slots: 12 keys, then the indexes are built.
      const deferred = deferFillIndexes(w, 16 * 12)!;
      expect(deferred.active).toBe(true);
      expect(indexSql(w)).toEqual({ fills_by_tx: undefined, fills_by_time: undefined });
      const ingest = createIngest(t.db, t.clock, {}, { oneTransaction: true, deferred });
      w.prepare(
        "INSERT INTO markets (slug, condition_id, category) VALUES ('m', '0xc', 'politics')",
      ).run();
      const marketId = w.prepare("SELECT id FROM markets").pluck().get() as number;
      const fill = (n: number, log = 0): NewTrade => ({
        ...newTrade(
          `0x${String(n % 5).padStart(40, "0")}`,
          marketId,
          "YES",
          "BUY",
          0.5,
          10,
          NOW + n,
        ),
        tx_hash: txHash(n),
        log_index: log,
      });
      // Ten fills, and the first four again: all four found in the key table.
      const early = Array.from({ length: 10 }, (_, i) => fill(i));
      expect(ingest.insertTrades(early)).toHaveLength(10);
      expect(ingest.insertTrades(early.slice(0, 4))).toHaveLength(0);
      expect(deferred.active).toBe(true);
      expect(ingest.tradeIdOf(txHash(3), 0)).toBe(4);
      // Ten more (two of them a second log index of an earlier hash): the bound is passed.
      const late = [...Array.from({ length: 8 }, (_, i) => fill(10 + i)), fill(1, 1), fill(2, 1)];
      expect(ingest.insertTrades(late)).toHaveLength(10);
      expect(deferred.active).toBe(false);
      expect(Object.values(indexSql(w)).every((sql) => sql !== undefined)).toBe(true);
      // Every fill, before and after the build, is now found through fills_by_tx.
      expect(ingest.insertTrades([...early, ...late])).toHaveLength(0);
      expect(ingest.tradeIdOf(txHash(2), 1)).toBe(20);
      const byIndex = w
        .prepare(
          "SELECT count(*) FROM fills INDEXED BY fills_by_tx WHERE substr(tx_hash, 1, 4) = substr(?, 1, 4)",
        )
        .pluck();
      for (const f of [...early, ...late]) {
        expect(byIndex.get(hashBytes(f.tx_hash))).toBeGreaterThan(0);
      }
      deferred.build(); // already built: nothing to do
    } finally {
      w.exec("ROLLBACK");
    }
    expect(Object.values(indexSql(w)).every((sql) => sql !== undefined)).toBe(true);
  });
});
