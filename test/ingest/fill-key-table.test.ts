import { describe, expect, it } from "vitest";
import { FillKeyTable, fillKeyBits as keyBits } from "../../src/ingest/fill-key-table";

/** A 32-byte hash made of `head` and `tail`; `at` says which word `tail` goes in (2 to 7). */
function hash(head: number, tail: number, at = 2): Buffer {
  const bytes = Buffer.alloc(32);
  bytes.writeUInt32LE(head >>> 0, 0);
  bytes.writeUInt32LE(Math.imul(head, 2654435761) >>> 0, 4);
  bytes.writeUInt32LE(tail >>> 0, 4 * at);
  return bytes;
}

describe("FillKeyTable", () => {
  it("finds every key it was given, across growth, and no other", () => {
    const table = new FillKeyTable(16);
    const stored = new Map<string, { hash: Buffer; log: number; id: number }>();
    const keyOf = (h: Buffer, log: number) => `${h.toString("hex")}:${log}`;
    const isKey = (h: Buffer, log: number) => (id: number) => {
      const entry = [...stored.values()].find((e) => e.id === id);
      return entry?.hash.equals(h) === true && entry.log === log;
    };
    let id = 0;
    // Transactions of one to five fills: the same hash under several log indexes.
    for (let tx = 0; tx < 600; tx++) {
      for (let log = 0; log <= tx % 5; log++) {
        const h = hash(tx * 7919, tx);
        expect(table.find(h, log, isKey(h, log))).toBeUndefined();
        table.add(h, log, ++id);
        stored.set(keyOf(h, log), { hash: h, log, id });
      }
    }
    expect(table.size).toBe(stored.size);
    expect(table.bytes).toBeGreaterThanOrEqual(stored.size * 8);
    for (const { hash: h, log, id: want } of stored.values()) {
      expect(table.find(h, log, isKey(h, log))).toBe(want);
    }
    expect(table.find(hash(7, 7), 0, isKey(hash(7, 7), 0))).toBeUndefined();
    expect(table.find(hash(0, 0), 9, isKey(hash(0, 0), 9))).toBeUndefined();
  });

  it("tells apart two keys with the same 32 bits by the exact check", () => {
    const table = new FillKeyTable(16);
    // Another hash with the same 32 bits: found by trying tails (a birthday search of 2^17).
    const seen = new Map<number, number>();
    let pair: [number, number] | undefined;
    for (let n = 0; pair === undefined; n++) {
      const bits = keyBits(hash(n, n), 3);
      const other = seen.get(bits);
      if (other !== undefined) pair = [other, n];
      else seen.set(bits, n);
    }
    const a = hash(pair[0], pair[0]);
    const b = hash(pair[1], pair[1]);
    const ids = new Map<number, Buffer>([
      [1, a],
      [2, b],
    ]);
    const isKey = (h: Buffer) => (id: number) => ids.get(id)!.equals(h);
    table.add(a, 3, 1);
    expect(table.find(b, 3, isKey(b))).toBeUndefined();
    table.add(b, 3, 2);
    expect(table.find(a, 3, isKey(a))).toBe(1);
    expect(table.find(b, 3, isKey(b))).toBe(2);
    // The check is asked only of candidates: another log index never reaches it.
    let asked = 0;
    expect(
      table.find(a, 4, () => {
        asked++;
        return true;
      }),
    ).toBeUndefined();
    expect(asked).toBe(0);
  });

  it("gives its memory back when released, and when it grows", () => {
    const held = () => process.memoryUsage().arrayBuffers;
    const before = held();
    const table = new FillKeyTable(1 << 20);
    expect(table.bytes).toBe(8 << 20);
    expect(held() - before).toBeGreaterThanOrEqual(8 << 20);
    for (let i = 1; i <= 786_433; i++) table.add(hash(i, i), 0, i); // past three quarters: grows
    expect(table.bytes).toBe(16 << 20);
    // Only the grown arrays are held: the outgrown ones were freed without waiting for a GC.
    expect(held() - before).toBeLessThan((16 << 20) + (4 << 20));
    table.release();
    expect(held() - before).toBeLessThan(1 << 20);
    expect(table.size).toBe(0);
    expect(table.find(hash(1, 1), 0, () => true)).toBeUndefined();
  });

  it("spreads hashes that differ only in a few bytes (sequential test data)", () => {
    // Like the tests' builders: one 4-byte pattern repeated, the fill's number in it.
    const table = new FillKeyTable(16);
    const patterned = (n: number) =>
      Buffer.from(`${(0x70000000 + n).toString(16)}`.repeat(8), "hex");
    let asked = 0;
    const never = () => {
      asked++;
      return false;
    };
    for (let n = 1; n <= 50_000; n++) {
      expect(table.find(patterned(n), 0, never)).toBeUndefined();
      table.add(patterned(n), 0, n);
    }
    // Their 32 bits as spread as random ones: an exact check only for the rare equal bits
    // (about n^2 / 2^33 pairs: 0.3 for 50,000 keys), not for a run of them.
    expect(asked).toBeLessThan(10);
    expect(table.find(patterned(777), 0, (id) => id === 777)).toBe(777);
  });

  it("refuses an id it cannot hold", () => {
    const table = new FillKeyTable();
    expect(() => table.add(hash(1, 1), 0, 0)).toThrow(RangeError);
    expect(() => table.add(hash(1, 1), 0, 2 ** 31)).toThrow(RangeError);
    expect(() => table.add(hash(1, 1), 0, 1.5)).toThrow(RangeError);
  });
});
