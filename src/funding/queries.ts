/**
 * Read queries over the funding-graph read models, shared by REST, MCP and the wallet dossier.
 * Each walks one index and stops at its LIMIT; the cluster graph follows the funder index
 * breadth-first and stops at 500 nodes.
 */

import type { Db } from "../db/open";
import { CLUSTER_ID_PREFIX } from "./clusters";

export const CONNECTION_TYPES = [
  "funded_by",
  "funded",
  "exchange_withdrawal",
  "gas_provider",
  "shared_deposit",
  "pass_through",
  "coordinated_timing",
] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];

export interface WalletConnection {
  counterparty: string;
  type: ConnectionType;
  direction: "in" | "out" | "both";
  confidence: number;
  exchange: string | null;
  amount: number | null;
  first_seen: string;
  last_seen: string;
}

export interface ClusterMembership {
  id: string;
  role: "funder" | "member";
  member_count: number;
}

export interface WalletConnections {
  address: string;
  connections: WalletConnection[];
  cluster: ClusterMembership | null;
}

export interface SybilCluster {
  id: string;
  funder: string | null;
  member_count: number;
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  markets_traded: number | null;
  first_funded_at: string | null;
  last_active_at: string | null;
}

export interface ClusterDetail {
  id: string;
  cluster_stats: Omit<SybilCluster, "id">;
  members: { wallet: string; role: "funder" | "member" }[];
  members_total: number;
}

export interface GraphNode {
  address: string;
  role: "funder" | "proxy";
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  funded_amount: number | null;
  funded_at: string | null;
}

export interface ClusterGraph {
  funder: string;
  node_count: number;
  truncated: boolean;
  nodes: GraphNode[];
  edges: { from: string; to: string; amount: number; timestamp: string }[];
}

export type GraphOutcome =
  | { kind: "graph"; graph: ClusterGraph }
  | { kind: "refused"; message: string }
  | { kind: "not_found"; message: string };

export const CLUSTER_SORTS = ["members", "volume", "pnl"] as const;
export type ClusterSort = (typeof CLUSTER_SORTS)[number];

/** Polymarket's proxy wallet factory: funds nearly every wallet, so its graph is the platform. */
export const PROXY_FACTORY_ADDRESS = "0xab45c5a4b0c941a2f231c04c3f49182e1a254052";
export const MAX_GRAPH_NODES = 500;
/** A funder of this many wallets or more is a service, not a cluster: its graph is refused. */
export const MAX_GRAPH_FUNDED = 500;
export const MAX_CLUSTER_MEMBERS_LISTED = 500;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

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

interface FundedRow {
  wallet: string;
  first_amount: number;
  first_funded_at: number;
}

interface StatsRow {
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
}

export type FundingQueries = ReturnType<typeof createFundingQueries>;

