import type * as v from "valibot";
import { WHALE_VOLUME_USD } from "../analytics/fill";
import type { PnlSource } from "../analytics/pnl-source";
import type { Db, Statement } from "../db/open";
import { CATEGORIES } from "../domain";
import type { LeaderboardEntrySchema } from "../schemas/wallets";
import { createEdgeScreen } from "./edge-screen";
import { prefixKeyset, prefixTie } from "./prefix-ties";
import {
  CATEGORY_PNL_TRUSTED_SQL,
  categoryPnlTrusted,
  createLatestRefresh,
  once,
  pnlAsOf,
} from "./wallet-stats";

/**
 * The leaderboards: each walks one index in its serving order, ties broken by address,
 * and stops at the page size. Rows whose sort value is unknown (a win rate or z-score before any
 * resolved bet) are not ranked by it.
 */
export const LEADERBOARD_CATEGORIES = CATEGORIES;
export type LeaderboardCategory = (typeof LEADERBOARD_CATEGORIES)[number];
export const WHALE_SORTS = ["volume", "winRate", "zScore", "totalBets"] as const;
export type WhaleSort = (typeof WHALE_SORTS)[number];
export const CATEGORY_SORTS = ["win_rate", "counter_consensus_wins", "pnl", "volume"] as const;
export type CategorySort = (typeof CATEGORY_SORTS)[number];
export type SortDirection = "asc" | "desc";

export type LeaderboardEntry = v.InferOutput<typeof LeaderboardEntrySchema>;

/** Keyset position: the last row's sort value and address. */
export type RankKey = [value: number, address: string];

export interface RankedPage {
  rows: LeaderboardEntry[];
  /** The keyset of each row, for the cursor. */
  keys: RankKey[];
  more: boolean;
}

/** Which column each sort ranks by and the index that serves it (sql/0004, sql/0006). */
const WHALE_ORDER: Record<WhaleSort, { column: string; index: string }> = {
  volume: { column: "total_volume", index: "wallet_stats_by_volume" },
  winRate: { column: "win_rate", index: "wallet_stats_whales_by_win_rate" },
  zScore: { column: "z_score", index: "wallet_stats_whales_by_z" },
  totalBets: { column: "total_bets", index: "wallet_stats_whales_by_bets" },
};
const CATEGORY_ORDER: Record<CategorySort, { column: string; index: string }> = {
  win_rate: { column: "win_rate", index: "wallet_category_by_win_rate" },
  counter_consensus_wins: {
    column: "counter_consensus_wins",
    index: "wallet_category_by_counter_consensus",
  },
  pnl: { column: "pnl", index: "wallet_category_by_pnl" },
  volume: { column: "volume", index: "wallet_category_by_volume" },
};

/**
 * The category rankings but win rate's hold only rows with resolved bets (sql/0025): min_bets is
 * at least 1, and the statement names the index's condition so SQLite may walk it.
 */
const RANKED_CATEGORY_ROWS = "AND c.resolved_bets > 0";

const ENTRY_COLUMNS = `address, platform_name, total_volume, total_pnl, pnl_source, pnl_as_of,
  win_rate, z_score, total_bets`;

/** After the key in a descending (or ascending) walk; the first bound lets SQLite seek. */
function keyset(column: string, direction: SortDirection): string {
  return direction === "desc"
    ? `AND ${column} <= @keyValue AND (${column} < @keyValue OR address > @keyAddress)`
    : `AND ${column} >= @keyValue AND (${column} > @keyValue OR address > @keyAddress)`;
}

/**
 * The statements, by name. Exported so a test can prove every one walks its index in order
 * (INDEXED BY makes SQLite refuse to prepare a statement its index cannot serve).
 */
