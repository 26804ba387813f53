import { afterEach, describe, expect, it } from "vitest";
import { withEngine } from "../../src/history/engine";
import { historyDir } from "../../src/history/store";
import { createIngest, type Ingest } from "../../src/ingest/ingest";
import { migrate } from "../../src/migrations/migrate";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { readModelSnapshot } from "../helpers/read-models";
import { newTrade as trade } from "../helpers/trades";

const DAY = 86_400_000;
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const RETENTION = 90 * DAY;
const WALLET = `0x${"1".padStart(40, "0")}`;
const conditionOf = (slug: string) => `0x${Buffer.from(slug).toString("hex").padStart(64, "0")}`;

let t: TestApp;
afterEach(() => t?.close());

/**
 * An installation whose every fill is in one old market: a compaction seals them all and leaves
 * `fills` empty, the case in which SQLite's max(id) + 1 handed out sealed fills' ids again.
 */
async function allSealed() {
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  let old = 0;
  let fresh = 0;
  t.db.writer.transaction(() => {
    old = addMarket(ingest, {
      slug: "old",
      category: "politics",
      condition_id: conditionOf("old"),
    });
    fresh = addMarket(ingest, {
      slug: "fresh",
      category: "politics",
      condition_id: conditionOf("fresh"),
    });
    ingest.insertTrades(
      [200, 199, 198].map((daysAgo) =>
        trade(WALLET, old, "YES", "BUY", 0.4, 100, NOW - daysAgo * DAY),
      ),
    );
    ingest.resolveMarket(old, "YES", NOW - 150 * DAY);
  })();
  refreshReadModels(t.db, NOW);
  const summary = await compactResolvedMarkets(t.db, NOW, RETENTION);
  expect(summary.fills_deleted).toBe(3);
  expect(t.db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(0);
  return { ingest, fresh };
}

async function sealedIds(): Promise<number[]> {
  const dir = historyDir(t.db.path);
  const files = t.db.reader.prepare("SELECT file FROM history_partitions").pluck().all();
  return withEngine({ memoryMb: 64 }, async (duck) => {
    const list = files.map((f) => `'${dir}/${f}'`).join(", ");
    const reader = await duck.runAndReadAll(`SELECT id FROM read_parquet([${list}]) ORDER BY id`);
    return reader.getRowsJS().map((row) => Number(row[0]));
  });
}

function store(ingest: Ingest, rows: Parameters<Ingest["insertTrades"]>[0]) {
  return t.db.writer.transaction(() => ingest.insertTrades(rows))();
}

describe("fill ids after a compaction", () => {
  it("never hands a new fill the id of a sealed one", async () => {
    const { ingest, fresh } = await allSealed();
    const sealed = await sealedIds();
    expect(sealed).toHaveLength(3);
    const stored = store(ingest, [
      trade(WALLET, fresh, "NO", "BUY", 0.3, 50, NOW - DAY),
      trade(WALLET, fresh, "NO", "BUY", 0.35, 60, NOW - DAY + 1),
    ]);
    const ids = stored.map((fill) => fill.id);
    expect(Math.min(...ids)).toBeGreaterThan(Math.max(...sealed));
    // Later fills go on from there, one id each.
    expect(ids[1]).toBe(ids[0]! + 1);
  });

  it("keeps the incremental refresh counting the fills stored after it", async () => {
    const { ingest, fresh } = await allSealed();
    store(ingest, [trade(WALLET, fresh, "NO", "BUY", 0.3, 50, NOW - DAY)]);
    refreshReadModels(t.db, NOW + 60_000);
    const incremental = readModelSnapshot(t.db.reader);
    refreshReadModels(t.db, NOW + 60_000, { full: true });
    expect(readModelSnapshot(t.db.reader)).toEqual(incremental);
    // The new fill's bet is there: the old market's frozen one and the fresh market's.
    expect(incremental.wallet_bets).toHaveLength(2);
  });

  it("sets the floor of a database sealed before sql/0040 above every sealed fill", async () => {
    await allSealed();
    const w = t.db.writer;
    w.exec("DROP TABLE fill_id_floor");
    w.pragma("user_version = 39");
    expect(migrate(w).applied).toEqual([
      "0040_fill_id_floor.sql",
      "0041_history_markets_by_file.sql",
    ]);
    const floor = w.prepare("SELECT next_id FROM fill_id_floor").pluck().get() as number;
    expect(floor).toBeGreaterThan(Math.max(...(await sealedIds())));
  });
});
