import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { historyDir, partitions } from "../../src/history/store";
import {
  filesForTx,
  listTxKeys,
  TX_KEYS_PER_CHUNK,
  type TxPlaces,
  txKeyOf,
} from "../../src/history/tx-keys";
import { migrate } from "../../src/migrations/migrate";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp } from "../helpers/app";
import { NOW, RETENTION, sealableWorld } from "./world";

/** Pairs of a key and its block, as TxPlaces. */
const placed = (pairs: readonly { key: number; block: number }[]): TxPlaces => ({
  keys: Uint32Array.from(pairs, (p) => p.key),
  blocks: Uint32Array.from(pairs, (p) => p.block),
});

const hashOf = (key: number, tail = "00") =>
  `0x${key.toString(16).padStart(8, "0")}${tail.repeat(28)}`;

describe("the history's transaction keys", () => {
  it("find every listed key in its file and blocks and no other, across chunks and repeats", () => {
    const db = openConnection(":memory:");
    migrate(db);
    const list = db.prepare(
      `INSERT INTO history_partitions (file, fills, bytes, min_ts, max_ts, created_at)
       VALUES (?, 0, 0, 0, 0, 0)`,
    );
    const a = Number(list.run("a.parquet").lastInsertRowid);
    const b = Number(list.run("b.parquet").lastInsertRowid);
    const old = Number(list.run("old.parquet").lastInsertRowid);
    list.run("unkeyed.parquet");
    // File a: 3,500 keys spread over the range, with 0 and the largest key at the ends, each in
    // block i % 7; each fourth also in the next block, twice (a transaction's several fills in
    // two markets); file b: a few, one shared with a. File old: keys listed without blocks
    // (before sql/0038); file unkeyed: none (before sql/0032).
    const inA = Array.from({ length: 3_500 }, (_, i) => Math.floor((i * 0xffffffff) / 3_499));
    const blocksOf = (i: number) => (i % 4 === 0 ? [i % 7, (i % 7) + 1] : [i % 7]);
    const written = inA.flatMap((key, i) =>
      blocksOf(i).flatMap((block) => [
        { key, block },
        { key, block },
      ]),
    );
    const inB = [7, inA[10]!, 0xfffffff0];
    db.transaction(() => {
      listTxKeys(db, a, placed(written.reverse()));
      listTxKeys(db, b, placed(inB.map((key) => ({ key, block: 0 }))));
      const keys = Buffer.alloc(8);
      keys.writeUInt32LE(inA[20]!, 0);
      keys.writeUInt32LE(inA[21]!, 4);
      db.prepare(
        "INSERT INTO history_tx_keys (partition_id, first_key, keys) VALUES (?, ?, ?)",
      ).run(old, inA[20]!, keys);
    })();
    // Chunks are full but for the last, and no key's entries are split between two.
    const chunks = db
      .prepare("SELECT keys, blocks FROM history_tx_keys WHERE partition_id = ? ORDER BY first_key")
      .all(a) as { keys: Buffer; blocks: Buffer }[];
    const entries = inA.reduce((n, _, i) => n + blocksOf(i).length, 0);
    expect(chunks.reduce((n, c) => n + c.keys.length / 4, 0)).toBe(entries);
    for (const [i, chunk] of chunks.entries()) {
      expect(chunk.blocks.length * 2).toBe(chunk.keys.length);
      if (i < chunks.length - 1)
        expect(chunk.keys.length / 4).toBeGreaterThanOrEqual(TX_KEYS_PER_CHUNK);
      if (i > 0) {
        const before = chunks[i - 1]!.keys;
        expect(chunk.keys.readUInt32LE(0)).toBeGreaterThan(before.readUInt32LE(before.length - 4));
      }
    }

    const files = filesForTx(db);
    const unkeyed = { file: "unkeyed.parquet", blocks: null };
    for (const [i, key] of inA.entries()) {
      expect(files(hashOf(key)), String(key)).toEqual([
        { file: "a.parquet", blocks: blocksOf(i) },
        ...(inB.includes(key) ? [{ file: "b.parquet", blocks: [0] }] : []),
        ...(i === 20 || i === 21 ? [{ file: "old.parquet", blocks: null }] : []),
        unkeyed,
      ]);
    }
    expect(files(hashOf(7))).toEqual([{ file: "b.parquet", blocks: [0] }, unkeyed]);
    for (const key of [1, inA[100]! + 1, inA[3_499]! - 1, 0xfffffff1]) {
      expect(files(hashOf(key)), String(key)).toEqual([unkeyed]);
    }
    // Only the first 4 bytes make the key.
    expect(files(hashOf(inA[5]!, "ff"))[0]).toEqual({ file: "a.parquet", blocks: blocksOf(5) });
    expect(txKeyOf(Buffer.from(hashOf(inA[5]!).slice(2), "hex"))).toBe(inA[5]);

    // Listed again (a file written again), a file's keys replace those it had.
    db.transaction(() => listTxKeys(db, b, placed([{ key: 7, block: 3 }])))();
    expect(files(hashOf(7))).toEqual([{ file: "b.parquet", blocks: [3] }, unkeyed]);
    expect(files(hashOf(0xfffffff0))).toEqual([unkeyed]);
    expect(() => listTxKeys(db, b, placed([{ key: 7, block: 65_536 }]))).toThrow(/past the 65535/);
  });
});

