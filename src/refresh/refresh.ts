import { type Db, overridePragmas } from "../db/open";
import { fullRebuild, withBulkReads } from "./full";
import { incremental, MARK_BATCH, WALLETS_IN_WORKER_FROM } from "./incremental";
import { type PassResult, stopwatch } from "./pass";
import { type CheckpointResult, checkpointInWorker, type Pending } from "./workers/one-shot";

export { MARK_BATCH, MARK_MAX_AGE_MS } from "./incremental";

export interface RefreshOptions {
  /** Rebuild everything instead of only what changed since the last run. */
  full?: boolean;
  /** More read models to refresh in the same transaction (e.g. the funding graph). */
  extensions?: RefreshExtension[];
  /** Stale marks renewed per run (MARK_BATCH). */
  markBatch?: number;
  /**
   * From how many wallets an incremental run models them in a worker thread
   * (WALLETS_IN_WORKER_FROM); only with a database file.
   */
  walletsInWorkerFrom?: number;
  /** When a run that would be incremental rebuilds in full instead (CATCH_UP). */
  catchUp?: CatchUpRule;
}

/**
 * A run that would recompute at least `wallets` wallets, and at least `share` of all of them,
 * rebuilds in full instead: after a large import or backfill, an incremental run recomputes
 * nearly every wallet from its bets one by one, which costs about twice what a full rebuild's
 * sorted passes do, at more memory. With the built binary and the jobs process's heap flags:
 * after 1M new fills into the medium world (every one of its 220,206 wallets to recompute) the
 * incremental run took 52.0 s and 1.13 GB, a full rebuild 23.3 s and 0.66 GB; into the large
 * world (393,893 wallets) 260 s and 1.36 GB against 128.9 s and 1.04 GB. Per wallet, the
 * incremental run cost 0.24 ms on the medium world and 0.66 ms on the large one, so the two
 * break even at 45–50% of the wallets; a third leaves room for the full rebuild's smaller
 * memory. Below `wallets` either kind takes seconds, and small worlds (the tests') stay
 * incremental.
 */
export interface CatchUpRule {
  wallets: number;
  share: number;
}
export const CATCH_UP: CatchUpRule = { wallets: 20_000, share: 1 / 3 };

/** Why a run that would have been incremental rebuilt in full: wallets to recompute, of all. */
export interface CatchUp {
  wallets: number;
  of: number;
}

/**
 * The wallets a run would recompute, at least: those with fills past the watermark, and those
 * marked dirty. Each side is read by its own key: left to itself, SQLite merged the UNION in
 * wallet order, walking all of fills_by_wallet (11M entries on the large world) and all of
 * wallet_ids, 370–520 ms before every run; read by id and from the dirty marks, 3 ms.
 */
export const CATCH_UP_COUNT = `SELECT count(*) FROM (
  SELECT wallet_id FROM fills NOT INDEXED WHERE id > ?
  UNION SELECT w.id FROM dirty_wallets d CROSS JOIN wallet_ids w ON w.address = d.address)`;

/**
 * The wallets the next incremental run would recompute at least (those with fills past the
 * watermark, and those marked dirty), against every wallet there is, when `rule` says that is
 * a catch-up; otherwise null. Cheap when it is not: the largest wallet id first, then only the
 * run's new fills and dirty marks.
 */
function catchUpOf(db: Db, watermark: number, rule: CatchUpRule): CatchUp | null {
  const w = db.writer;
  const of = (w.prepare("SELECT max(id) FROM wallet_ids").pluck().get() as number | null) ?? 0;
  if (of < rule.wallets) return null;
  const wallets = w.prepare<[number], number>(CATCH_UP_COUNT).pluck().get(watermark)!;
  return wallets >= rule.wallets && wallets >= rule.share * of ? { wallets, of } : null;
}

/** What a refresh changed, as its extensions see it. */
export interface RefreshChange {
  full: boolean;
  wallets: ReadonlySet<string>;
  /**
   * Of `wallets`, those whose entry in wallet search can have moved: named before or after the
   * run, with a changed name or total volume (the entry's text and its volume group). When
   * absent, any of `wallets` can have.
   */
  searchMoved?: ReadonlySet<string>;
}

/**
 * A further read model refreshed after the wallet and market models are committed, each in a
 * transaction of its own, in order.
 */
