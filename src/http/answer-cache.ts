import type { Context } from "hono";
import type { Db } from "../db/open";
import type { AnswerLane, Epoch } from "./answer-lane";
import type { HttpEnv } from "./env";

/** How many serialized answers one cache keeps (a leaderboard page is 5–25 KB). */
const MAX_ANSWERS = 512;

/**
 * Serialized answers, kept while their epoch lasts (read on every call): for answers computed
 * from the read models alone, the read-model generation (src/core.ts: bumped when a refresh
 * lands, in this process or another); for answers that also read live tables (fills, signals),
 * the generation and the database's version (databaseVersion below), which every commit changes.
 *
 * A 50-row leaderboard page cost about 160 µs of server CPU (its query, rows and JSON) against
 * about 42 µs for `/v1/_ping` (measured with `npm run bench`, small world); from the cache it
 * costs what the request path costs. Only answers that depend on nothing but the database and the
 * request may be kept: no clock, nothing of the caller but its tier (which the answer lane keys
 * on, answer-lane.ts). The key is the route and its validated parameters, cursor included
 * (cursors are deterministic, src/paging/cursor.ts). Errors are never kept: `compute` throws
 * before anything is stored.
 */
export function createAnswerCache(lane: AnswerLane, epoch: Epoch, maxAnswers = MAX_ANSWERS) {
  let current: number | string = Number.NaN;
  const answers = new Map<string, string>();
  /** The kept answer's JSON for `key`, computed by `render` when none is kept this epoch. */
  function send(c: Context<HttpEnv>, key: string, render: () => string): Response {
    const now = epoch();
    if (now !== current) {
      answers.clear();
      current = now;
    }
    let body = answers.get(key);
    if (body === undefined) {
      body = render();
      if (answers.size >= maxAnswers) answers.delete(answers.keys().next().value!);
      answers.set(key, body);
    }
    // The next request for the same target may then skip the router (answer-lane.ts).
    lane.remember(c, epoch, now, body);
    // What c.json sends, without serializing again.
    return c.body(body, 200, { "Content-Type": "application/json" });
  }

  return {
    json: (c: Context<HttpEnv>, key: string, compute: () => unknown): Response =>
      send(c, key, () => JSON.stringify(compute())),
    /**
     * The same for an answer that may read the fill history (an await on DuckDB): the epoch is
     * read before the computation starts, so an answer is kept under the epoch it is as fresh as.
     */
    async jsonAsync(
      c: Context<HttpEnv>,
      key: string,
      compute: () => Promise<unknown>,
    ): Promise<Response> {
      const at = epoch();
      if (at === current && answers.has(key)) return send(c, key, () => answers.get(key)!);
      const body = JSON.stringify(await compute());
      // Kept only if nothing committed meanwhile; otherwise sent and not kept.
      if (epoch() !== at) return c.body(body, 200, { "Content-Type": "application/json" });
      return send(c, key, () => body);
    },
    /** The same for an answer computed as JSON text (a market's detail splices stored JSON in). */
    text: (c: Context<HttpEnv>, key: string, compute: () => string): Response =>
      send(c, key, compute),
  };
}

/**
 * A value that changes whenever the database may have changed since it was last read:
 *
 * - PRAGMA data_version on the read connection counts the commits it has seen from other
 *   connections (this process's writer, the jobs process, the CLI). Reading it starts a read
 *   transaction, which costs about as much as a whole cached answer (5–7 µs), so it is read once
 *   per turn of the event loop: a commit another process makes during a turn shows from the
 *   next turn on, to the requests of that turn as if they had arrived when the turn began.
 * - total_changes() on the writer counts the rows this process has written, read on every call
 *   (no transaction, under 1 µs): a write made here, even between two requests of one turn,
 *   shows at once. For `:memory:` the writer is also the reader, and this is the only change it
 *   sees.
 *
 * An answer is computed after the value it is kept under was read, so it is never older than
 * that value says: a kept answer is what a fresh computation would have given at the start of
 * the current turn, or later.
 */
export function databaseVersion(db: Db): () => string {
  let version = versions.get(db);
  if (!version) {
    version = readVersion(db);
    versions.set(db, version);
  }
  return version;
}

/** One per database, so the caches that share it read data_version once per turn between them. */
const versions = new WeakMap<Db, () => string>();

function readVersion(db: Db): () => string {
  const committed = db.reader
    .prepare<[], number>("SELECT data_version FROM pragma_data_version")
    .pluck();
  const written = db.writer.prepare<[], number>("SELECT total_changes()").pluck();
  let seen: number | undefined;
  const forget = () => {
    seen = undefined;
  };
  return () => {
    if (seen === undefined) {
      seen = committed.get()!;
      setImmediate(forget);
    }
    return `${seen} ${written.get()!}`;
  };
}
