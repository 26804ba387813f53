import type { Connection } from "../../src/db/open";

/**
 * The read-model tables a refresh writes, each with its key order: what the "incremental equals
 * full rebuild" tests compare row for row, and what bench/retention.ts --verify hashes.
 */
export const READ_MODEL_TABLES: readonly (readonly [table: string, order: string])[] = [
  ["wallet_stats", "address"],
  ["wallet_bets", "wallet_id, market_id"],
  ["wallet_category_stats", "wallet_id, category"],
  ["wallet_timing", "wallet_id"],
  ["market_stats", "market_id"],
  ["market_hours", "market_id, hour"],
  ["market_price_history", "market_id"],
  ["category_base_rates", "category"],
];

/** Every row of each read-model table, in key order, by table name. */
export function readModelSnapshot(connection: Connection): Record<string, unknown[]> {
  return Object.fromEntries(
    READ_MODEL_TABLES.map(([table, order]) => [
      table,
      connection.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all(),
    ]),
  );
}
