import type { Context } from "hono";

/** How many serialized answers one cache keeps (a leaderboard page is 5–25 KB). */
const MAX_ANSWERS = 512;

/**
 * Serialized answers of endpoints computed from the read models alone, kept for one read-model
 * generation (src/core.ts: bumped when a refresh lands, in this process or another).
 *
 * A 50-row leaderboard page cost about 160 µs of server CPU (its query, rows and JSON) against
 * about 42 µs for `/v1/_ping` (measured with `npm run bench`, small world); from the cache it
 * costs what the request path costs. Only answers that depend on nothing but the read models and
 * the request may be kept: no clock, no account, no live table. The key is the route and its
 * validated parameters, cursor included (cursors are deterministic, src/paging/cursor.ts).
 * Errors are never kept: `compute` throws before anything is stored.
 */
export function createAnswerCache(maxAnswers = MAX_ANSWERS) {
  let generation = Number.NaN;
  const answers = new Map<string, string>();
  return {
    json(c: Context, current: number, key: string, compute: () => unknown): Response {
      if (current !== generation) {
        answers.clear();
        generation = current;
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
