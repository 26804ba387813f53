/**
 * The funding-graph refresh: one plain function the refresh job calls after the wallet read
 * models (wallet_bets, wallet_stats, wallet_category_stats, category_base_rates) are rebuilt.
 * Everything runs in one write transaction (a savepoint when the caller already holds one), so
 * readers see the previous complete graph until it commits.
 *
 * The transfer-derived tables (funders, transfer connections) are rebuilt only when transfers or
 * labels changed since the last build. Coordinated timing reads every bet (millions on a large
 * installation) for links that are only leads, so it is rebuilt at most once an hour. The
 * clusters of the wallets the refresh recomputed are rebuilt every time (all of them with the
 * graph); investigations when their inputs (category base rates, the graph) changed, and at
 * least every 15 minutes.
 */

import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Connection, Db } from "../db/open";
import type { RefreshExtension } from "../refresh/refresh";
import type { PendingPairs } from "../refresh/workers/one-shot";
import { rebuildClusters } from "./clusters";
import { type InvestigationCounts, refreshInvestigations } from "./investigations";
import { type CoordinatedPair, readCoordinatedPairs, storeTimingConnections } from "./timing";
import { rebuildTransferGraph, type TransferGraphCounts } from "./transfers";

export interface RefreshFundingOptions {
  /** Rebuild everything now: the transfer graph even when unchanged, coordinated timing early. */
  force?: boolean;
  /** The wallets whose read models the refresh recomputed; without it, every cluster is. */
  changedWallets?: ReadonlySet<string>;
  /**
   * Where the coordinated pairs come from when coordinated timing is due: read elsewhere
   * meanwhile (coordinatedPairsInWorker, src/refresh/workers/one-shot.ts). Without it they are read
   * here, on the writer's connection.
   */
  coordinatedPairs?: () => CoordinatedPair[];
}

/** Coordinated timing is rebuilt when it is this old (or on force). */
export const COORDINATED_TIMING_EVERY_MS = 3_600_000;

export interface FundingRefreshSummary {
  /** Whether the transfer-derived tables were rebuilt or left as they were. */
  transfer_graph: "rebuilt" | "unchanged";
  /** Whether coordinated timing was rebuilt (hourly) or left as it was. */
  coordinated_timing: "rebuilt" | "unchanged";
  funded_wallets: number;
  deposit_addresses: number | null;
  pass_through_distributors: number | null;
  transfer_connections: number | null;
  sybil_clusters: number;
  coordinated_pairs: number;
  /** The screen's counts, or "unchanged" when its inputs did not move and it is not due. */
  investigations: InvestigationCounts | "unchanged";
  /** Elapsed milliseconds per step, for the job's log. */
  timings: Record<string, number>;
}

const FINGERPRINT_KEY = "transfer_graph_fingerprint";
const TIMING_KEY = "coordinated_timing_at";
const INVESTIGATIONS_KEY = "investigations_at";
const INVESTIGATION_INPUTS_KEY = "investigation_inputs";

/** Investigations are re-screened at least this often, and whenever their inputs changed. */
export const INVESTIGATIONS_EVERY_MS = 15 * 60_000;

/**
 * The category base rates: their counts move with every resolved bet. (Clusters move only with
 * the transfer graph, whose rebuild triggers a screen by itself.)
 */
