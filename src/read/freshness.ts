import type { Db } from "../db/open";

/**
 * How fresh the read models are: the as-of of the latest refresh run (the clock reading its
 * figures were computed at), whichever process ran it (the server's background jobs, or `jobs run refresh` from the CLI).
 *
 * The server polls it once a second. A new run bumps the app's read-model generation, so caches
 * of read-model answers (analyze, ranked market lists, correlated wallets) are dropped even when
 * another process refreshed, and every data response carries the as-of in its headers.
 */
export interface Freshness {
  /** Epoch ms the latest refresh computed its figures as of; null before the first refresh. */
  asOf(): number | null;
  /** Reads the latest run; true when it is another one than at the last poll. */
  poll(): boolean;
}

/**
 * The latest refresh run on the reader (its id, and the as-of its figures were computed at), or
 * undefined before the first. Run ids grow with time, so the last id is the latest run: a rowid
 * seek, not a scan.
 */
export function latestRefreshRun(db: Db): () => { id: number; as_of: number } | undefined {
  const latest = db.reader.prepare<[], { id: number; as_of: number }>(
    "SELECT id, started_at AS as_of FROM refresh_runs ORDER BY id DESC LIMIT 1",
  );
  return () => latest.get();
}

export function createFreshness(db: Db): Freshness {
  const latest = latestRefreshRun(db);
  let runId: number | null = null;
  let asOf: number | null = null;
  const freshness: Freshness = {
    asOf: () => asOf,
    poll() {
      const row = latest();
      if ((row?.id ?? null) === runId) return false;
      runId = row?.id ?? null;
      asOf = row?.as_of ?? null;
      return true;
    },
  };
  freshness.poll();
  return freshness;
}
