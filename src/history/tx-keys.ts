import type { Connection } from "../db/open";

/**
 * The transaction keys of the history's files (sql/0032): which files may hold a transaction
 * hash, answered from the database without opening a file.
 */

/** Keys a chunk holds at most: 4,000 bytes, one row on one page. */
export const TX_KEYS_PER_CHUNK = 1_000;

/** A hash's key: its first 4 bytes, big-endian, unsigned. */
export function txKeyOf(hash: Uint8Array): number {
  return ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0;
}

/** Lists a file's keys (one a fill, any order) under its manifest id, in the caller's transaction. */
export function listTxKeys(db: Connection, partitionId: number, keys: readonly number[]): void {
  // Distinct keys: a key repeated says no more, and each chunk then starts at a key of its own.
  const sorted = [...new Set(keys)].sort((a, b) => a - b);
  const insert = db.prepare<[number, number, Buffer]>(
    "INSERT INTO history_tx_keys (partition_id, first_key, keys) VALUES (?, ?, ?)",
  );
  for (let at = 0; at < sorted.length; at += TX_KEYS_PER_CHUNK) {
    const chunk = sorted.slice(at, at + TX_KEYS_PER_CHUNK);
    const blob = Buffer.alloc(chunk.length * 4);
    for (let i = 0; i < chunk.length; i += 1) blob.writeUInt32LE(chunk[i]!, i * 4);
    insert.run(partitionId, chunk[0]!, blob);
  }
}

/**
 * The listed files that may hold a fill of the transaction `hash` (`0x` and 64 hex digits):
 * those whose keys include its key, and those listed before keys were kept (sql/0032), which may
 * hold anything.
 */
export function filesForTx(db: Connection): (hash: string) => string[] {
  const candidates = db.prepare<
    { key: number },
    { file: string; keys: Buffer | null; indexed: number }
  >(
    `SELECT p.file,
            (SELECT k.keys FROM history_tx_keys k
              WHERE k.partition_id = p.id AND k.first_key <= @key
              ORDER BY k.first_key DESC LIMIT 1) AS keys,
            EXISTS (SELECT 1 FROM history_tx_keys k WHERE k.partition_id = p.id) AS indexed
       FROM history_partitions p ORDER BY p.id`,
  );
  return (hash) => {
    const key = Number.parseInt(hash.slice(2, 10), 16);
    return candidates
      .all({ key })
      .filter((c) => c.indexed === 0 || (c.keys !== null && chunkHas(c.keys, key)))
      .map((c) => c.file);
  };
}

/** Binary search of a chunk's sorted little-endian keys. */
function chunkHas(chunk: Buffer, key: number): boolean {
  let low = 0;
  let high = chunk.length / 4 - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const at = chunk.readUInt32LE(mid * 4);
    if (at === key) return true;
    if (at < key) low = mid + 1;
    else high = mid - 1;
  }
  return false;
}
