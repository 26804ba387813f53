import { TIMING_BUCKETS } from "../../src/analytics/timing";
import type { Connection } from "../../src/db/open";
import type { WalletCategoryRow } from "../../src/refresh/wallet-model";

/** A wallet_category_stats row named by its wallet's address, as tests write them. */
export type CategoryStatsRow = WalletCategoryRow & { address: string };

/**
 * Writes (or replaces) category rows as the refresh keys them since sql/0024: by the wallet's
 * id, added to wallet_ids when the wallet has none yet, and with its address prefix.
 */
export function categoryStatsWriter(conn: Connection): (row: CategoryStatsRow) => void {
  const walletId = conn.prepare("INSERT OR IGNORE INTO wallet_ids (address) VALUES (?)");
  const put = conn.prepare(
    `INSERT OR REPLACE INTO wallet_category_stats (wallet_id, category, address_prefix, bets,
       resolved_bets, wins, win_rate, global_win_rate, edge, pnl, volume, counter_consensus_wins)
     VALUES ((SELECT id FROM wallet_ids WHERE address = @address), @category,
       substr(@address, 3, 8), @bets, @resolved_bets, @wins, @win_rate, @global_win_rate, @edge,
       @pnl, @volume, @counter_consensus_wins)`,
  );
  return (row) => {
    walletId.run(row.address);
    put.run(row);
  };
}

/**
 * The i-th of a run of addresses that test the category rankings' tie order (sql/0024): their
 * prefixes (the first 8 hex digits) are not in the order of i, which is the order of their
 * wallet ids when written in turn, and each four share a prefix (i and i + 1, a pair of equal
 * values in the tests, among them), their remaining digits falling as i grows.
 */
export function tieBreakAddress(base: number, i: number): string {
  const prefix = base + ((Math.floor(i / 4) * 119) % 150);
  return `0x${prefix.toString(16).padStart(8, "0")}${(0xffff - i).toString(16).padStart(32, "0")}`;
}

/**
 * SQL giving the timing answer's JSON (the layout before sql/0024) from a stored
 * wallet_timing.counts column, for tests that put a database back in an older layout.
 */
export function timingJsonSql(counts: string): string {
  const buckets = TIMING_BUCKETS.map((b, i) => {
    const count = `json_extract(${counts}, '$[${2 * i}]')`;
    const wins = `json_extract(${counts}, '$[${2 * i + 1}]')`;
    return `json_object('label', '${b.label}', 'count', ${count},
      'win_rate', CASE WHEN ${count} > 0 THEN ${wins} * 1.0 / ${count} END)`;
  });
  return `json_array(${buckets.join(", ")})`;
}
