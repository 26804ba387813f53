import { afterEach, describe, expect, it } from "vitest";
import { createGraphQuery, type GraphNode, MAX_GRAPH_NODES } from "../../src/funding/graph";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, T0 } from "./rows";

let t: TestApp;
afterEach(() => t?.close());

/**
 * The walk as docs/api.md states it, node by node: breadth first from the funder, each wallet's
 * funded wallets in funding order, at most 500 nodes. The query skips the wallets that fund no
 * one and reads stats with the funding rows; its answer must be this one.
 */
function walkNodeByNode(funder: string) {
  const w = t.db.writer;
  const children = w.prepare<
    [string],
    { wallet: string; first_amount: number; first_funded_at: number }
  >(
    `SELECT wallet, first_amount, first_funded_at FROM wallet_funding
      WHERE funder = ? ORDER BY first_funded_at, wallet`,
  );
  const stats = w.prepare<[string], { total_volume: number; total_pnl: number; win_rate: number }>(
    "SELECT total_volume, total_pnl, win_rate FROM wallet_stats WHERE address = ?",
  );
  const node = (
    address: string,
    role: GraphNode["role"],
    amount: number | null,
    at: number | null,
  ) => ({
    address,
    role,
    total_volume: stats.get(address)?.total_volume ?? null,
    total_pnl: stats.get(address)?.total_pnl ?? null,
    win_rate: stats.get(address)?.win_rate ?? null,
    funded_amount: amount,
    funded_at: at === null ? null : new Date(at).toISOString(),
  });
  const own = w.prepare("SELECT * FROM wallet_funding WHERE wallet = ?").get(funder) as any;
  const nodes = [node(funder, "funder", own?.first_amount ?? null, own?.first_funded_at ?? null)];
  const edges: unknown[] = [];
  const seen = new Set([funder]);
  const queue = [funder];
  let truncated = false;
  while (queue.length > 0 && !truncated) {
    const parent = queue.shift()!;
    for (const child of children.all(parent)) {
      if (seen.has(child.wallet)) continue;
      if (nodes.length === MAX_GRAPH_NODES) {
        truncated = true;
        break;
      }
      seen.add(child.wallet);
      queue.push(child.wallet);
      nodes.push(node(child.wallet, "proxy", child.first_amount, child.first_funded_at));
      edges.push({
        from: parent,
        to: child.wallet,
        amount: child.first_amount,
        timestamp: new Date(child.first_funded_at).toISOString(),
      });
    }
  }
  return { funder, node_count: nodes.length, truncated, nodes, edges };
}

/** A funding forest: `tree` maps a funder to its funded wallets, each with an amount and time. */
function fund(tree: [string, string, number][]) {
  const insertFunding = t.db.writer.prepare(
    `INSERT INTO wallet_funding (wallet, first_sender, first_amount, first_funded_at, funder)
     VALUES (?, ?, ?, ?, ?)`,
  );
  const insertStats = t.db.writer.prepare(
    `INSERT INTO wallet_stats (address, trade_count, total_bets, resolved_bets, wins, win_rate,
       total_volume, ledger_pnl, total_pnl, pnl_source, markets_traded, expected_wins,
       counter_consensus_wins, smart_money_score, confidence, breakdown, wallet_type,
       first_trade_at, last_trade_at)
     VALUES (?, 1, 1, 1, 1, ?, ?, 0, ?, 'ledger', 1, 0, 0, 50, 0.5, '{}', 'retail', 0, 0)`,
  );
  t.db.writer.transaction(() => {
    tree.forEach(([funder, wallet, at], i) => {
      insertFunding.run(wallet, funder, 10 + i, at, funder);
      // Every third wallet has traded.
      if (i % 3 === 0) insertStats.run(wallet, (i % 7) / 7, 100 * i, i - 50);
    });
  })();
}

describe("the cluster graph's walk", () => {
  it("answers what a node-by-node walk answers: leaves among funders, ties, a cycle to the root", () => {
    t = createTestApp();
    const root = addr("root");
    const tree: [string, string, number][] = [];
    // Funders and leaves interleaved over three levels; some siblings funded at the same time
    // (ordered by address), and a grandchild that funded the root back.
    for (let i = 0; i < 12; i++) {
      const child = addr("child", i);
      tree.push([root, child, T0 + (i % 4) * DAY]);
      if (i % 3 !== 1) continue;
      for (let j = 0; j < 5; j++) {
        const grandchild = addr(`gc${i}`, j);
        tree.push([child, grandchild, T0 + DAY + j]);
        if (j === 2) tree.push([grandchild, addr(`ggc${i}`, 0), T0 + 2 * DAY]);
      }
    }
    tree.push([addr("gc1", 4), root, T0 - DAY]);
    fund(tree);
    const graph = createGraphQuery(t.db);
    for (const funder of [root, addr("child", 4), addr("gc7", 2)]) {
      const outcome = graph(funder);
      expect(outcome.kind).toBe("graph");
      if (outcome.kind === "graph") expect(outcome.graph).toEqual(walkNodeByNode(funder));
    }
    const whole = graph(root);
    expect(whole.kind === "graph" && whole.graph.node_count).toBe(1 + 12 + 4 * 5 + 4);
  });

  it("cuts where the node-by-node walk cuts, inside a deeper level", () => {
    t = createTestApp();
    const root = addr("root");
    const tree: [string, string, number][] = [];
    for (let i = 0; i < 300; i++) {
      const child = addr("child", i);
      tree.push([root, child, T0 + i]);
      // Every 50th child funds 120 wallets: the 500th node falls among the second one's.
      if (i % 50 !== 7) continue;
      for (let j = 0; j < 120; j++) tree.push([child, addr(`gc${i}`, j), T0 + DAY + j]);
    }
    fund(tree);
    const outcome = createGraphQuery(t.db)(root);
    expect(outcome.kind).toBe("graph");
    if (outcome.kind !== "graph") return;
    expect(outcome.graph).toEqual(walkNodeByNode(root));
    expect(outcome.graph).toMatchObject({ node_count: MAX_GRAPH_NODES, truncated: true });
    expect(outcome.graph.nodes.at(-1)!.address).toBe(addr("gc57", 78));
  });
});
