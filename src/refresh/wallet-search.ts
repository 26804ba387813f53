import type { Db } from "../db/open";
import type { RefreshChange, RefreshExtension } from "./refresh";

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
 * About how many wallets the hot name index holds (sql/0018, docs/architecture.md "Wallet search:
 * the hot name index"): a search whose fragment this many of the largest wallets share is answered
 * from an index of this size, whatever the size of the world. A full rebuild picks the end so that
 * this many qualify (more when the last group holds several); incremental refreshes keep the end
 * while the count stays within half and twice this, and pick it again otherwise.
 */
export const HOT_WALLETS = 2000;

/**
 * The hot index's end, chosen from wallet_search_rows: the end of the volume group of the
 * `hotWallets`-th id, so a group is hot or not as a whole and the hot ids are the first ids of the
 * full index. sql/0018 repeats it for HOT_WALLETS word for word (a test checks).
 */
export const hotEndSql = (hotWallets: number) =>
  `coalesce((max(id) / ${GROUP_SPAN} + 1) * ${GROUP_SPAN}, 0) FROM (SELECT id FROM wallet_search_rows ORDER BY id LIMIT ${hotWallets})`;

/**
 * Keeps the name indexes of GET /v1/wallets/search (sql/0006, sql/0018) in step with wallet_stats.
 * A full refresh (or an empty index) rebuilds them; otherwise only the wallets the refresh
 * recomputed are rewritten (of them, those whose name or volume changed when the refresh says
 * which, `searchMoved`): a wallet whose volume group is unchanged keeps its id, one that moved
 * takes the next free id of its new group (a new wallet likewise), and its hot entry follows its id
 * across the hot end. Runs inside the caller's transaction when there is one. `hotWallets` is
 * HOT_WALLETS but in tests, which pick fewer so that small worlds have a cold part.
 */
export function refreshWalletSearch(
  db: Db,
  change?: RefreshChange,
  hotWallets = HOT_WALLETS,
): WalletSearchSummary {
  const w = db.writer;
  const empty = w.prepare("SELECT 1 FROM wallet_search_rows LIMIT 1").get() === undefined;
  /** Picks the hot end anew and copies the entries below it; each index left as one segment. */
  const rebuildHot = () => {
    w.exec(`DELETE FROM wallet_search_hot; DELETE FROM wallet_search_hot_end;
      INSERT INTO wallet_search_hot_end (one, id) SELECT 1, ${hotEndSql(hotWallets)};
      INSERT INTO wallet_search_hot (rowid, platform_name)
      SELECT rowid, platform_name FROM wallet_search
       WHERE rowid < (SELECT id FROM wallet_search_hot_end);
      INSERT INTO wallet_search_hot (wallet_search_hot) VALUES ('optimize');`);
  };
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
        JOIN wallet_stats s ON s.address = r.address;
      INSERT INTO wallet_search (wallet_search) VALUES ('optimize');`);
    rebuildHot();
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
    const hotEnd = w.prepare("SELECT id FROM wallet_search_hot_end").pluck().get() as number;
    const dropHot = w.prepare("DELETE FROM wallet_search_hot WHERE rowid = ?");
    const addHot = w.prepare("INSERT INTO wallet_search_hot (rowid, platform_name) VALUES (?, ?)");
    let hotChanged = false;
    let updated = 0;
    for (const address of change.searchMoved ?? change.wallets) {
      const row = rowOf.get(address);
      const wallet = walletOf.get(address);
      const name = wallet?.name ?? null;
      if (row === undefined && name === null) continue;
      updated += 1;
      if (row !== undefined) dropEntry.run(row.id);
      if (row !== undefined && row.id < hotEnd) {
        dropHot.run(row.id);
        hotChanged = true;
      }
      const base = wallet === undefined ? 0 : groupBase(wallet.grp);
      const stays = row !== undefined && row.id >= base && row.id < base + GROUP_SPAN;
      if (row !== undefined && (name === null || !stays)) dropRow.run(row.id);
      if (name === null) continue;
      let id: number;
      if (row !== undefined && stays) id = row.id;
      else {
        const last = lastOfGroup.get(base, base + GROUP_SPAN);
        id = last === null || last === undefined ? base : last + 1;
        // A group's ids are used up (GROUP_SPAN wallets of one volume came and went): number
        // everything afresh, which packs each group from its base again.
        if (id >= base + GROUP_SPAN) return rebuild();
        addRow.run(id, address);
      }
      addEntry.run(id, name);
      if (id < hotEnd) {
        addHot.run(id, name);
        hotChanged = true;
      }
    }
    if (hotChanged) {
      // Volumes drift between full rebuilds (they mostly grow), and the hot count with them.
      // Picked anew when the count left half to twice HOT_WALLETS, unless that picks the same end
      // (a world with fewer named wallets than that).
      const hot = w.prepare("SELECT count(*) FROM wallet_search_hot").pluck().get() as number;
      const repick = () =>
        w
          .prepare(`SELECT ${hotEndSql(hotWallets)}`)
          .pluck()
          .get() !== hotEnd;
      if (hot > hotWallets * 2 || (hot < hotWallets / 2 && repick())) rebuildHot();
      // Each write left a segment of its own and tombstones of the entries it replaced, which
      // every later search would read through: a hot index of a few thousand names merges back
      // into one segment in milliseconds.
      else w.exec("INSERT INTO wallet_search_hot (wallet_search_hot) VALUES ('optimize')");
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