export function leaderboardSql(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const keyed of [false, true]) {
    const suffix = keyed ? ":keyed" : "";
    for (const sort of WHALE_SORTS) {
      const { column, index } = WHALE_ORDER[sort];
      out[`whales:${sort}${suffix}`] = `SELECT ${ENTRY_COLUMNS}, ${column} AS rank_value
        FROM wallet_stats INDEXED BY ${index}
       WHERE total_volume > ${WHALE_VOLUME_USD} AND ${column} IS NOT NULL
         AND total_volume >= @minVolume AND resolved_bets >= @minResolvedBets
         ${keyed ? keyset(column, "desc") : ""}
       ORDER BY ${column} DESC, address LIMIT +@limit`;
    }
    for (const direction of ["asc", "desc"] as const) {
      // One ranking, walked forwards for descending PnL and backwards for ascending (sql/0028):
      // backwards, ties come in descending address order, and SQLite sorts each run of equal PnL
      // by address as it walks ("USE TEMP B-TREE FOR LAST TERM OF ORDER BY"), stopping at the
      // limit.
      out[`pnl:${direction}${suffix}`] = `SELECT ${ENTRY_COLUMNS}, total_pnl AS rank_value
        FROM wallet_stats INDEXED BY wallet_stats_by_pnl
       WHERE pnl_source <> 'none' AND total_pnl IS NOT NULL
         AND resolved_bets >= @minResolvedBets
         ${keyed ? keyset("total_pnl", direction) : ""}
       ORDER BY total_pnl ${direction.toUpperCase()}, address LIMIT +@limit`;
    }
    for (const sort of CATEGORY_SORTS) {
      const { column, index } = CATEGORY_ORDER[sort];
      // The same ranking two ways: `walk` reads the ranking index in order and stops at the
      // limit; `few` takes the qualifying wallets from wallet_category_by_resolved (at most
      // @candidates of them) and sorts them. `category()` picks by how many qualify.
      // Ties by address: the index walks them by the address's prefix; `exact` also sorts each
      // run of an equal prefix by the whole address, read when a page holds one (prefix-ties.ts).
      const ranked = (
        from: string,
        exact = true,
      ) => `SELECT w.address, s.platform_name, c.volume, c.pnl,
             c.win_rate, s.z_score, c.bets, s.wallet_type, s.total_volume AS wallet_volume,
             s.refreshed_at,
             c.${column} AS rank_value
        FROM ${from}
        CROSS JOIN wallet_ids w ON w.id = c.wallet_id
        CROSS JOIN wallet_stats s ON s.address = w.address
       WHERE c.category = +@category AND c.resolved_bets >= +@minBets
         ${sort === "win_rate" ? "AND c.win_rate IS NOT NULL" : RANKED_CATEGORY_ROWS}
         ${sort === "pnl" ? `AND ${CATEGORY_PNL_TRUSTED_SQL}` : ""}
         ${keyed ? prefixKeyset(`c.${column}`, "@keyValue", "@keyAddress") : ""}
       ORDER BY c.${column} DESC, c.address_prefix${exact ? ", w.address" : ""} LIMIT +@limit`;
      const walk = `wallet_category_stats c INDEXED BY ${index}`;
      out[`category:${sort}${suffix}`] = ranked(walk, false);
      out[`category-exact:${sort}${suffix}`] = ranked(walk);
      out[`category-few:${sort}${suffix}`] = ranked(
        `(SELECT * FROM wallet_category_stats INDEXED BY wallet_category_by_resolved
           WHERE category = +@category AND resolved_bets >= +@minBets LIMIT +@candidates) c`,
      );
    }
  }
  return out;
}

interface StatsEntryRow {
  address: string;
  platform_name: string | null;
  total_volume: number;
  total_pnl: number | null;
  pnl_source: PnlSource;
  pnl_as_of: number | null;
  win_rate: number | null;
  z_score: number | null;
  total_bets: number;
  rank_value: number;
}

interface CategoryEntryRow {
  address: string;
  platform_name: string | null;
  volume: number;
  pnl: number;
  win_rate: number | null;
  z_score: number | null;
  bets: number;
  wallet_type: string;
  wallet_volume: number;
  /** When the wallet's positions were marked: the as-of of its category PnL. */
  refreshed_at: number | null;
  rank_value: number;
}

export type LeaderboardQueries = ReturnType<typeof createLeaderboardQueries>;

/**
 * Up to this many qualifying wallets, the category leaderboard sorts them rather than walking
 * its ranking index. Walking finds a page after about limit × (category's wallets / qualifying)
 * index entries, each with a table lookup; sorting costs a lookup and a comparison per
 * qualifying wallet. Measured on the medium world (18k wallets a category): the default
 * min_bets of 20 leaves about 10 qualifying wallets, a walk of the whole category (about 110 ms)
 * against a sort of ten rows (under 1 ms).
 */
export const CATEGORY_SORT_CANDIDATES = 2_000;

