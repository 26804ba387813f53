import * as v from "valibot";
import { CONNECTION_TYPES } from "../funding/queries";
import { AddressSchema, isoDateTime, nullableNumber } from "./shared";

/** Response schemas of the funding-graph and investigation endpoints. */
const int = v.pipe(v.number(), v.integer());
const nullableIso = v.nullable(isoDateTime);
export const ClusterIdSchema = v.pipe(v.string(), v.regex(/^clu_0x[0-9a-f]{40}$/));

export const ClusterMembershipSchema = v.object({
  id: ClusterIdSchema,
  role: v.picklist(["funder", "member"]),
  member_count: int,
});

export const WalletConnectionsSchema = v.object({
  address: AddressSchema,
  connections: v.array(
    v.object({
      counterparty: AddressSchema,
      type: v.picklist(CONNECTION_TYPES),
      direction: v.picklist(["in", "out", "both"]),
      confidence: v.pipe(v.number(), v.minValue(0), v.maxValue(1)),
      exchange: v.nullable(v.string()),
      amount: nullableNumber,
      first_seen: isoDateTime,
      last_seen: isoDateTime,
    }),
  ),
  cluster: v.nullable(ClusterMembershipSchema),
});

const clusterStatsEntries = {
  funder: v.nullable(AddressSchema),
  member_count: int,
  total_volume: nullableNumber,
  total_pnl: nullableNumber,
  win_rate: nullableNumber,
  markets_traded: v.nullable(int),
  first_funded_at: nullableIso,
  last_active_at: nullableIso,
};

export const SybilClusterSchema = v.object({ id: ClusterIdSchema, ...clusterStatsEntries });

export const SybilClustersSchema = v.object({ clusters: v.array(SybilClusterSchema) });

export const ClusterDetailSchema = v.object({
  id: ClusterIdSchema,
  cluster_stats: v.object(clusterStatsEntries),
  members: v.array(v.object({ wallet: AddressSchema, role: v.picklist(["funder", "member"]) })),
  members_total: int,
});

export const ClusterGraphSchema = v.object({
  funder: AddressSchema,
  node_count: int,
  truncated: v.boolean(),
  nodes: v.array(
    v.object({
      address: AddressSchema,
      role: v.picklist(["funder", "proxy"]),
      total_volume: nullableNumber,
      total_pnl: nullableNumber,
      win_rate: nullableNumber,
      funded_amount: nullableNumber,
      funded_at: nullableIso,
    }),
  ),
  edges: v.array(
    v.object({
      from: AddressSchema,
      to: AddressSchema,
      amount: v.number(),
      timestamp: isoDateTime,
    }),
  ),
});

const summaryEntries = {
  id: int,
  type: v.picklist(["wallet", "cluster"]),
  category: v.string(),
  title: v.string(),
  status: v.picklist(["open", "dismissed"]),
  wallet_count: int,
  resolved_bets: int,
  win_rate: v.number(),
  edge: v.number(),
  p_value: v.number(),
  created_at: isoDateTime,
  updated_at: isoDateTime,
};

export const InvestigationSummarySchema = v.object(summaryEntries);

export const InvestigationSchema = v.object({
  ...summaryEntries,
  summary: v.string(),
  wallets: v.array(
    v.object({
      address: AddressSchema,
      role: v.string(),
      resolved_bets: int,
      wins: int,
      win_rate: nullableNumber,
      total_pnl: nullableNumber,
    }),
  ),
  evidence: v.array(
    v.object({
      market_slug: v.string(),
      market_title: v.nullable(v.string()),
      side: v.picklist(["YES", "NO"]),
      entry_price: nullableNumber,
      usd_value: v.number(),
      outcome: v.nullable(v.picklist(["YES", "NO"])),
      won: v.boolean(),
      hours_before_resolution: nullableNumber,
    }),
  ),
  stats: v.object({
    n: int,
    wins: int,
    expected_wins: v.number(),
    win_rate: v.number(),
    base_rate: v.number(),
    edge: v.number(),
    p_value: v.number(),
    method: v.string(),
  }),
});
