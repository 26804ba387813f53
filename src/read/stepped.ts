import type { Db } from "../db/open";
import { latestRefreshRun } from "./freshness";

/** Lets the requests waiting on the event loop run before the next step of a long read. */
const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Stepped reads start again when a refresh lands meanwhile; the last try is one transaction. */
const ATTEMPTS = 3;

/**
 * A read of the read models too long to hold the event loop for (a ranking of the large world's
 * markets, a busy wallet's correlated wallets: 100–200 ms), written as a generator that yields
 * between steps of a few milliseconds each. The requests that arrive meanwhile are answered
 * between steps.
 *
 * Each step's statements see the database as of their own start. The read models change only
 * when a refresh commits, so the latest refresh run is read before the first step and after the
 * last: when none landed in between, every step read the same state, and the answer is
 * consistent. Otherwise the read starts again, and the last try runs every step at once inside
 * one read transaction (one state, the event loop held as before).
 */
export function createSteppedReads(db: Db) {
  const latestRun = latestRefreshRun(db);
  const inOneTransaction = db.reader.transaction(<T>(steps: Generator<unknown, T>): T => {
    for (;;) {
      const next = steps.next();
      if (next.done) return next.value;
    }
  });

  return async function steppedRead<T>(start: () => Generator<unknown, T>): Promise<T> {
    for (let attempt = 1; attempt < ATTEMPTS; attempt++) {
      const run = latestRun()?.id;
      const steps = start();
      let next = steps.next();
      while (!next.done) {
        await yieldToRequests();
        next = steps.next();
      }
      if (latestRun()?.id === run) return next.value;
    }
    return inOneTransaction(start()) as T;
  };
}
