import type { Context } from "hono";
import type { Db } from "../db/open";

/** How many serialized answers one cache keeps (a leaderboard page is 5–25 KB). */
const MAX_ANSWERS = 512;

/**
 * Serialized answers, kept while their epoch lasts: for answers computed from the read models
 * alone, the read-model generation (src/core.ts: bumped when a refresh lands, in this process or
 * another); for answers that also read live tables (fills, signals), the generation and the
 * database's version (databaseVersion below), which any commit changes.
 *
 * A 50-row leaderboard page cost about 160 µs of server CPU (its query, rows and JSON) against
 * about 42 µs for `/v1/_ping` (measured with `npm run bench`, small world); from the cache it
 * costs what the request path costs. Only answers that depend on nothing but the database and the
 * request may be kept: no clock, no account. The key is the route and its validated parameters,
 * cursor included (cursors are deterministic, src/paging/cursor.ts). Errors are never kept:
 * `compute` throws before anything is stored.
 */
export function createAnswerCache(maxAnswers = MAX_ANSWERS) {
  let current: number | string = Number.NaN;
  const answers = new Map<string, string>();
  return {
    json(c: Context, epoch: number | string, key: string, compute: () => unknown): Response {
      if (epoch !== current) {
        answers.clear();
        current = epoch;
      }
      let body = answers.get(key);
      if (body === undefined) {
        body = JSON.stringify(compute());
        if (answers.size >= maxAnswers) answers.delete(answers.keys().next().value!);
        answers.set(key, body);
      }
      // What c.json sends, without serializing again.
      return c.body(body, 200, { "Content-Type": "application/json" });
    },
  };
}

/**
 * A number that changes whenever a transaction that changed the database has committed since it
 * was last read: PRAGMA data_version counts commits by other connections (this process's writer,
 * the jobs process, the CLI) as the read connection sees them, and total_changes() the rows the
 * read connection changed itself (for `:memory:` it is also the writer). Both only grow, so their
 * sum changes when either does. One call costs a read transaction's start (a few µs): far less
 * than the wallet answers it lets a cache keep.
 */
export function databaseVersion(db: Db): () => number {
  const version = db.reader
    .prepare<[], number>("SELECT (SELECT data_version FROM pragma_data_version) + total_changes()")
    .pluck();
  return () => version.get()!;
}