export interface RefreshExtension {
  name: string;
  /**
   * Called for every extension once the wallet and market models are committed, before the
   * first extension runs: starts work that can go on off this thread meanwhile (a worker
   * thread reading what was just committed). Returns what stops that work, called when the
   * refresh ends, whether `run` took its result or an error came first.
   */
  begin?(db: Db, now: number, change: RefreshChange): () => void;
  run(db: Db, now: number, change: RefreshChange): unknown;
}

export interface RefreshSummary {
  kind: "full" | "incremental";
  as_of: string;
  wallets: number;
  markets: number;
  fills_read: number;
  duration_ms: number;
  /** Where the time went, ms: each step of the pass, then the commit and each extension. */
  phases: Record<string, number>;
  extensions: Record<string, unknown>;
  /**
   * The WAL checkpoint of a full rebuild, or of an incremental run of at least
   * `walletsInWorkerFrom` wallets, run in a worker thread after its commit: the WAL's frames and
   * how many were copied back (what no reader still needed), or why it failed.
   */
  wal_checkpoint?: CheckpointResult | { error: string };
  /** Set when the run rebuilt in full because it would have recomputed so many wallets (CATCH_UP). */
  catch_up?: CatchUp;
}

/**
 * Rebuilds the read models (sql/0004, sql/0007) from trades, in one write transaction so readers
 * see either the previous state or the new one, never a mix.
 *
 * A run is full when asked (`full`), on the first refresh of a database, and on a catch-up: when
 * an incremental run would recompute so many wallets (`catchUp`, CATCH_UP) that rebuilding is
 * faster. Otherwise it is incremental.
 *
 * An incremental run recomputes what a full rebuild would change, from stored per-bet facts:
 * - the bets of (wallet, market) pairs with new fills (trades past the last run's id
 *   watermark), every bet in a market whose outcome or facts changed, bets whose entry has just
 *   become 24 hours old (their favourable move gains a price), and bets whose 24-hour-later price
 *   a back-dated fill changed;
 * - the wallets of those bets, wallets marked dirty (funding, labels, platform PnL), and up to
 *   `markBatch` wallets whose mark is older than MARK_MAX_AGE_MS, each from its stored bets with
 *   its open positions marked now;
 * - markets with new fills (appended to when the fills come after all earlier ones, rebuilt from
 *   their fills otherwise), markets whose outcome or facts changed, markets of wallets whose
 *   standing (Bayesian win rate, whale, insider) changed, and markets whose 30-day sentiment
 *   window has just dropped or gained fills.
 * A wallet that is not recomputed keeps its marks: its ledger PnL (and what follows from it,
 * the ROI signal, score and type) is exact as of its refreshed_at, which is its pnl_as_of.
 * Category base rates move by the difference between each recomputed bet's old and new state.
 */
