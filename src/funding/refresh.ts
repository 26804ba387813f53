/**
 * The funding-graph refresh: one plain function the refresh job calls after the wallet read
 * models (wallet_bets, wallet_stats, wallet_category_stats, category_base_rates) are rebuilt.
 * Everything runs in one write transaction (a savepoint when the caller already holds one), so
 * readers see the previous complete graph until it commits.
 *
 * The transfer-derived tables (funders, transfer connections) are rebuilt only when transfers or
 * labels changed since the last build; clusters, coordinated timing and investigations, which
 * depend on trades, are rebuilt every time.
 */

import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Connection, Db } from "../db/open";
import { rebuildClusters } from "./clusters";
import { type InvestigationCounts, refreshInvestigations } from "./investigations";
import { rebuildTimingConnections } from "./timing";
import { rebuildTransferGraph, type TransferGraphCounts } from "./transfers";

export interface RefreshFundingOptions {
  /** Rebuild the transfer-derived tables even when transfers and labels look unchanged. */
  force?: boolean;
}

export interface FundingRefreshSummary {
  /** Whether the transfer-derived tables were rebuilt or left as they were. */
  transfer_graph: "rebuilt" | "unchanged";
  funded_wallets: number;
  deposit_addresses: number | null;
  pass_through_distributors: number | null;
  transfer_connections: number | null;
  sybil_clusters: number;
  coordinated_pairs: number;
  investigations: InvestigationCounts;
  /** Elapsed milliseconds per step, for the job's log. */
  timings: Record<string, number>;
}

const FINGERPRINT_KEY = "transfer_graph_fingerprint";

export function refreshFunding(
  db: Db,
  now: number,
  opts: RefreshFundingOptions = {},
): FundingRefreshSummary {
  const conn = db.writer;
  const timings: Record<string, number> = {};
  const timed = <T>(name: string, step: () => T): T => {
    const start = performance.now();
    const result = step();
    timings[name] = Math.round(performance.now() - start);
    return result;
  };
  return conn.transaction(() => {
    const fingerprint = timed("fingerprint", () => inputsFingerprint(conn));
    const previous = conn
      .prepare<[string], { value: string }>("SELECT value FROM funding_state WHERE key = ?")
      .get(FINGERPRINT_KEY)?.value;
    let graph: TransferGraphCounts | null = null;
    if (opts.force || previous !== fingerprint) {
      graph = timed("transfer_graph", () => rebuildTransferGraph(conn));
      conn
        .prepare(
          `INSERT INTO funding_state (key, value) VALUES (?, ?)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        )
        .run(FINGERPRINT_KEY, fingerprint);
    }
    const clusters = timed("clusters", () => rebuildClusters(conn));
    const pairs = timed("coordinated_timing", () => rebuildTimingConnections(conn));
    const investigations = timed("investigations", () => refreshInvestigations(conn, now));
    const funded = conn
      .prepare("SELECT COUNT(*) AS n FROM wallet_funding WHERE funder IS NOT NULL")
      .get() as { n: number };
    return {
      transfer_graph: graph ? "rebuilt" : "unchanged",
      funded_wallets: funded.n,
      deposit_addresses: graph?.deposit_addresses ?? null,
      pass_through_distributors: graph?.pass_through_distributors ?? null,
      transfer_connections: graph?.connections ?? null,
      sybil_clusters: clusters,
      coordinated_pairs: pairs,
      investigations,
      timings,
    } satisfies FundingRefreshSummary;
  })();
}

/**
 * Transfers are insert-only (keyed by tx hash and log index), so their count and highest id
 * identify their content; labels can change in place, so they are hashed whole.
 */
function inputsFingerprint(conn: Connection): string {
  const transfers = conn
    .prepare("SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS maxId FROM transfers")
    .get() as { n: number; maxId: number };
  const hash = createHash("sha256");
  for (const row of conn
    .prepare("SELECT address, kind, name FROM labels ORDER BY address")
    .raw()
    .iterate() as IterableIterator<string[]>) {
    hash.update(row.join("\u0000")).update("\u0001");
  }
  return `${transfers.n}:${transfers.maxId}:${hash.digest("hex")}`;
}
