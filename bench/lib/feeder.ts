/**
 * Live ingest for bench:stall: new fills through the one ingest path (with signal detection and
 * its webhook outbox, as the Polymarket ingester does) at a steady rate, from a process of its own
 * like the ingester's. Each second it writes the fills due by then in one transaction, stamped
 * with the world's clock, and prints `{"inserted":N,"due":N,"newest":MS,"writeMs":MS}`: the fills
 * it stored, the fills due since it started, the newest fill time, and how long its write took,
 * waiting for the lock included.
 *
 * A full refresh in the jobs process can hold the write lock longer than a connection's busy
 * timeout, and a plain write would then fail and end the feeder. So it waits for the lock as the
 * server's own writes do (src/db/write-when-free.ts), on a timer, and falls behind only while the
 * lock is held; bench:stall reports the fills stored against the fills due, and fails if the
 * feeder exits.
 *
 *   feeder.ts --db PATH --now MS --per-day 1000000
 */
import { parseArgs } from "node:util";
import { writeWhenFree } from "../../src/db/write-when-free";
import { createIngest } from "../../src/ingest/ingest";
import { nextTrades } from "./next-trades";
import { withWorldApp, worldClock } from "./world";

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    now: { type: "string" },
    "per-day": { type: "string", default: "1000000" },
  },
});
const start = Number(values.now);
const perSecond = Number(values["per-day"]) / 86_400;
if (!values.db || !Number.isSafeInteger(start) || !(perSecond > 0)) {
  throw new Error("usage: feeder.ts --db PATH --now MS --per-day N");
}

await withWorldApp({ db: values.db, clock: worldClock(start) }, async (app) => {
  const ingest = createIngest(app.deps.db, app.deps.clock, app.ingestHooks);
  const began = performance.now();
  let due = 0;
  let stopped = false;
  process.once("SIGTERM", () => {
    stopped = true;
  });
  while (!stopped) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const wanted = Math.floor(((performance.now() - began) / 1000) * perSecond) - due;
    if (wanted <= 0) continue;
    const now = app.deps.clock.now();
    const rows = nextTrades(app.deps.db.reader, now - 1_000, wanted, 1_000);
    const asked = performance.now();
    const { writer } = app.deps.db;
    const inserted = await writeWhenFree(writer, () =>
      writer.transaction(() => ingest.insertTrades(rows).length)(),
    );
    due += wanted;
    const newest = Math.max(...rows.map((row) => row.ts));
    const writeMs = Math.round(performance.now() - asked);
    process.stdout.write(`${JSON.stringify({ inserted, due, newest, writeMs })}\n`);
  }
});