function investigationInputs(conn: Connection): string {
  const hash = createHash("sha256");
  const rows = conn
    .prepare("SELECT category, resolved_bets, wins FROM category_base_rates ORDER BY category")
    .raw()
    .iterate() as IterableIterator<unknown[]>;
  for (const row of rows) hash.update(row.join("\u0000")).update("\u0001");
  return hash.digest("hex");
}

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
    const state = conn.prepare<[string], { value: string }>(
      "SELECT value FROM funding_state WHERE key = ?",
    );
    const remember = conn.prepare<[string, string]>(
      `INSERT INTO funding_state (key, value) VALUES (?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
    const fingerprint = timed("fingerprint", () => inputsFingerprint(conn));
    let graph: TransferGraphCounts | null = null;
    if (opts.force || state.get(FINGERPRINT_KEY)?.value !== fingerprint) {
      graph = timed("transfer_graph", () => rebuildTransferGraph(conn, timed));
      remember.run(FINGERPRINT_KEY, fingerprint);
    }
    // Only the recomputed wallets' clusters can have moved, unless the graph itself did.
    const clusters = timed("clusters", () =>
      rebuildClusters(
        conn,
        opts.force || graph !== null || opts.changedWallets === undefined
          ? undefined
          : opts.changedWallets,
      ),
    );
    const timingDue = coordinatedTimingDue(db, now, opts.force === true);
    if (timingDue) {
      const pairs = timed("coordinated_timing", () =>
        (opts.coordinatedPairs ?? (() => readCoordinatedPairs(conn)))(),
      );
      timed("coordinated_timing_store", () => storeTimingConnections(conn, pairs));
      remember.run(TIMING_KEY, String(now));
    }
    const pairs = conn.prepare("SELECT COUNT(*) / 2 AS n FROM timing_connections").get() as {
      n: number;
    };
    // Investigations test resolved bets against category base rates: they move when those or
    // the clusters do. Otherwise only the cases' PnL drifts with prices, and re-screening every
    // wallet in profit (seconds on a large installation) each minute would buy little.
    const inputs = investigationInputs(conn);
    const screenedAt = Number(state.get(INVESTIGATIONS_KEY)?.value ?? Number.NaN);
    const screenDue =
      opts.force ||
      graph !== null ||
      state.get(INVESTIGATION_INPUTS_KEY)?.value !== inputs ||
      !Number.isFinite(screenedAt) ||
      now - screenedAt >= INVESTIGATIONS_EVERY_MS ||
      now < screenedAt;
    let investigations: InvestigationCounts | "unchanged" = "unchanged";
    if (screenDue) {
      investigations = timed("investigations", () => refreshInvestigations(conn, now));
      remember.run(INVESTIGATIONS_KEY, String(now));
      remember.run(INVESTIGATION_INPUTS_KEY, inputs);
    }
    const funded = conn
      .prepare("SELECT COUNT(*) AS n FROM wallet_funding WHERE funder IS NOT NULL")
      .get() as { n: number };
    return {
      transfer_graph: graph ? "rebuilt" : "unchanged",
      coordinated_timing: timingDue ? "rebuilt" : "unchanged",
      funded_wallets: funded.n,
      deposit_addresses: graph?.deposit_addresses ?? null,
      pass_through_distributors: graph?.pass_through_distributors ?? null,
      transfer_connections: graph?.connections ?? null,
      sybil_clusters: clusters,
      coordinated_pairs: pairs.n,
      investigations,
      timings,
    } satisfies FundingRefreshSummary;
  })();
}

/** Whether this run rebuilds coordinated timing: an hour after the last (or never), or on force. */
export function coordinatedTimingDue(db: Db, now: number, force: boolean): boolean {
  const value = db.writer
    .prepare<[string], string>("SELECT value FROM funding_state WHERE key = ?")
    .pluck()
    .get(TIMING_KEY);
  const timingAt = Number(value ?? Number.NaN);
  return (
    force ||
    !Number.isFinite(timingAt) ||
    now - timingAt >= COORDINATED_TIMING_EVERY_MS ||
    now < timingAt
  );
}

/**
 * The funding graph as a refresh extension (src/refresh/refresh.ts). When coordinated timing is
 * due, `readPairs` starts reading the pairs as soon as the read models are committed, so that
 * the reading (seconds on a large installation: every bet) runs beside the extensions before
 * this one and the transfer graph, and this run only waits for what is left of it.
 */
export function fundingRefreshExtension(readPairs: (db: Db) => PendingPairs): RefreshExtension {
  let reading: PendingPairs | null = null;
  return {
    name: "funding",
    begin(db, now, change) {
      reading = coordinatedTimingDue(db, now, change.full) ? readPairs(db) : null;
      return () => {
        reading?.cancel();
        reading = null;
      };
    },
    run(db, now, change) {
      const pairs = reading;
      return refreshFunding(db, now, {
        force: change.full,
        changedWallets: change.wallets,
        ...(pairs ? { coordinatedPairs: () => pairs.take() } : {}),
      });
    },
  };
}

/**
 * Transfers are insert-only (keyed by tx hash and log index; nothing deletes or updates one), and
 * each insert takes the next integer id, so their highest id identifies their content. Their
 * count said nothing more, and walked an index of every transfer on every run: 25–34 ms on the
 * large world (330k transfers), every 30 s in `serve`. Labels can change in place, so they are
 * hashed whole.
 */
function inputsFingerprint(conn: Connection): string {
  const maxId = conn.prepare("SELECT COALESCE(MAX(id), 0) FROM transfers").pluck().get() as number;
  const hash = createHash("sha256");
  for (const row of conn
    .prepare("SELECT address, kind, name FROM labels ORDER BY address")
    .raw()
    .iterate() as IterableIterator<string[]>) {
    hash.update(row.join("\u0000")).update("\u0001");
  }
  // The form databases already store, `count:highest id:labels' hash`, so an upgrade keeps their
  // graph (7 s to rebuild on the large world): with no transfer deleted and each taking the next
  // id, their count is their highest id.
  return `${maxId}:${maxId}:${hash.digest("hex")}`;
}