export function createFundingQueries(db: Db) {
  const r = db.reader;
  // Both halves read their primary key backwards (most confident, then most recent first).
  const connections = r.prepare<{ address: string; limit: number }, ConnectionRow>(
    `SELECT * FROM (
       SELECT counterparty, type, direction, confidence, exchange, amount, first_seen, last_seen
         FROM wallet_connections WHERE address = @address
        ORDER BY confidence DESC, last_seen DESC, type DESC, counterparty DESC, direction DESC
        LIMIT @limit)
     UNION ALL
     SELECT * FROM (
       SELECT counterparty, 'coordinated_timing' AS type, 'both' AS direction, confidence,
              NULL AS exchange, NULL AS amount, first_seen, last_seen
         FROM timing_connections WHERE address = @address
        ORDER BY confidence DESC, last_seen DESC, counterparty DESC
        LIMIT @limit)
     ORDER BY confidence DESC, last_seen DESC, type DESC, counterparty DESC, direction DESC
     LIMIT @limit`,
  );
  const clusterAsMember = r.prepare<[string], { id: string; member_count: number }>(
    `SELECT c.id, c.member_count FROM wallet_funding f JOIN sybil_clusters c ON c.funder = f.funder
      WHERE f.wallet = ?`,
  );
  const clusterByFunder = r.prepare<[string], ClusterRow>(
    `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters WHERE funder = ?`,
  );
  const clusterById = r.prepare<[string], ClusterRow>(
    `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters WHERE id = ?`,
  );
  const clustersBy: Record<ClusterSort, ReturnType<typeof r.prepare<[number], ClusterRow>>> = {
    members: r.prepare(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY member_count DESC, id LIMIT ?`,
    ),
    volume: r.prepare(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY total_volume DESC, id LIMIT ?`,
    ),
    pnl: r.prepare(
      `SELECT ${CLUSTER_COLUMNS} FROM sybil_clusters ORDER BY total_pnl DESC, id LIMIT ?`,
    ),
  };
  const fundedBy = r.prepare<[string, number], FundedRow>(
    `SELECT wallet, first_amount, first_funded_at FROM wallet_funding
      WHERE funder = ? ORDER BY first_funded_at, wallet LIMIT ?`,
  );
  const fundedCount = r.prepare<[string, number], { n: number }>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM wallet_funding WHERE funder = ? LIMIT ?)`,
  );
  const fundingOf = r.prepare<[string], FundedRow>(
    "SELECT wallet, first_amount, first_funded_at FROM wallet_funding WHERE wallet = ?",
  );
  const statsOf = r.prepare<[string], StatsRow>(
    "SELECT total_volume, total_pnl, win_rate FROM wallet_stats WHERE address = ?",
  );
  const labelOf = r.prepare<[string], { kind: string; name: string }>(
    "SELECT kind, name FROM labels WHERE address = ?",
  );

  function clusterOf(address: string): ClusterMembership | null {
    const wallet = address.toLowerCase();
    const member = clusterAsMember.get(wallet);
    if (member) return { id: member.id, role: "member", member_count: member.member_count };
    const funded = clusterByFunder.get(wallet);
    if (funded) return { id: funded.id, role: "funder", member_count: funded.member_count };
    return null;
  }

  function node(address: string, role: GraphNode["role"], funding?: FundedRow): GraphNode {
    const stats = statsOf.get(address);
    return {
      address,
      role,
      total_volume: stats?.total_volume ?? null,
      total_pnl: stats?.total_pnl ?? null,
      win_rate: stats?.win_rate ?? null,
      funded_amount: funding?.first_amount ?? null,
      funded_at: iso(funding?.first_funded_at ?? null),
    };
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
      const { id: _, ...stats } = toSybilCluster(row);
      const members = fundedBy
        .all(row.funder, MAX_CLUSTER_MEMBERS_LISTED - 1)
        .map((m) => ({ wallet: m.wallet, role: "member" as const }));
      return {
        id: row.id,
        cluster_stats: stats,
        members: [{ wallet: row.funder, role: "funder" as const }, ...members],
        members_total: row.member_count + 1,
      };
    },

    /**
     * The funder's funding tree, breadth first: the wallets it funded, then the wallets those
     * funded, and so on, at most 500 nodes. The proxy factory (by address or label) and any
     * funder of 500 or more wallets are refused; an address that funds no wallet is not found.
     */
    graph(funderAddress: string): GraphOutcome {
      const funder = funderAddress.toLowerCase();
      const label = labelOf.get(funder);
      if (funder === PROXY_FACTORY_ADDRESS || label?.kind === "proxy_factory") {
        return {
          kind: "refused",
          message: `${funder} is the proxy wallet factory, which creates nearly every wallet: its graph would be the whole platform`,
        };
      }
      const funded = fundedCount.get(funder, MAX_GRAPH_FUNDED)?.n ?? 0;
      if (funded >= MAX_GRAPH_FUNDED) {
        return {
          kind: "refused",
          message: `${funder} funds ${MAX_GRAPH_FUNDED} or more wallets (a distributor or service, not a cluster); use /v1/clusters/by-id/{id} for its members`,
        };
      }
      if (funded === 0) {
        const labelled = label
          ? ` (labelled ${label.kind} ${label.name}; labelled senders are never funders)`
          : "";
        return {
          kind: "not_found",
          message: `${funder} is not the funder of any wallet${labelled}`,
        };
      }
      const nodes: GraphNode[] = [node(funder, "funder", fundingOf.get(funder))];
      const edges: ClusterGraph["edges"] = [];
      const seen = new Set([funder]);
      const queue = [funder];
      let truncated = false;
      while (queue.length > 0 && !truncated) {
        const parent = queue.shift() as string;
        const room = MAX_GRAPH_NODES - nodes.length;
        for (const child of fundedBy.all(parent, room + 1)) {
          if (seen.has(child.wallet)) continue;
          if (nodes.length === MAX_GRAPH_NODES) {
            truncated = true;
            break;
          }
          seen.add(child.wallet);
          queue.push(child.wallet);
          nodes.push(node(child.wallet, "proxy", child));
          edges.push({
            from: parent,
            to: child.wallet,
            amount: child.first_amount,
            timestamp: new Date(child.first_funded_at).toISOString(),
          });
        }
      }
      return {
        kind: "graph",
        graph: { funder, node_count: nodes.length, truncated, nodes, edges },
      };
    },
  };
}
