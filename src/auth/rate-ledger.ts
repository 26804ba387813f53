import type { Connection } from "../db/open";
import type { Log } from "../log";

const LEDGER_VERSION = 1;
const MONTH_MINUTES = 30 * 24 * 60;

/**
 * The rate-limit database's schema. `rate_minutes` is the ledger: calls admitted per account and
 * minute (minute = floor(epoch ms / 60000)). `rate_months` holds each account's running 30-day
 * total over that ledger, so a decision never sums a month of rows.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS rate_minutes (
  account_id INTEGER NOT NULL,
  minute     INTEGER NOT NULL,
  calls      INTEGER NOT NULL,
  PRIMARY KEY (account_id, minute)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate_months (
  account_id  INTEGER PRIMARY KEY,
  minute      INTEGER NOT NULL,  -- the latest minute a decision was made in
  month_from  INTEGER NOT NULL,  -- minute - 43,200: the window's first minute
  month_calls INTEGER NOT NULL   -- sum of rate_minutes.calls from month_from on
);`;

/**
 * Prepares the rate-limit database on first use. Releases before it kept the ledger in the
 * main database's `rate_minutes` table; the calls still inside the 30-day window are carried
 * over once, in the same transaction that creates the schema, so an upgrade forgets no call.
 * The old table is only read (it stays, unused): a write to the main database here could wait
 * behind a refresh.
 */
export function openLedger(
  limits: Connection,
  main: Connection,
  now: number,
  log: Log,
): Connection {
  limits
    .transaction(() => {
      const version = limits.pragma("user_version", { simple: true }) as number;
      if (version >= LEDGER_VERSION) return;
      limits.exec(SCHEMA);
      const from = Math.floor(now / 60_000) - MONTH_MINUTES - 1;
      const old = main
        .prepare<[number], { account_id: number; minute: number; calls: number }>(
          "SELECT account_id, minute, calls FROM rate_minutes WHERE minute >= ?",
        )
        .all(from);
      const insert = limits.prepare<[number, number, number]>(
        `INSERT INTO rate_minutes (account_id, minute, calls) VALUES (?, ?, ?)
         ON CONFLICT (account_id, minute) DO UPDATE SET calls = calls + excluded.calls`,
      );
      for (const row of old) insert.run(row.account_id, row.minute, row.calls);
      if (old.length > 0) log.info({ minutes: old.length }, "rate-limit ledger carried over");
      limits.pragma(`user_version = ${LEDGER_VERSION}`);
    })
    .immediate();
  return limits;
}
