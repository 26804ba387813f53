import type { Connection } from "./open";

/**
 * Writes from the thread that answers requests, without ever blocking it.
 *
 * better-sqlite3 is synchronous: a write that meets another process's write lock waits inside
 * SQLite's busy handler, and the whole event loop waits with it, up to the busy timeout (5 s).
 * The scheduled jobs (refresh, ingest, deliveries) and CLI imports hold that lock for seconds to
 * minutes, so the request thread tries each write with a busy timeout of zero, and when the lock is
 * taken it waits on a timer, answering other requests meanwhile, then tries again.
 *
 * `work` must be all-or-nothing (one statement or one better-sqlite3 transaction): a busy attempt
 * is rolled back whole and run again from the start.
 */

/** How long a request waits for the write lock before it gives up. */
export const WRITE_WAIT_MS = 60_000;
const FIRST_RETRY_MS = 5;
const LONGEST_RETRY_MS = 250;

export class WriteLockTimeout extends Error {
  constructor(waitedMs: number) {
    super(`the database stayed locked by another writer for ${Math.round(waitedMs / 1000)} s`);
  }
}

/** Whether SQLite refused for a lock another connection holds (SQLITE_BUSY or an extended code). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_"));
}

/**
 * `work` tried again while another process holds a lock it needs past SQLite's own waiting,
 * blocking this thread between tries, for up to `waitMs`; then `tooLong()` is thrown, or the
 * last SQLITE_BUSY. For the work nothing may run before: opening a database, migrating it.
 */
export function retryWhileBusy<T>(work: () => T, waitMs: number, tooLong?: () => Error): T {
  const deadline = Date.now() + waitMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let delay = 1; ; delay = Math.min(delay * 2, 100)) {
    try {
      return work();
    } catch (error) {
      if (!isBusy(error)) throw error;
      if (Date.now() >= deadline) throw tooLong?.() ?? error;
      Atomics.wait(pause, 0, 0, delay);
    }
  }
}

/** One attempt with a zero busy timeout; the connection's own timeout is restored after. */
function tryWriteNow<T>(
  connection: Connection,
  work: () => T,
): { done: true; value: T } | { done: false } {
  const saved = connection.pragma("busy_timeout", { simple: true }) as number;
  connection.pragma("busy_timeout = 0");
  try {
    return { done: true, value: work() };
  } catch (error) {
    if (isBusy(error) && !connection.inTransaction) return { done: false };
    throw error;
  } finally {
    connection.pragma(`busy_timeout = ${saved}`);
  }
}

export async function writeWhenFree<T>(
  connection: Connection,
  work: () => T,
  options: { waitMs?: number; now?: () => number } = {},
): Promise<T> {
  const now = options.now ?? (() => performance.now());
  const waitMs = options.waitMs ?? WRITE_WAIT_MS;
  const started = now();
  let delay = FIRST_RETRY_MS;
  for (;;) {
    const result = tryWriteNow(connection, work);
    if (result.done) return result.value;
    const waited = now() - started;
    if (waited >= waitMs) throw new WriteLockTimeout(waited);
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, waitMs - waited)));
    delay = Math.min(delay * 2, LONGEST_RETRY_MS);
  }
}
