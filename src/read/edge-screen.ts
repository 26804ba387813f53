import type * as v from "valibot";
import type { Db, Statement } from "../db/open";
import type { WalletEdgeSchema } from "../schemas/wallets";
import { prefixKeyset, prefixTie } from "./prefix-ties";

/**
 * The edge screener (GET /v1/signals/screen): (wallet, category) rows ranked by edge, the
 * wallet's win rate in the category minus its overall win rate, largest first, ties by address
 * then category. `bets` is the wallet's resolved bets in the category (the sample behind the
 * edge, which min_bets filters on); `total_pnl` is the wallet's overall routed PnL.
 */
export type WalletEdge = v.InferOutput<typeof WalletEdgeSchema>;

export interface EdgeFilter {
  minEdge?: number;
  minBets?: number;
  category?: string;
}

/** Keyset position: the last row's edge, address and category. */
export type EdgeKey = [edge: number, address: string, category: string];

const COLUMNS = `w.address, s.platform_name, c.category, c.win_rate AS category_win_rate,
  c.global_win_rate, c.edge, c.resolved_bets AS bets,
  CASE WHEN s.pnl_source = 'none' THEN NULL ELSE s.total_pnl END AS total_pnl`;

/** Every shape of the query, by name; each walks one index of edges in serving order. */
export function edgeScreenSql(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const byCategory of [false, true]) {
    for (const [keyed, exact] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ]) {
      // The indexes order ties by the address's prefix (sql/0024), then (across categories) by
      // category. Within one category the index is (category, edge DESC, address_prefix): the
      // category is fixed.
      const after = prefixKeyset(
        "c.edge",
        "@edge",
        "@address",
        byCategory ? "" : "OR (w.address = @address AND c.category > @category)",
      );
      // `exact` also sorts each run of an equal prefix by the whole address (then category),
      // read when a page holds one (prefix-ties.ts); otherwise the index's order is served.
      const name = `${byCategory ? "category" : "all"}${exact ? "-exact" : ""}${keyed ? ":keyed" : ""}`;
      const order = exact
        ? `c.edge DESC, c.address_prefix, w.address${byCategory ? "" : ", c.category"}`
        : `c.edge DESC, c.address_prefix${byCategory ? "" : ", c.category"}`;
      out[name] = `SELECT ${COLUMNS}
        FROM wallet_category_stats c
             INDEXED BY ${byCategory ? "wallet_category_by_category" : "wallet_category_by_edge"}
        CROSS JOIN wallet_ids w ON w.id = c.wallet_id
        CROSS JOIN wallet_stats s ON s.address = w.address
       WHERE c.edge IS NOT NULL AND c.edge >= @minEdge AND c.resolved_bets >= @minBets
         ${byCategory ? "AND c.category = @filterCategory" : ""}
         ${keyed ? after : ""}
       ORDER BY ${order} LIMIT +@limit`;
    }
  }
  return out;
}

export type EdgeScreen = ReturnType<typeof createEdgeScreen>;

export function createEdgeScreen(db: Db) {
  const statements = new Map<string, Statement<[Record<string, unknown>], WalletEdge>>();
  for (const [name, sql] of Object.entries(edgeScreenSql())) {
    statements.set(name, db.reader.prepare(sql));
  }
  return {
    page(
      filter: EdgeFilter,
      limit: number,
      after?: EdgeKey,
    ): { rows: WalletEdge[]; keys: EdgeKey[]; more: boolean } {
      const scope = filter.category === undefined ? "all" : "category";
      const keyed = after ? ":keyed" : "";
      const params: Record<string, unknown> = {
        minEdge: filter.minEdge ?? -1,
        minBets: filter.minBets ?? 0,
        limit: limit + 1,
      };
      if (filter.category !== undefined) params.filterCategory = filter.category;
      if (after) {
        params.edge = after[0];
        params.address = after[1];
        if (filter.category === undefined) params.category = after[2];
      }
      let rows = statements.get(`${scope}${keyed}`)!.all(params);
      if (prefixTie(rows, (row) => row.edge))
        rows = statements.get(`${scope}-exact${keyed}`)!.all(params);
      const page = rows.slice(0, limit);
      return {
        rows: page,
        keys: page.map((row): EdgeKey => [row.edge!, row.address, row.category!]),
        more: rows.length > limit,
      };
    },
  };
}
