import type * as v from "valibot";
import type { Db } from "../db/open";
import type { WalletSearchSchema } from "../schemas/wallets";

/**
 * GET /v1/wallets/search. A query matches a wallet two ways, both answered from an index:
 * - an address prefix: hex digits with or without 0x ("0xab12", "ab12"), a range of wallet_stats'
 *   primary key read in address order;
 * - a platform-name substring, case-insensitive: the FTS5 trigram index of sql/0006. The first
 *   200 matches in index order (largest wallets first as of the last full rebuild) are ranked by
 *   total volume, largest first.
 * Address matches come first, then name matches; a wallet is listed once.
 */
export const NAME_CANDIDATES = 200;

const HEX_FRAGMENT = /^(?:0x)?([0-9a-f]{1,40})$/i;

export type WalletSearchResult = v.InferOutput<typeof WalletSearchSchema>["results"][number];

export type WalletSearch = ReturnType<typeof createWalletSearch>;

/** A phrase query: the text between double quotes, its own quotes doubled, so no operator leaks. */
export function ftsPhrase(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

export function createWalletSearch(db: Db) {
  const r = db.reader;
  const byPrefix = r.prepare<[string, string, number], WalletSearchResult>(
    `SELECT address, platform_name, total_volume, total_pnl FROM wallet_stats
      WHERE address >= ? AND address < ? ORDER BY address LIMIT +?`,
  );
  const byName = r.prepare<[string, number, number], WalletSearchResult>(
    `SELECT s.address, s.platform_name, s.total_volume, s.total_pnl
       FROM (SELECT rowid AS id FROM wallet_search WHERE wallet_search MATCH ?
              ORDER BY rowid LIMIT +?) hits
       JOIN wallet_search_rows r ON r.id = hits.id
       JOIN wallet_stats s ON s.address = r.address
      ORDER BY s.total_volume DESC, s.address LIMIT +?`,
  );

  return {
    search(query: string, limit: number): { query: string; results: WalletSearchResult[] } {
      const results: WalletSearchResult[] = [];
      const hex = HEX_FRAGMENT.exec(query)?.[1]?.toLowerCase();
      if (hex !== undefined) {
        // Addresses are lowercase hex, and "g" sorts after every hex digit.
        results.push(...byPrefix.all(`0x${hex}`, `0x${hex}g`, limit));
      }
      if (results.length < limit) {
        const seen = new Set(results.map((w) => w.address));
        for (const wallet of byName.all(ftsPhrase(query), NAME_CANDIDATES, limit)) {
          if (results.length === limit) break;
          if (!seen.has(wallet.address)) results.push(wallet);
        }
      }
      return { query, results };
    },
  };
}
