import type { Db } from "../db/open";
import type { RefreshExtension } from "./refresh";

export interface WalletSearchSummary {
  kind: "full" | "incremental";
  /** Wallets whose name entry was written or removed. */
  updated: number;
}

/**
 * Keeps the name index of GET /v1/wallets/search (sql/0006) in step with wallet_stats. A full
 * refresh (or an empty index) rebuilds it, numbering wallets by total volume, largest first, so
 * the search meets big wallets first; otherwise only the wallets the refresh recomputed are
 * rewritten, keeping their number (a new wallet is numbered after the rest). Runs inside the
 * caller's transaction when there is one.
 */
export function refreshWalletSearch(
  db: Db,
  change?: { full: boolean; wallets: ReadonlySet<string> },
): WalletSearchSummary {
  const w = db.writer;
  const empty = w.prepare("SELECT 1 FROM wallet_search_rows LIMIT 1").get() === undefined;
  const run = w.transaction((): WalletSearchSummary => {
    if (change === undefined || change.full || empty) {
      w.exec("DELETE FROM wallet_search; DELETE FROM wallet_search_rows;");
      const numbered = w
        .prepare(
          `INSERT INTO wallet_search_rows (id, address)
           SELECT row_number() OVER (ORDER BY total_volume DESC, address), address
             FROM wallet_stats WHERE platform_name IS NOT NULL`,
        )
        .run().changes;
      w.exec(`INSERT INTO wallet_search (rowid, platform_name)
        SELECT r.id, s.platform_name FROM wallet_search_rows r
          JOIN wallet_stats s ON s.address = r.address`);
      return { kind: "full", updated: numbered };
    }
    const rowOf = w.prepare<[string], { id: number }>(
      "SELECT id FROM wallet_search_rows WHERE address = ?",
    );
    const nameOf = w.prepare<[string], { name: string | null }>(
      "SELECT platform_name AS name FROM wallet_stats WHERE address = ?",
    );
    const dropEntry = w.prepare("DELETE FROM wallet_search WHERE rowid = ?");
    const dropRow = w.prepare("DELETE FROM wallet_search_rows WHERE id = ?");
    const addRow = w.prepare<[string], { id: number }>(
      "INSERT INTO wallet_search_rows (address) VALUES (?) RETURNING id",
    );
    const addEntry = w.prepare("INSERT INTO wallet_search (rowid, platform_name) VALUES (?, ?)");
    let updated = 0;
    for (const address of change.wallets) {
      const row = rowOf.get(address);
      const name = nameOf.get(address)?.name ?? null;
      if (row === undefined && name === null) continue;
      updated += 1;
      if (row !== undefined) dropEntry.run(row.id);
      if (name === null) {
        dropRow.run(row!.id);
        continue;
      }
      const id = row?.id ?? addRow.get(address)!.id;
      addEntry.run(id, name);
    }
    return { kind: "incremental", updated };
  });
  return run();
}

/** The same, as a refresh extension: `app.refreshExtensions.push(walletSearchRefresh)`. */
export const walletSearchRefresh: RefreshExtension = {
  name: "wallet_search",
  run: (db, _now, change) => refreshWalletSearch(db, change),
};
