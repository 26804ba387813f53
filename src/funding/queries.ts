/**
 * Read queries over the funding-graph read models, shared by REST, MCP and the wallet dossier.
 * Each walks one index and stops at its LIMIT.
 */

import type * as v from "valibot";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import type {
  ClusterDetailSchema,
  ClusterMembershipSchema,
  SybilClusterSchema,
  WalletConnectionsSchema,
} from "../schemas/funding";
import { CLUSTER_ID_PREFIX } from "./clusters";
import { createGraphQuery } from "./graph";

export const CONNECTION_TYPES = [
  "funded_by",
  "funded",
  "exchange_withdrawal",
  "gas_provider",
  "shared_deposit",
  "pass_through",
  "coordinated_timing",
] as const;
export type WalletConnections = v.InferOutput<typeof WalletConnectionsSchema>;
export type WalletConnection = WalletConnections["connections"][number];
export type ClusterMembership = v.InferOutput<typeof ClusterMembershipSchema>;
export type SybilCluster = v.InferOutput<typeof SybilClusterSchema>;
export type ClusterDetail = v.InferOutput<typeof ClusterDetailSchema>;

export const CLUSTER_SORTS = ["members", "volume", "pnl"] as const;
export type ClusterSort = (typeof CLUSTER_SORTS)[number];

export const MAX_CLUSTER_MEMBERS_LISTED = 500;

interface ClusterRow {
  id: string;
  funder: string;
  member_count: number;
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  markets_traded: number | null;
  first_funded_at: number | null;
  last_active_at: number | null;
}

function toSybilCluster(row: ClusterRow): SybilCluster {
  return {
    id: row.id,
    funder: row.funder,
    member_count: row.member_count,
    total_volume: row.total_volume,
    total_pnl: row.total_pnl,
    win_rate: row.win_rate,
    markets_traded: row.markets_traded,
    first_funded_at: iso(row.first_funded_at),
    last_active_at: iso(row.last_active_at),
  };
}

const CLUSTER_COLUMNS = `id, funder, member_count, total_volume, total_pnl, win_rate, markets_traded,
  first_funded_at, last_active_at`;

interface ConnectionRow extends Omit<WalletConnection, "first_seen" | "last_seen"> {
  first_seen: number;
  last_seen: number;
}

export type FundingQueries = ReturnType<typeof createFundingQueries>;

export function createFundingQueries(db: Db) {
  const r = db.reader;
  // Both halves read their primary key backwards (most confident, then most recent first); the
  // merge sorts at most 2 × limit rows.
  const connections = r.prepare<{ address: string; limit: number }, ConnectionRow>(
    `SELECT * FROM (
       SELECT counterparty, type, direction, confidence, exchange, amount, first_seen, last_seen
         FROM wallet_connections WHERE address = +@address
        ORDER BY confidence DESC, last_seen DESC, type DESC, counterparty DESC, direction DESC
        LIMIT +@limit)
     UNION ALL
     SELECT * FROM (
       SELECT counterparty, 'coordinated_timing' AS type, 'both' AS direction, confidence,
              NULL AS exchange, NULL AS amount, first_seen, last_seen
         FROM timing_connections WHERE address = +@address
        ORDER BY confidence DESC, last_seen DESC, counterparty DESC
        LIMIT +@limit)
     ORDER BY confidence DESC, last_seen DESC, type DESC, counterparty DESC, direction DESC
     LIMIT +@limit`,
  );
  const clusterAsMember = r.prepare<[string], { id: string; member_count: number }>(
    `SELECT c.id, c.member_count FROM wallet_funding f JOIN sybil_clusters c ON c.funder = f.funder
      WHERE f.wallet = +?`,
  );
  const clusterByFunder = r.prepare<[string], ClusterRow>(
    `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters WHERE funder = ?`,
  );
  const clusterById = r.prepare<[string], ClusterRow>(
    `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters WHERE id = ?`,
  );
  const clustersBy = {
    members: r.prepare<[number], ClusterRow>(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY member_count DESC, id LIMIT +?`,
    ),
    volume: r.prepare<[number], ClusterRow>(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY total_volume DESC, id LIMIT +?`,
    ),
    pnl: r.prepare<[number], ClusterRow>(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY total_pnl DESC, id LIMIT +?`,
    ),
  } satisfies Record<ClusterSort, unknown>;
  const membersOf = r.prepare<[string, number], { wallet: string }>(
    `SELECT wallet FROM wallet_funding WHERE funder = +? ORDER BY first_funded_at, wallet LIMIT +?`,
  );

  function clusterOf(address: string): ClusterMembership | null {
    const wallet = address.toLowerCase();
    const member = clusterAsMember.get(wallet);
    if (member) return { id: member.id, role: "member", member_count: member.member_count };
    const funded = clusterByFunder.get(wallet);
    if (funded) return { id: funded.id, role: "funder", member_count: funded.member_count };
    return null;
  }

  return {
    /** The wallet's typed connections (most confident, then most recent first) and its cluster. */
    connections(address: string, limit: number): WalletConnections {
      const wallet = address.toLowerCase();
      const rows = connections.all({ address: wallet, limit });
      return {
        address: wallet,
        connections: rows.map((row) => ({
          ...row,
          first_seen: new Date(row.first_seen).toISOString(),
          last_seen: new Date(row.last_seen).toISOString(),
        })),
        cluster: clusterOf(wallet),
      };
    },

    /**
     * The sybil cluster a wallet belongs to: the one it was funded into (role member), else the
     * one it funds (role funder); null when neither. For the wallet dossier's funding_cluster.
     */
    clusterOf,

    sybilClusters(sort: ClusterSort, limit: number): SybilCluster[] {
      return clustersBy[sort].all(limit).map(toSybilCluster);
    },

    /** The cluster, its funder first and then its members in funding order, 500 entries at most. */
    cluster(id: string): ClusterDetail | undefined {
      if (!id.startsWith(CLUSTER_ID_PREFIX)) return undefined;
      const row = clusterById.get(id);
      if (!row) return undefined;
      const { id: clusterId, ...stats } = toSybilCluster(row);
      const members = membersOf
        .all(row.funder, MAX_CLUSTER_MEMBERS_LISTED - 1)
        .map((m) => ({ wallet: m.wallet, role: "member" as const }));
      return {
        id: clusterId,
        cluster_stats: stats,
        members: [{ wallet: row.funder, role: "funder" as const }, ...members],
        members_total: row.member_count + 1,
      };
    },

    /** The funder's funding tree, at most 500 nodes (see graph.ts). */
    graph: createGraphQuery(db),
  };
}
