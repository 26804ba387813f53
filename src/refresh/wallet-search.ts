import type { Db } from "../db/open";
import type { RefreshExtension } from "./refresh";

export interface WalletSearchSummary {
  kind: "full" | "incremental";
  /** Wallets whose name entry was written or removed. */
  updated: number;
}

/**
 * The search index's numbering (sql/0015, docs/architecture.md "Wallet search by volume"): a
 * wallet's FTS rowid is its volume rank group followed by a sequence number, so reading matches
 * in rowid order meets the largest wallets first, whatever refreshed since the last full
 * rebuild. The group is log2(1 + total volume) in steps of 2^-25 (wallets in one group differ in
 * volume by less than a few parts in 10^8), counted down from GROUP_TOP so larger volumes come
 * first; the sequence tells apart up to GROUP_SPAN wallets of one group. Every id stays below
 * 2^53, a safe integer in JavaScript.
 */
export const GROUP_SPAN = 4_194_304; // 2^22
const GROUP_TOP = 2_147_483_647; // 2^31 - 1
/**
 * A wallet_stats row's volume group, larger for larger volumes. sql/0015 repeats it word for
 * word (a test checks): the migration and both refreshes must group alike.
 */
export const VOLUME_GROUP_SQL =
  "min(CAST(log2(1 + max(total_volume, 0)) * 33554432 AS INTEGER), 2147483647)";

/** The first id of a volume group: a larger volume, a smaller id. */
export const groupBase = (group: number) => (GROUP_TOP - group) * GROUP_SPAN;

/**
 * Keeps the name index of GET /v1/wallets/search (sql/0006) in step with wallet_stats. A full
 * refresh (or an empty index) rebuilds it; otherwise only the wallets the refresh recomputed are
 * rewritten: a wallet whose volume group is unchanged keeps its id, one that moved takes the next
 * free id of its new group (a new wallet likewise). Runs inside the caller's transaction when
 * there is one.
 */
export function refreshWalletSearch(
  db: Db,
  change?: { full: boolean; wallets: ReadonlySet<string> },
): WalletSearchSummary {
  const w = db.writer;
  const empty = w.prepare("SELECT 1 FROM wallet_search_rows LIMIT 1").get() === undefined;
  const rebuild = (): WalletSearchSummary => {
    w.exec("DELETE FROM wallet_search; DELETE FROM wallet_search_rows;");
    const numbered = w
      .prepare(
        `INSERT INTO wallet_search_rows (id, address)
         SELECT (${GROUP_TOP} - grp) * ${GROUP_SPAN}
                  + row_number() OVER (PARTITION BY grp ORDER BY total_volume DESC, address) - 1,
                address
           FROM (SELECT address, total_volume, ${VOLUME_GROUP_SQL} AS grp
                   FROM wallet_stats WHERE platform_name IS NOT NULL)`,
      )
      .run().changes;
    w.exec(`INSERT INTO wallet_search (rowid, platform_name)
      SELECT r.id, s.platform_name FROM wallet_search_rows r
        JOIN wallet_stats s ON s.address = r.address`);
    return { kind: "full", updated: numbered };
  };
  const run = w.transaction((): WalletSearchSummary => {
    if (change === undefined || change.full || empty) return rebuild();
    const rowOf = w.prepare<[string], { id: number }>(
      "SELECT id FROM wallet_search_rows WHERE address = ?",
    );
    const walletOf = w.prepare<[string], { name: string | null; grp: number }>(
      `SELECT platform_name AS name, ${VOLUME_GROUP_SQL} AS grp FROM wallet_stats WHERE address = ?`,
    );
    const lastOfGroup = w
      .prepare<[number, number], number | null>(
        "SELECT max(id) FROM wallet_search_rows WHERE id >= ? AND id < ?",
      )
      .pluck();
    const dropEntry = w.prepare("DELETE FROM wallet_search WHERE rowid = ?");
    const dropRow = w.prepare("DELETE FROM wallet_search_rows WHERE id = ?");
    const addRow = w.prepare("INSERT INTO wallet_search_rows (id, address) VALUES (?, ?)");
    const addEntry = w.prepare("INSERT INTO wallet_search (rowid, platform_name) VALUES (?, ?)");
    let updated = 0;
    for (const address of change.wallets) {
      const row = rowOf.get(address);
      const wallet = walletOf.get(address);
      const name = wallet?.name ?? null;
      if (row === undefined && name === null) continue;
      updated += 1;
      if (row !== undefined) dropEntry.run(row.id);
      const base = wallet === undefined ? 0 : groupBase(wallet.grp);
      const stays = row !== undefined && row.id >= base && row.id < base + GROUP_SPAN;
      if (row !== undefined && (name === null || !stays)) dropRow.run(row.id);
      if (name === null) continue;
      let id = row?.id;
      if (!stays) {
        const last = lastOfGroup.get(base, base + GROUP_SPAN);
        id = last === null || last === undefined ? base : last + 1;
        // A group's ids are used up (GROUP_SPAN wallets of one volume came and went): number
        // everything afresh, which packs each group from its base again.
        if (id >= base + GROUP_SPAN) return rebuild();
        addRow.run(id, address);
      }
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
