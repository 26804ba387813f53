import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { historyDir, partitions } from "../../src/history/store";
import { filesForTx, listTxKeys, TX_KEYS_PER_CHUNK, txKeyOf } from "../../src/history/tx-keys";
import { migrate } from "../../src/migrations/migrate";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp } from "../helpers/app";
import { NOW, RETENTION, sealableWorld } from "./world";

const hashOf = (key: number, tail = "00") =>
  `0x${key.toString(16).padStart(8, "0")}${tail.repeat(28)}`;

describe("the history's transaction keys", () => {
  it("find every listed key in its file and no other, across chunks and repeats", () => {
    const db = openConnection(":memory:");
    migrate(db);
    const list = db.prepare(
      `INSERT INTO history_partitions (file, fills, bytes, min_ts, max_ts, created_at)
       VALUES (?, 0, 0, 0, 0, 0)`,
    );
    const a = Number(list.run("a.parquet").lastInsertRowid);
    const b = Number(list.run("b.parquet").lastInsertRowid);
    // File a: 3,500 keys spread over the range, each fourth one three times (a transaction's
    // several fills), with 0 and the largest key at the ends; file b: a few, one shared with a.
    const inA = Array.from({ length: 3_500 }, (_, i) => Math.floor((i * 0xffffffff) / 3_499));
    const written = inA.flatMap((k, i) => (i % 4 === 0 ? [k, k, k] : [k]));
    const inB = [7, inA[10]!, 0xfffffff0];
    db.transaction(() => {
      listTxKeys(db, a, written.reverse());
      listTxKeys(db, b, inB);
    })();
    const chunks = db
      .prepare("SELECT count(*) FROM history_tx_keys WHERE partition_id = ?")
      .pluck()
      .get(a);
    expect(chunks).toBe(Math.ceil(3_500 / TX_KEYS_PER_CHUNK));

    const files = filesForTx(db);
    for (const key of inA) {
      expect(files(hashOf(key)), String(key)).toEqual(
        inB.includes(key) ? ["a.parquet", "b.parquet"] : ["a.parquet"],
      );
    }
    expect(files(hashOf(7))).toEqual(["b.parquet"]);
    for (const key of [1, inA[100]! + 1, inA[3_499]! - 1, 0xfffffff1]) {
      expect(files(hashOf(key)), String(key)).toEqual([]);
    }
    // Only the first 4 bytes make the key.
    expect(files(hashOf(inA[5]!, "ff"))).toEqual(["a.parquet"]);
    expect(txKeyOf(Buffer.from(hashOf(inA[5]!).slice(2), "hex"))).toBe(inA[5]);
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
      expect(filesForTx(w)(unknown)).toEqual(listed.map((p) => p.file));

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
      // A hash no file holds opens none; one of a sealed fill opens the files with its key.
      const files = filesForTx(w);
      expect(files(unknown)).toEqual([]);
      for (const [key, holders] of byKey) {
        expect(files(`0x${key.toString(16).padStart(8, "0")}${"00".repeat(28)}`)).toEqual(holders);
      }
    } finally {
      t.close();
    }
  }, 60_000);
});
