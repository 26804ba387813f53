/**
 * The cluster graph: a funder's funding tree, walked breadth first along the funder index of
 * wallet_funding and cut at 500 nodes. Each step is one index range with a LIMIT that brings
 * the children's stats and whether each funds anyone, so only funders are walked: a cluster is
 * mostly leaves, and a statement per leaf (its empty range) and per node (its stats) was most of
 * an answer's cost. Nothing is built from raw transfers per request.
 */

import type * as v from "valibot";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import type { ClusterGraphSchema } from "../schemas/funding";

export type ClusterGraph = v.InferOutput<typeof ClusterGraphSchema>;
export type GraphNode = ClusterGraph["nodes"][number];

export type GraphOutcome =
  | { kind: "graph"; graph: ClusterGraph }
  | { kind: "refused"; message: string }
  | { kind: "not_found"; message: string };

/** Polymarket's proxy wallet factory: funds nearly every wallet, so its graph is the platform. */
export const PROXY_FACTORY_ADDRESS = "0xab45c5a4b0c941a2f231c04c3f49182e1a254052";
export const MAX_GRAPH_NODES = 500;
/** A funder of this many wallets or more is a service, not a cluster: its graph is refused. */
export const MAX_GRAPH_FUNDED = 500;

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

/** A funded wallet with its stats, and 1 when it funds wallets in turn. */
interface ChildRow extends FundedRow, StatsRow {
  funds: 0 | 1;
}

/**
 * The funder's funding tree, breadth first: the wallets it funded, then the wallets those
 * funded, and so on, at most 500 nodes. The proxy factory (by address or label) and any
 * funder of 500 or more wallets are refused; an address that funds no wallet is not found.
 */
export function createGraphQuery(db: Db) {
  const r = db.reader;
  const fundedBy = r.prepare<[string, number], ChildRow>(
    `SELECT f.wallet, f.first_amount, f.first_funded_at, s.total_volume, s.total_pnl, s.win_rate,
            EXISTS (SELECT 1 FROM wallet_funding g WHERE g.funder = f.wallet) AS funds
       FROM wallet_funding f LEFT JOIN wallet_stats s ON s.address = f.wallet
      WHERE f.funder = +? ORDER BY f.first_funded_at, f.wallet LIMIT +?`,
  );
  const fundedCount = r.prepare<[string, number], { n: number }>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM wallet_funding WHERE funder = ? LIMIT +?)`,
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

  function node(
    address: string,
    role: GraphNode["role"],
    funding: FundedRow | undefined,
    stats: StatsRow | undefined,
  ): GraphNode {
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

  return (funderAddress: string): GraphOutcome => {
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
    const nodes: GraphNode[] = [node(funder, "funder", fundingOf.get(funder), statsOf.get(funder))];
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
        // A wallet that funds no one has no children to look for.
        if (child.funds === 1) queue.push(child.wallet);
        const proxy = node(child.wallet, "proxy", child, child);
        nodes.push(proxy);
        edges.push({
          from: parent,
          to: child.wallet,
          amount: child.first_amount,
          // The node's funded_at: the same instant, formatted once.
          timestamp: proxy.funded_at!,
        });
      }
    }
    return {
      kind: "graph",
      graph: { funder, node_count: nodes.length, truncated, nodes, edges },
    };
  };
}