export function createLeaderboardQueries(
  db: Db,
  options: { categorySortCandidates?: number } = {},
) {
  const candidates = options.categorySortCandidates ?? CATEGORY_SORT_CANDIDATES;
  const statements = new Map<string, Statement<[Record<string, unknown>], unknown>>();
  for (const [name, sql] of Object.entries(leaderboardSql())) {
    statements.set(name, db.reader.prepare(sql));
  }
  // How many of a category's wallets qualify, counted up to the candidate bound (index only).
  const qualifying = db.reader
    .prepare<{ category: string; minBets: number; candidates: number }, number>(
      `SELECT count(*) FROM (SELECT 1 FROM wallet_category_stats INDEXED BY wallet_category_by_resolved
         WHERE category = +@category AND resolved_bets >= +@minBets LIMIT +@candidates)`,
    )
    .pluck();
  const latestRefreshAt = createLatestRefresh(db);

  /**
   * A page of the named statement; with `exact`, the statement read instead when the page holds
   * wallets that tie on the value and on the address prefix (prefix-ties.ts).
   */
  function run<R extends { address: string; rank_value: number }>(
    name: string,
    params: Record<string, unknown>,
    limit: number,
    after: RankKey | undefined,
    exact?: string,
  ): { rows: R[]; keys: RankKey[]; more: boolean } {
    const keyParams = after ? { keyValue: after[0], keyAddress: after[1] } : {};
    const read = (which: string) => {
      const statement = statements.get(after ? `${which}:keyed` : which);
      if (!statement) throw new Error(`no leaderboard statement ${which}`);
      return statement.all({ ...params, ...keyParams, limit: limit + 1 }) as R[];
    };
    let rows = read(name);
    if (exact !== undefined && prefixTie(rows, (row) => row.rank_value)) rows = read(exact);
    const page = rows.slice(0, limit);
    return {
      rows: page,
      keys: page.map((row): RankKey => [row.rank_value, row.address]),
      more: rows.length > limit,
    };
  }

  function statsEntries(page: { rows: StatsEntryRow[]; keys: RankKey[]; more: boolean }) {
    const refreshedAt = once(latestRefreshAt);
    return {
      keys: page.keys,
      more: page.more,
      rows: page.rows.map(
        (row): LeaderboardEntry => ({
          address: row.address,
          platform_name: row.platform_name,
          total_volume: row.total_volume,
          total_pnl: row.pnl_source === "none" ? null : row.total_pnl,
          pnl_source: row.pnl_source,
          pnl_as_of: pnlAsOf(row.pnl_source, row.pnl_as_of, refreshedAt),
          win_rate: row.win_rate,
          z_score: row.z_score,
          total_bets: row.total_bets,
        }),
      ),
    };
  }

  return {
    /** The edge screener's ranking of (wallet, category) rows. */
    edges: createEdgeScreen(db).page,

    /** Wallets with more than WHALE_VOLUME_USD of total volume. */
    whales(
      q: { sort: WhaleSort; minVolume?: number; minResolvedBets?: number },
      limit: number,
      after?: RankKey,
    ): RankedPage {
      const params = { minVolume: q.minVolume ?? 0, minResolvedBets: q.minResolvedBets ?? 0 };
      return statsEntries(run<StatsEntryRow>(`whales:${q.sort}`, params, limit, after));
    },

    /** Wallets with a PnL figure (source not `none`), by the routed figure. */
    pnl(
      q: { direction: SortDirection; minResolvedBets: number },
      limit: number,
      after?: RankKey,
    ): RankedPage {
      const params = { minResolvedBets: q.minResolvedBets };
      return statsEntries(run<StatsEntryRow>(`pnl:${q.direction}`, params, limit, after));
    },

    /**
     * The category's figures: total_volume, total_pnl, win_rate and total_bets are the wallet's
     * in this category (z_score is the wallet's overall). Category PnL is the ledger's; for
     * market makers and whales it is withheld (pnl_source `none`) and they are not ranked by it.
     */
    category(
      category: LeaderboardCategory,
      q: { sort: CategorySort; minBets: number },
      limit: number,
      after?: RankKey,
    ): RankedPage {
      // One more than the bound: a count of `candidates + 1` means "too many to sort".
      const bound = { category, minBets: q.minBets, candidates: candidates + 1 };
      const few = qualifying.get(bound)! <= candidates;
      const params = few ? bound : { category, minBets: q.minBets };
      // The sort of a few orders by the whole address already; the walk reads again in the
      // exact order only when its page holds a tie of address prefixes.
      const page = few
        ? run<CategoryEntryRow>(`category-few:${q.sort}`, params, limit, after)
        : run<CategoryEntryRow>(
            `category:${q.sort}`,
            params,
            limit,
            after,
            `category-exact:${q.sort}`,
          );
      const refreshedAt = once(latestRefreshAt);
      return {
        keys: page.keys,
        more: page.more,
        rows: page.rows.map((row): LeaderboardEntry => {
          const trusted = categoryPnlTrusted(row.wallet_type, row.wallet_volume);
          return {
            address: row.address,
            platform_name: row.platform_name,
            total_volume: row.volume,
            total_pnl: trusted ? row.pnl : null,
            pnl_source: trusted ? "ledger" : "none",
            pnl_as_of: trusted ? pnlAsOf("ledger", row.refreshed_at, refreshedAt) : null,
            win_rate: row.win_rate,
            z_score: row.z_score,
            total_bets: row.bets,
          };
        }),
      };
    },
  };
}
