import { describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { filesForTx, listTxKeys, TX_KEYS_PER_CHUNK, txKeyOf } from "../../src/history/tx-keys";
import { migrate } from "../../src/migrations/migrate";

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
