import type { Connection } from "../db/open";

/**
 * The transaction keys of the history's files (sql/0032) and where each sits in its file
 * (sql/0038): which files may hold a transaction hash, and which rows of each, answered from the
 * database without opening a file.
 */

/**
 * Entries a chunk holds (a 4-byte key and a 2-byte block each): 3,600 bytes, one row on one page.
 * A key's entries are never split between chunks, so a chunk may hold a few more.
 */
export const TX_KEYS_PER_CHUNK = 600;

/** The largest block a chunk can name (2 bytes): a file of over a billion rows. */
const MAX_BLOCK = 0xffff;

/**
 * A file's hash keys, each with a block of rows that holds a fill with it (TX_BLOCK_ROWS in
 * src/history/store.ts): `keys[i]` is in block `blocks[i]`. Any order, repeats allowed.
 */
export interface TxPlaces {
  keys: Uint32Array;
  blocks: Uint32Array;
}

/** A listed file that may hold a hash, and its blocks that may (null: any row of it). */
export interface TxFile {
  file: string;
  blocks: number[] | null;
}

/** A hash's key: its first 4 bytes, big-endian, unsigned. */
export function txKeyOf(hash: Uint8Array): number {
  return ((hash[0]! << 24) | (hash[1]! << 16) | (hash[2]! << 8) | hash[3]!) >>> 0;
}

/**
 * Lists a file's keys with their blocks under its manifest id, in the caller's transaction, in
 * place of any it had.
 */
export function listTxKeys(db: Connection, partitionId: number, places: TxPlaces): void {
  // Each pair as one number (below 2^48), sorted, so a pair repeated is skipped.
  const pairs = new Float64Array(places.keys.length);
  for (let i = 0; i < pairs.length; i += 1) {
    const block = places.blocks[i]!;
    if (block > MAX_BLOCK) {
      throw new Error(`a history file's block ${block} is past the ${MAX_BLOCK} a chunk can name`);
    }
    pairs[i] = places.keys[i]! * (MAX_BLOCK + 1) + block;
  }
  pairs.sort();
  const distinct = pairs.filter((pair, i) => i === 0 || pair !== pairs[i - 1]);
  db.prepare("DELETE FROM history_tx_keys WHERE partition_id = ?").run(partitionId);
  const insert = db.prepare<[number, number, Buffer, Buffer]>(
    "INSERT INTO history_tx_keys (partition_id, first_key, keys, blocks) VALUES (?, ?, ?, ?)",
  );
  const keyOf = (at: number) => Math.floor(distinct[at]! / (MAX_BLOCK + 1));
  let at = 0;
  while (at < distinct.length) {
    // The chunk ends once full, but not inside a key's entries.
    let end = Math.min(at + TX_KEYS_PER_CHUNK, distinct.length);
    while (end < distinct.length && keyOf(end) === keyOf(end - 1)) end += 1;
    const keys = Buffer.alloc((end - at) * 4);
    const blocks = Buffer.alloc((end - at) * 2);
    for (let i = at; i < end; i += 1) {
      keys.writeUInt32LE(keyOf(i), (i - at) * 4);
      blocks.writeUInt16LE(distinct[i]! % (MAX_BLOCK + 1), (i - at) * 2);
    }
    insert.run(partitionId, keyOf(at), keys, blocks);
    at = end;
  }
}

/**
 * The listed files that may hold a fill of the transaction `hash` (`0x` and 64 hex digits), in
 * manifest order: those whose keys include its key, with the blocks that hold it; and those
 * listed before keys were kept (sql/0032) or before their blocks were (sql/0038), whose rows may
 * all hold it.
 */
export function filesForTx(db: Connection): (hash: string) => TxFile[] {
  // The one chunk of each file that would hold the key: the last that starts at or below it.
  const candidates = db.prepare<
    { key: number },
    { file: string; keys: Buffer | null; blocks: Buffer | null; indexed: number }
  >(
    `SELECT p.file, k.keys, k.blocks,
            EXISTS (SELECT 1 FROM history_tx_keys i WHERE i.partition_id = p.id) AS indexed
       FROM history_partitions p
       LEFT JOIN history_tx_keys k
         ON k.partition_id = p.id
        AND k.first_key = (SELECT max(c.first_key) FROM history_tx_keys c
                            WHERE c.partition_id = p.id AND c.first_key <= @key)
      ORDER BY p.id`,
  );
  return (hash) => {
    const key = Number.parseInt(hash.slice(2, 10), 16);
    const found: TxFile[] = [];
    for (const c of candidates.all({ key })) {
      if (c.indexed === 0) {
        found.push({ file: c.file, blocks: null });
        continue;
      }
      if (c.keys === null) continue;
      const [from, to] = entriesOf(c.keys, key);
      if (from === to) continue;
      if (c.blocks === null) {
        found.push({ file: c.file, blocks: null });
        continue;
      }
      const blocks: number[] = [];
      for (let i = from; i < to; i += 1) blocks.push(c.blocks.readUInt16LE(i * 2));
      found.push({ file: c.file, blocks });
    }
    return found;
  };
}

/** The entries of a chunk's sorted little-endian keys equal to `key`: [first, past the last). */
function entriesOf(chunk: Buffer, key: number): [number, number] {
  const at = (i: number) => chunk.readUInt32LE(i * 4);
  const count = chunk.length / 4;
  // The first entry at or above the key.
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (at(mid) < key) low = mid + 1;
    else high = mid;
  }
  let end = low;
  while (end < count && at(end) === key) end += 1;
  return [low, end];
}
