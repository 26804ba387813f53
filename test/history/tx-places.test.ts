import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { withEngine } from "../../src/history/engine";
import { historyDir, partitions, TX_BLOCK_ROWS } from "../../src/history/store";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { DAY, NOW, RETENTION } from "./world";

/**
 * A trade by hash reads only the blocks of rows its key's entries name (sql/0038): every sealed
 * hash must still be found, in files of several blocks, after a seal, a merge and an upgrade.
 */

const MARKETS = 4;
/** Fills a market: the four together span several blocks of a file in market order. */
const PER_MARKET = 9_000;
/** Every 50th transaction has a fill in each market: its key is in several blocks of a file. */
const SHARED_EVERY = 50;

let t: TestApp;
afterEach(() => t?.close());

const hashOf = (n: number) => `0x${createHash("sha256").update(String(n)).digest("hex")}`;

/** Old markets with PER_MARKET fills each, refreshed: all due for a compaction at NOW. */
function world(): { hash: string; logIndex: number; marketId: number }[] {
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  const ids = t.db.writer.transaction(() =>
    Array.from({ length: MARKETS }, (_, i) =>
      addMarket(ingest, {
        slug: `old${i}`,
        category: "politics",
        condition_id: `0x${(i + 1).toString(16).padStart(64, "0")}`,
      }),
    ),
  )();
  const trades: NewTrade[] = [];
  for (let n = 0; n < PER_MARKET; n++) {
    for (const [m, marketId] of ids.entries()) {
      const shared = n % SHARED_EVERY === 0;
      trades.push({
        tx_hash: hashOf(shared ? n : n * MARKETS + m),
        log_index: shared ? m : 0,
        wallet: `0x${((n % 37) + 1).toString(16).padStart(40, "0")}`,
        market_id: marketId,
        outcome: n % 3 === 0 ? "NO" : "YES",
        side: n % 4 === 0 ? "SELL" : "BUY",
        price: 0.1 + (n % 80) / 100,
        size: 10 + (n % 13),
        usd_value: (0.1 + (n % 80) / 100) * (10 + (n % 13)),
        ts: NOW - 200 * DAY + n * 60_000 + m,
      });
    }
  }
  t.db.writer.transaction(() => {
    ingest.insertTrades(trades);
    for (const id of ids) ingest.resolveMarket(id, "YES", NOW - 150 * DAY);
  })();
  refreshReadModels(t.db, NOW);
  return trades
    .filter((_, i) => i % 97 === 0 || i % (SHARED_EVERY * MARKETS) === 0)
    .map((trade) => ({
      hash: trade.tx_hash,
      logIndex: trade.log_index,
      marketId: trade.market_id,
    }));
}

/** The (key, block) pairs each listed file's chunks hold, and those its rows have. */
async function placesListedAndTrue(): Promise<{ listed: string[]; inFiles: string[] }> {
  const listed: string[] = [];
  const inFiles: string[] = [];
  const chunks = t.db.reader.prepare<[number], { keys: Buffer; blocks: Buffer }>(
    "SELECT keys, blocks FROM history_tx_keys WHERE partition_id = ? ORDER BY first_key",
  );
  await withEngine({ memoryMb: 256, threads: 1 }, async (duck) => {
    for (const p of partitions(t.db.reader)) {
      for (const { keys, blocks } of chunks.all(p.id)) {
        for (let i = 0; i < keys.length / 4; i++) {
          listed.push(`${p.file} ${keys.readUInt32LE(i * 4)} ${blocks.readUInt16LE(i * 2)}`);
        }
      }
      const rows = await duck.runAndReadAll(
        `SELECT DISTINCT ('0x' || left(hex(tx_hash), 8))::UBIGINT, file_row_number // ${TX_BLOCK_ROWS}
           FROM read_parquet('${join(historyDir(t.db.path), p.file)}', file_row_number = true)`,
      );
      for (const [key, block] of rows.getRowsJS()) inFiles.push(`${p.file} ${key} ${block}`);
    }
  });
  return { listed: listed.sort(), inFiles: inFiles.sort() };
}

/** Each sampled fill, found by its hash through the API: the lowest log index of its transaction. */
async function expectEveryHashFound(sample: ReturnType<typeof world>): Promise<void> {
  const key = t.key("terminal_pro");
  for (const { hash, logIndex, marketId } of sample) {
    const res = await t.get(`/v1/trades/${hash}`, key);
    expect(res.status, hash).toBe(200);
    const trade = (await res.json()) as { tx_hash: string; log_index: number };
    // A transaction with a fill in every market answers its first (log index 0).
    expect(trade, `${hash} (log index ${logIndex} in market ${marketId})`).toMatchObject({
      tx_hash: hash,
      log_index: 0,
    });
  }
}

describe("the blocks of the history's transaction keys", () => {
  it("name where each hash is in a file of several blocks, through a seal, a merge and an upgrade", async () => {
    const sample = world();
    // A file a market: each under a block, sealed apart.
    const sealed = await compactResolvedMarkets(t.db, NOW, RETENTION, {
      batch: 1,
      mergeTiers: [],
    });
    expect(sealed.markets).toBe(MARKETS);
    // All but the few fills signals name, which stay in `fills`.
    expect(sealed.fills_deleted).toBeGreaterThan(0.99 * MARKETS * PER_MARKET);
    let places = await placesListedAndTrue();
    expect(places.listed).toEqual(places.inFiles);
    await expectEveryHashFound(sample);

    // Merged into one file of several blocks: its keys are listed with the merged file's blocks.
    const merged = await compactResolvedMarkets(t.db, NOW, RETENTION);
    expect(merged.files_merged).toBe(MARKETS);
    const [file] = partitions(t.db.reader);
    expect(file!.fills).toBe(sealed.fills_deleted);
    places = await placesListedAndTrue();
    expect(places.listed).toEqual(places.inFiles);
    const blocks = new Set(places.listed.map((line) => line.split(" ")[2]));
    expect(blocks.size).toBe(Math.ceil((MARKETS * PER_MARKET) / TX_BLOCK_ROWS));
    await expectEveryHashFound(sample);

    // Keys listed before sql/0038, without blocks: a lookup reads the whole file, and the next
    // compaction lists them again with their blocks.
    t.db.writer.exec("UPDATE history_tx_keys SET blocks = NULL");
    await expectEveryHashFound(sample);
    const upgraded = await compactResolvedMarkets(t.db, NOW, RETENTION);
    expect(upgraded).toMatchObject({ tx_keys_placed: 1, files_merged: 0, files_rewritten: 0 });
    places = await placesListedAndTrue();
    expect(places.listed).toEqual(places.inFiles);
    await expectEveryHashFound(sample);
    expect((await compactResolvedMarkets(t.db, NOW, RETENTION)).tx_keys_placed).toBe(0);
  }, 120_000);
});
