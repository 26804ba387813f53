import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchEndpoints, pickFromWorld } from "../../bench/lib/endpoints";
import { nextTrades } from "../../bench/lib/next-trades";
import { canWatchOwnProcess, watchReprepares } from "../../bench/lib/reprepares";
import { openConnection } from "../../src/db/open";
import { createIngest } from "../../src/ingest/ingest";
import { refreshNow } from "../../src/jobs/refresh";
import { seededTestApp, type TestApp } from "../helpers/app";
import { catchAllEndpoint } from "../helpers/endpoints";

/**
 * No statement of ours is prepared again on every call. better-sqlite3 clears bindings after
 * each run, and SQLite then prepares again any statement whose plan looked at a bound value
 * (docs/architecture.md, "Bound parameters the planner reads"): that depends on the plan, not on
 * the text, so this watches the process itself. gdb, attached to this test's own process, notes
 * every statement SQLite prepares again while the small world answers every GET endpoint nine
 * times, ingests trades (signal detection and webhook fan-out included), refreshes its read
 * models incrementally and in full, and a drainer claims deliveries.
 *
 * Skipped where gdb is missing (it is a Debian package on these machines) or may not attach.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const MINUTE = 60_000;
/** Rounds of requests, ingest and refresh; each asks every endpoint PASSES times. */
const ROUNDS = 3;
const PASSES = 3;
/** Trades ingested per round. */
const BATCH = 200;
/**
 * A schema change (the seed's full refresh rebuilds indexes) expires every statement prepared
 * before it, which is prepared again once at its next use: a statement prepared again more often
 * than once a round, plus once, is prepared again on every call.
 */
const ONE_OFF = ROUNDS + 1;
/**
 * Statements SQLite writes and prepares itself (FTS5's shadow tables), and transaction control,
 * which is prepared again once after any schema change.
 */
const NOT_OURS = /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA)\b|FROM 'main'\./;
/** A statement that is prepared again on every run (a bare LIMIT): the watch must see it. */
const CONTROL = "SELECT v FROM control ORDER BY v LIMIT ?";

let t: TestApp;
beforeAll(async () => {
  ({ t } = await seededTestApp({ now: NOW }));
}, 120_000);
afterAll(() => t?.close());

describe.skipIf(!canWatchOwnProcess())("statements prepared once", () => {
  it("no statement of ours is prepared again on every call", async () => {
    const key = t.key("terminal_pro");
    catchAllEndpoint(t, "reprepare", "https://hooks.example.com/smartmoney");
    const paths = benchEndpoints(pickFromWorld(t.config.dbPath, 3))
      .filter((e) => e.method === "GET")
      .map((e) => e.path);
    expect(paths.length).toBeGreaterThan(20);
    const trades = nextTrades(t.db.reader, NOW, ROUNDS * BATCH, MINUTE);
    const ingest = createIngest(t.db, t.clock, t.app.ingestHooks);

    const control = openConnection(":memory:");
    control.exec(
      "CREATE TABLE control (v INTEGER PRIMARY KEY); INSERT INTO control VALUES (1), (2)",
    );
    const controlStatement = control.prepare(CONTROL);

    const watch = await watchReprepares(process.pid);
    let reprepared: Map<string, number>;
    try {
      for (let limit = 0; limit < 5; limit += 1) controlStatement.all(limit);
      for (let round = 0; round < ROUNDS; round += 1) {
        for (let pass = 0; pass < PASSES; pass += 1) {
          // A new generation: answers kept for the last one are not served again.
          t.app.readModelsChanged();
          for (const path of paths) await t.raw(path, key);
        }
        // A batch of the world's next minute, through the live ingester's path.
        const batch = trades.slice(round * BATCH, (round + 1) * BATCH);
        t.db.writer.transaction(() => {
          for (const trade of batch) {
            ingest.upsertWallet({
              address: trade.wallet,
              platform_name: null,
              platform_pnl: null,
              platform_pnl_as_of: null,
              created_at: null,
            });
          }
          ingest.insertTrades(batch);
        })();
        t.clock.set(NOW + (round + 1) * MINUTE);
        refreshNow(t.app);
        t.app.webhooks.deliveries.claim({ limit: 20, perEndpoint: 5, leaseMs: MINUTE });
      }
      refreshNow(t.app, { full: true });
    } finally {
      reprepared = await watch.stop();
      control.close();
    }
    // The watch works: it saw the control prepared again on (nearly) every run.
    expect(reprepared.get(CONTROL)).toBeGreaterThanOrEqual(4);
    const everyCall = [...reprepared]
      .filter(([sql, n]) => n > ONE_OFF && !NOT_OURS.test(sql) && sql !== CONTROL)
      .map(([sql, n]) => `${n}× ${sql}`);
    expect(everyCall).toEqual([]);
  }, 180_000);
});