describe("a file listed before the history kept hash keys (sql/0032)", () => {
  it("is listed with exactly its fills' keys once rewritten, and no longer opened for others", async () => {
    const t = createTestApp();
    try {
      sealableWorld(t, { old: 4, recent: 0, trades: 200 });
      const w = t.db.writer;
      // Each market's fills' keys, before the seal moves them.
      const marketKeys = new Map(
        (w.prepare("SELECT id FROM markets").pluck().all() as number[]).map((m) => [
          m,
          (
            w.prepare("SELECT tx_hash FROM fills WHERE market_id = ?").pluck().all(m) as Buffer[]
          ).map(txKeyOf),
        ]),
      );
      expect((await compactResolvedMarkets(t.db, NOW, RETENTION, { batch: 2 })).markets).toBe(4);
      // As sealed before sql/0032 (and so before sql/0034): no keys, no copies in wallet order.
      const copies = w.prepare("SELECT wallet_file FROM history_partitions").pluck().all();
      w.exec(
        "DELETE FROM history_tx_keys; UPDATE history_partitions SET wallet_file = NULL, wallet_bytes = NULL",
      );
      for (const copy of copies as string[]) rmSync(join(historyDir(t.db.path), copy));
      const unknown = `0x${"e".repeat(64)}`;
      const listed = partitions(w);
      expect(filesForTx(w)(unknown)).toEqual(listed.map((p) => ({ file: p.file, blocks: null })));

      const summary = await compactResolvedMarkets(t.db, NOW, RETENTION);
      expect(summary).toMatchObject({ files_rewritten: 2, files_merged: 0 });
      const stored = w.prepare<[number], Buffer>(
        "SELECT keys FROM history_tx_keys WHERE partition_id = ? ORDER BY first_key",
      );
      const byKey = new Map<number, string[]>();
      for (const p of partitions(w)) {
        const markets = w
          .prepare("SELECT market_id FROM history_markets WHERE partition_id = ?")
          .pluck()
          .all(p.id) as number[];
        expect(markets).toHaveLength(2);
        const expected = [...new Set(markets.flatMap((m) => marketKeys.get(m)!))].sort(
          (a, b) => a - b,
        );
        const keys = (stored.pluck().all(p.id) as Buffer[]).flatMap((chunk) =>
          Array.from({ length: chunk.length / 4 }, (_, i) => chunk.readUInt32LE(i * 4)),
        );
        expect(keys).toEqual(expected);
        for (const key of keys) byKey.set(key, [...(byKey.get(key) ?? []), p.file]);
      }
      // A hash no file holds opens none; one of a sealed fill opens the files with its key, in
      // their one block.
      const files = filesForTx(w);
      expect(files(unknown)).toEqual([]);
      for (const [key, holders] of byKey) {
        expect(files(`0x${key.toString(16).padStart(8, "0")}${"00".repeat(28)}`)).toEqual(
          holders.map((file) => ({ file, blocks: [0] })),
        );
      }
    } finally {
      t.close();
    }
  }, 60_000);
});