export function refreshReadModels(
  db: Db,
  now: number,
  options: RefreshOptions = {},
): RefreshSummary {
  const started = performance.now();
  const w = db.writer;
  const last = w
    .prepare<[], { as_of: number; max_trade_id: number | null }>(
      "SELECT started_at AS as_of, max_trade_id FROM refresh_runs ORDER BY id DESC LIMIT 1",
    )
    .get();
  const firstOrAsked =
    options.full === true || last === undefined || last.max_trade_id === null || last.as_of > now;
  const catchUp = firstOrAsked
    ? null
    : catchUpOf(db, last!.max_trade_id!, options.catchUp ?? CATCH_UP);
  const full = firstOrAsked || catchUp !== null;
  // Choosing the kind of run (the last run, the catch-up count) is timed as the phase `plan`,
  // so the phases account for the whole duration.
  const plan = Math.round(performance.now() - started);
  const walletsInWorkerFrom = options.walletsInWorkerFrom ?? WALLETS_IN_WORKER_FROM;
  let maxTradeId = 0;
  let passEnded = 0;
  let walCheckpoint: RefreshSummary["wal_checkpoint"];
  // Set by the run when its pages are to be copied back by a worker thread; the writer's own
  // checkpoints resume once the run is recorded (below).
  let restoreCheckpoints = null as (() => void) | null;
  const refresh = () => {
    const run = w.transaction(() => {
      maxTradeId = (w.prepare("SELECT max(id) FROM fills").pluck().get() as number | null) ?? 0;
      const pass = full
        ? fullRebuild(db, now)
        : incremental(db, now, {
            lastRun: last!.as_of,
            watermark: last!.max_trade_id!,
            maxTradeId,
            markBatch: options.markBatch ?? MARK_BATCH,
            walletsInWorkerFrom,
          });
      passEnded = performance.now();
      // A large run's commit would copy its pages back into the database on this thread: a
      // full rebuild's gigabytes (3–4 s on the large world), an incremental run's after 10,000
      // trades 0.8–0.9 s of its 1.1 s commit. A worker thread does that instead, beside the
      // extensions (checkpointInWorker); the writer's own checkpoints resume once it is done.
      // The setting is the connection's, not the transaction's, so it can change here, once
      // the run's size is known.
      if (db.path !== ":memory:" && (full || pass.wallets.size >= walletsInWorkerFrom)) {
        restoreCheckpoints = overridePragmas(w, { wal_autocheckpoint: 0 });
      }
      return pass;
    });
    // A full rebuild writes only rows derived from fills, whose markets exist (fills' own foreign
    // key): checking each of its 15M bets and hours against markets cost about 5 s on the large
    // world. The pragma cannot change inside a transaction, so it is set around this one only;
    // the extensions below keep their checks (and their cascades).
    const restoreKeys = full ? overridePragmas(w, { foreign_keys: 0 }) : () => {};
    let result: PassResult;
    let checkpoint: Pending<CheckpointResult> | null = null;
    try {
      try {
        result = run.immediate();
      } finally {
        restoreKeys();
      }
      if (restoreCheckpoints) checkpoint = checkpointInWorker(db);
    } catch (error) {
      restoreCheckpoints?.();
      restoreCheckpoints = null;
      throw error;
    }
    const phases = {
      plan,
      ...result.phases,
      commit: Math.round(performance.now() - passEnded),
    };
    const watch = stopwatch();
    const extensions: Record<string, unknown> = {};
    const change: RefreshChange = {
      full,
      wallets: result.wallets,
      ...(result.searchMoved ? { searchMoved: result.searchMoved } : {}),
    };
    const stops: (() => void)[] = [];
    try {
      for (const extension of options.extensions ?? []) {
        if (extension.begin) stops.push(extension.begin(db, now, change));
      }
      for (const extension of options.extensions ?? []) {
        extensions[extension.name] = w
          .transaction(() => extension.run(db, now, change))
          .immediate();
        watch.lap(extension.name);
      }
    } finally {
      for (const stop of stops) stop();
      if (checkpoint) {
        // Its copy is maintenance: a failed one leaves the pages for the writer's next
        // checkpoint, so it is reported, not thrown.
        try {
          walCheckpoint = checkpoint.take();
        } catch (error) {
          walCheckpoint = { error: error instanceof Error ? error.message : String(error) };
        }
        watch.lap("wal_checkpoint");
      }
    }
    Object.assign(phases, watch.phases);
    return { result, phases, extensions };
  };
  try {
    return recorded(full ? withBulkReads(db, refresh) : refresh());
  } finally {
    restoreCheckpoints?.();
  }

  /**
   * Records the run in refresh_runs. After a run whose pages a worker copied back, the
   * extensions' own pages (wallet search's index, the funding graph) are still in the WAL: the
   * record's commit, with the writer's checkpoints back on, copied them on this thread, 350–430
   * ms after an incremental run of 10,000 trades on the large world. So the record is written
   * first, and a second worker copies them while the caller goes on; it is not waited for (a
   * checkpoint changes no content, and what it leaves, the writer's next checkpoint copies).
   */
  function recorded({ result, phases, extensions }: ReturnType<typeof refresh>): RefreshSummary {
    const summary: RefreshSummary = {
      kind: full ? "full" : "incremental",
      as_of: new Date(now).toISOString(),
      wallets: result.wallets.size,
      markets: result.markets,
      fills_read: result.fillsRead,
      duration_ms: Math.round(performance.now() - started),
      phases,
      extensions,
      ...(walCheckpoint ? { wal_checkpoint: walCheckpoint } : {}),
      ...(catchUp ? { catch_up: catchUp } : {}),
    };
    w.prepare(
      `INSERT INTO refresh_runs (kind, started_at, finished_at, summary, max_trade_id)
       VALUES (?, ?, ?, ?, ?)`,
    ).run(summary.kind, now, now, JSON.stringify(summary), maxTradeId);
    if (restoreCheckpoints) checkpointInWorker(db).detach();
    return summary;
  }
}
