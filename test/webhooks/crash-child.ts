/**
 * The process test/webhooks/crash.test.ts kills: a server-mode app on an existing database file
 * (built as `smartmoney serve` builds it: config from the environment, system clock, the key
 * file beside the database), whose drainer is started and ticked by the scheduler. It stores N
 * trades with a signal each in one ingest transaction (the outbox writes their deliveries),
 * prints one JSON line, and keeps draining until it is killed.
 *
 *   node --import tsx test/webhooks/crash-child.ts DB_PATH SIGNALS
 */
import { withApp } from "../../cli/context";
import { drainJob } from "../../src/jobs/drain";
import { startScheduler } from "../../src/jobs/scheduler";

const [dbPath, count] = process.argv.slice(2);
if (!dbPath || !count) throw new Error("usage: crash-child.ts DB_PATH SIGNALS");

await withApp({ db: dbPath }, async ({ app, db, log }) => {
  startScheduler([drainJob(app)], log);
  const insertTrade = db.writer.prepare<[string, string, number]>(
    `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
                         usd_value, ts) VALUES (?, 0, ?, 1, 'YES', 'BUY', 0.4, 50000, 20000, ?)`,
  );
  const newestFill = db.writer.prepare("SELECT max(id) FROM fills").pluck();
  const wallet = `0x${"c".repeat(40)}`;
  const ingest = db.writer.transaction((signals: number) => {
    let deliveries = 0;
    for (let i = 0; i < signals; i++) {
      const now = Date.now();
      const hash = `0x${(i + 1).toString(16).padStart(64, "0")}`;
      insertTrade.run(hash, wallet, now);
      // The trades view's trigger stores the fill; SQLite reports no rowid for it.
      const tradeId = newestFill.get() as number;
      deliveries += app.webhooks.outbox.enqueueSignal({
        type: "whale",
        wallet,
        walletType: "whale",
        marketId: 1,
        tradeId,
        score: 80,
        betValue: 20_000,
        side: "BUY",
        outcome: "YES",
        price: 0.4,
        explanation: `crash test signal ${i + 1}`,
        createdAt: now,
      }).deliveries;
    }
    return deliveries;
  });
  const deliveries = ingest(Number(count));
  process.stdout.write(`${JSON.stringify({ deliveries })}\n`);
  // Drains until SIGKILL; nothing here ever resolves.
  await new Promise(() => setInterval(() => undefined, 60_000));
});
