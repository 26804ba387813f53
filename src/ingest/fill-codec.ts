/**
 * How a fill is stored in `fills` (sql/0010): the hash as 32 bytes, the wallet through
 * wallet_ids, outcome and side as two bits, and price, size and USD in millionths when that is
 * exact. The `trades` view decodes every column back to the shape the API serves.
 */

const HASH = /^0x[0-9a-f]{64}$/;

/** The 32 bytes of a lowercase 0x-prefixed transaction hash; throws on anything else. */
export function hashBytes(txHash: string): Buffer {
  if (!HASH.test(txHash)) {
    throw new Error(`transaction hash "${txHash}" is not 0x and 64 lowercase hex digits`);
  }
  return Buffer.from(txHash.slice(2), "hex");
}

/** A fill's `kind`: bit 0 outcome NO, bit 1 side SELL. */
export function kindOf(outcome: "YES" | "NO", side: "BUY" | "SELL"): number {
  return (outcome === "NO" ? 1 : 0) + (side === "SELL" ? 2 : 0);
}

/** The outcome a `kind` (kindOf) holds. */
export const outcomeOfKind = (kind: number): "YES" | "NO" => (kind & 1 ? "NO" : "YES");

/** The side a `kind` (kindOf) holds. */
export const sideOfKind = (kind: number): "BUY" | "SELL" => (kind & 2 ? "SELL" : "BUY");

/** Below this magnitude every value with six decimals has an exact millionths integer. */
const MAX_UNITS_VALUE = 9e9;

/**
 * A value in millionths (a BigInt, so SQLite stores an INTEGER) when that round-trips exactly,
 * else the value itself (stored as REAL). better-sqlite3 binds every JS number as a REAL, so the
 * BigInt is what tells the two apart on disk.
 */
export function units(value: number): bigint | number {
  if (Math.abs(value) >= MAX_UNITS_VALUE) return value;
  const micro = Math.round(value * 1e6);
  return micro / 1e6 === value ? BigInt(micro) : value;
}

/**
 * SQL, over `fill_id_floor` (sql/0040), for the first id no fill has had: SQLite's max(id) + 1,
 * or the floor a compaction raised past the ids it deleted.
 */
export const NEXT_FILL_ID_SQL = "max(next_id, (SELECT coalesce(max(id), 0) + 1 FROM fills))";

/** SQL for a stored amount's value: millionths when an INTEGER, the value itself when a REAL. */
export const decodedSql = (column: string) =>
  `CASE typeof(${column}) WHEN 'integer' THEN ${column} / 1e6 ELSE ${column} END`;
