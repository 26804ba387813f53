import type * as v from "valibot";
import type { Db } from "../db/open";
import { GROUP_SPAN } from "../refresh/wallet-search";
import type { WalletSearchSchema } from "../schemas/wallets";

/**
 * GET /v1/wallets/search. A query matches a wallet two ways, both answered from an index:
 * - an address prefix: hex digits with or without 0x ("0xab12", "ab12"), a range of wallet_stats'
 *   primary key read in address order;
 * - a platform-name substring, case-insensitive: the FTS5 trigram index of sql/0006, whose ids
 *   put larger volumes first (sql/0015: a volume group, then a sequence number within it). The
 *   matches are read in id order until `limit` of them are in hand and the next one is in a
 *   smaller volume group, so no later match can outrank them; those are ranked by total volume,
 *   largest first (then address). At most NAME_CANDIDATES are read: more than that only when
 *   that many wallets share one volume group, to a few parts in 10^8.
 *   The matches are read from the hot index first (sql/0018): the same entries under the same ids
 *   for the wallets of the largest volume groups, every id below wallet_search_hot_end. Its
 *   matches are therefore the first matches of the full index, and the full index is read on,
 *   from the hot end, only when they do not settle the page: the ids read, and so the answer, are
 *   the same as from the full index alone (`hotIndex: false`, which the tests compare).
 * Address matches come first, then name matches; a wallet is listed once. One read transaction
 * holds the whole search, so a refresh that commits meanwhile cannot mix two states of the index.
 */
export const NAME_CANDIDATES = 200;

const HEX_FRAGMENT = /^(?:0x)?([0-9a-f]{1,40})$/i;

export type WalletSearchResult = v.InferOutput<typeof WalletSearchSchema>["results"][number];

export type WalletSearch = ReturnType<typeof createWalletSearch>;

/** A phrase query: the text between double quotes, its own quotes doubled, so no operator leaks. */
export function ftsPhrase(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

export function createWalletSearch(db: Db, options: { hotIndex?: boolean } = {}) {
  const hotIndex = options.hotIndex ?? true;
  const r = db.reader;
  const byPrefix = r.prepare<[string, string, number], WalletSearchResult>(
    `SELECT address, platform_name, total_volume, total_pnl FROM wallet_stats
      WHERE address >= ? AND address < ? ORDER BY address LIMIT +?`,
  );
  const hotMatches = r
    .prepare<[string], number>(
      "SELECT rowid FROM wallet_search_hot WHERE wallet_search_hot MATCH ? ORDER BY rowid",
    )
    .pluck();
  const hotEnd = r.prepare<[], number>("SELECT id FROM wallet_search_hot_end").pluck();
  const fullMatchesFrom = r
    .prepare<[string, number], number>(
      "SELECT rowid FROM wallet_search WHERE wallet_search MATCH ? AND rowid >= ? ORDER BY rowid",
    )
    .pluck();
  const byIds = r.prepare<[string, number], WalletSearchResult>(
    `SELECT s.address, s.platform_name, s.total_volume, s.total_pnl
       FROM json_each(?) hits
       JOIN wallet_search_rows r ON r.id = hits.value
       JOIN wallet_stats s ON s.address = r.address
      ORDER BY s.total_volume DESC, s.address LIMIT +?`,
  );

  /** The matches that can make the first `limit` by volume, read largest volume group first. */
  function nameCandidates(query: string, limit: number): number[] {
    const phrase = ftsPhrase(query);
    const ids: number[] = [];
    /** Takes matches in id order until the page is certain; says whether it is. */
    const take = (matches: Iterable<number>): boolean => {
      for (const id of matches) {
        const cut = ids[limit - 1];
        if (cut !== undefined && Math.floor(id / GROUP_SPAN) !== Math.floor(cut / GROUP_SPAN)) {
          return true;
        }
        ids.push(id);
        if (ids.length === NAME_CANDIDATES) return true;
      }
      return false;
    };
    if (!hotIndex) {
      take(fullMatchesFrom.iterate(phrase, 0));
      return ids;
    }
    // A page of hot matches is certain once they are read: every later match is of a group below
    // the hot end, so not of the group of the last match on the page.
    if (take(hotMatches.iterate(phrase)) || ids.length >= limit) return ids;
    take(fullMatchesFrom.iterate(phrase, hotEnd.get() ?? 0));
    return ids;
  }

  const search = r.transaction((query: string, limit: number) => {
    const results: WalletSearchResult[] = [];
    const hex = HEX_FRAGMENT.exec(query)?.[1]?.toLowerCase();
    if (hex !== undefined) {
      // Addresses are lowercase hex, and "g" sorts after every hex digit.
      results.push(...byPrefix.all(`0x${hex}`, `0x${hex}g`, limit));
    }
    if (results.length < limit) {
      const seen = new Set(results.map((w) => w.address));
      const ids = nameCandidates(query, limit);
      for (const wallet of ids.length === 0 ? [] : byIds.all(JSON.stringify(ids), limit)) {
        if (results.length === limit) break;
        if (!seen.has(wallet.address)) results.push(wallet);
      }
    }
    return { query, results };
  });

  return {
    search(query: string, limit: number): { query: string; results: WalletSearchResult[] } {
      return search(query, limit);
    },
  };
}
