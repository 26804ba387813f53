/**
 * Sybil clusters (docs/methodology.md, Funding graph): two or more wallets sharing a funder. Stats come
 * from the members' wallet_stats rows where present; a cluster none of whose members traded has
 * null volume, PnL, win rate and markets.
 */

import type { Connection } from "../db/open";

export const CLUSTER_ID_PREFIX = "clu_";
export const MIN_CLUSTER_MEMBERS = 2;

/**
 * Rebuilds sybil_clusters from wallet_funding and the wallet read models; returns the count.
 * With `onlyWallets`, only the clusters those wallets belong to are rebuilt: a cluster's row is
 * a function of its members' rows alone, so the others stay as they are. (Used when nothing
 * but some wallets' stats changed; the transfer graph's rebuild needs the whole table.)
 */
export function rebuildClusters(conn: Connection, onlyWallets?: ReadonlySet<string>): number {
  let scope = "";
  let params: string[] = [];
  if (onlyWallets !== undefined) {
    // Funders of the wallets given, as a JSON array bound once per statement.
    const funders = conn
      .prepare(
        `SELECT DISTINCT funder FROM wallet_funding
          WHERE wallet IN (SELECT value FROM json_each(?)) AND funder IS NOT NULL`,
      )
      .pluck()
      .all(JSON.stringify([...onlyWallets])) as string[];
    if (funders.length === 0) return countClusters(conn);
    scope = "AND f.funder IN (SELECT value FROM json_each(?))";
    params = [JSON.stringify(funders)];
    conn
      .prepare("DELETE FROM sybil_clusters WHERE funder IN (SELECT value FROM json_each(?))")
      .run(...params);
  } else {
    conn.exec("DELETE FROM sybil_clusters");
  }
  conn
    .prepare(
      `INSERT INTO sybil_clusters (id, funder, member_count, total_volume, total_pnl,
         resolved_bets, wins, win_rate, markets_traded, first_funded_at, last_active_at)
       SELECT '${CLUSTER_ID_PREFIX}' || MIN(f.wallet), f.funder, COUNT(*), SUM(s.total_volume),
              SUM(s.total_pnl), COALESCE(SUM(s.resolved_bets), 0), COALESCE(SUM(s.wins), 0),
              CASE WHEN SUM(s.resolved_bets) > 0
                   THEN CAST(SUM(s.wins) AS REAL) / SUM(s.resolved_bets) END,
              NULL, MIN(f.first_funded_at), MAX(s.last_trade_at)
         FROM wallet_funding f LEFT JOIN wallet_stats s ON s.address = f.wallet
        WHERE f.funder IS NOT NULL ${scope}
        GROUP BY f.funder
       HAVING COUNT(*) >= ${MIN_CLUSTER_MEMBERS}`,
    )
    .run(...params);
  // Markets the members traded between them: one market traded by three members counts once.
  conn
    .prepare(
      `UPDATE sybil_clusters
          SET markets_traded = (SELECT COUNT(DISTINCT b.market_id)
                                  FROM wallet_funding f
                                  JOIN wallet_ids w ON w.address = f.wallet
                                  JOIN wallet_bets b ON b.wallet_id = w.id
                                 WHERE f.funder = sybil_clusters.funder)
        WHERE total_volume IS NOT NULL
          ${scope.replace("f.funder", "funder")}`,
    )
    .run(...params);
  return countClusters(conn);
}

function countClusters(conn: Connection): number {
  return (conn.prepare("SELECT count(*) FROM sybil_clusters").pluck().get() as number) ?? 0;
}
