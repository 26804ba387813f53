import type { Clock } from "../clock";
import type { Connection, Db } from "../db/open";
import type { Log } from "../log";

const LEDGER_VERSION = 1;
/** A ledger minute: floor(epoch ms / MINUTE_MS). */
export const MINUTE_MS = 60_000;

/** The rate-limit ledger's name for the storage watch. */
export const LEDGER_WRITER = "rate limits";

/**
 * A window admitting at minute M counts the calls of minutes M - span .. M. One extra minute
 * beyond the nominal length is what guarantees that no true rolling window of that length (one
 * that starts part-way through a minute) ever holds more than the cap: every call in a true
 * 60-minute window ending at a call made in minute M falls in minutes M - 60 .. M.
 */
export const WINDOWS = { hour: 60, month: 30 * 24 * 60 } as const;
export type WindowName = keyof typeof WINDOWS;

export interface Limits {
  hourly: number;
  monthly: number;
}

export interface RateDecision {
  admitted: boolean;
  /** The binding window; when refused, the window that refused the call. */
  window: WindowName;
  /** Headers for the binding window: the one with fewer calls left. */
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the binding window next frees a call. */
  resetAt: number;
  /** Whole seconds until a call would be admitted again; set only when refused. */
  retryAfter?: number;
  /** The ledger minute the decision was made in: where admitted calls were counted. */
  minute: number;
}

/** The windows' sums at the moment of a decision, read inside its transaction. */
export interface Windows {
  minute: number;
  /** First minute of the 30-day window: minute - WINDOWS.month. */
  monthFrom: number;
  hourCalls: number;
  monthCalls: number;
  /** Oldest minute with calls in the hour window, or null when it is empty. */
  hourOldest: number | null;
  /** The account's rate_months row is out of date and must be written. */
  stale: boolean;
}

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
      const from = Math.floor(now / MINUTE_MS) - WINDOWS.month - 1;
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

/**
 * The rate-limit ledger: per account and minute, the calls counted, and each account's running
 * 30-day total. How calls are handed out from it (one decision per call, or a lease of many) is
 * the rate limiter's policy (rate-limit.ts). Every function but `write`, `immediate` and
 * `failed` runs inside a transaction that `immediate` opened.
 *
 * The ledger lives in the small second database `<db>.limits` (see Db.limits): a counted call
 * writes there, never to the main database, so it never waits behind a refresh or an import.
 * Each decision is one short IMMEDIATE transaction that reads the windows' sums and records the
 * call together, so no two processes can both take the last call, and the call is on disk (in
 * the WAL) before the request is answered: a crash of the process forgets no admitted call.
 *
 * The hour's sum is a range over at most 61 ledger rows. The 30-day sum is a running total kept
 * in the same database (rate_months), advanced in the same transaction by subtracting the
 * minutes that left the window; because every process adds to and subtracts from the one shared
 * total, it cannot drift the way per-process sums did.
 */
export function createRateLedger(deps: { db: Db; clock: Clock; log: Log }) {
  const { db, clock, log } = deps;
  let statements: ReturnType<typeof prepare> | undefined;
  // Opened on first use, so commands that never count calls never create the ledger file.
  const ledger = () => {
    statements ??= prepare(openLedger(db.limits, db.writer, clock.now(), log));
    return statements;
  };

  function prepare(c: Connection) {
    return {
      c,
      hour: c.prepare<[number, number], { calls: number | null; oldest: number | null }>(
        "SELECT sum(calls) AS calls, min(minute) AS oldest FROM rate_minutes WHERE account_id = ? AND minute >= ?",
      ),
      sumRange: c.prepare<[number, number, number], { calls: number | null }>(
        "SELECT sum(calls) AS calls FROM rate_minutes WHERE account_id = ? AND minute BETWEEN ? AND ?",
      ),
      rowsFrom: c.prepare<[number, number], { minute: number; calls: number }>(
        "SELECT minute, calls FROM rate_minutes WHERE account_id = ? AND minute >= ? ORDER BY minute",
      ),
      oldestFrom: c.prepare<[number, number], { minute: number }>(
        "SELECT minute FROM rate_minutes WHERE account_id = ? AND minute >= ? ORDER BY minute LIMIT 1",
      ),
      newest: c.prepare<[number], { minute: number | null }>(
        "SELECT max(minute) AS minute FROM rate_minutes WHERE account_id = ?",
      ),
      add: c.prepare<[number, number, number]>(
        `INSERT INTO rate_minutes (account_id, minute, calls) VALUES (?, ?, ?)
         ON CONFLICT (account_id, minute) DO UPDATE SET calls = calls + excluded.calls`,
      ),
      month: c.prepare<[number], { minute: number; monthFrom: number; monthCalls: number }>(
        `SELECT minute, month_from AS monthFrom, month_calls AS monthCalls
           FROM rate_months WHERE account_id = ?`,
      ),
      saveMonth: c.prepare<[number, number, number, number]>(
        `INSERT INTO rate_months (account_id, minute, month_from, month_calls) VALUES (?, ?, ?, ?)
         ON CONFLICT (account_id) DO UPDATE SET minute = excluded.minute,
           month_from = excluded.month_from, month_calls = excluded.month_calls`,
      ),
      takeBack: c.prepare<[number, number, number, number]>(
        "UPDATE rate_minutes SET calls = calls - ? WHERE account_id = ? AND minute = ? AND calls >= ?",
      ),
      takeBackMonth: c.prepare<[number, number, number]>(
        `UPDATE rate_months SET month_calls = month_calls - ?
          WHERE account_id = ? AND month_from <= ?`,
      ),
      pruneMonths: c.prepare<[number]>("DELETE FROM rate_months WHERE month_from < ?"),
      pruneMinutes: c.prepare<[number]>("DELETE FROM rate_minutes WHERE minute < ?"),
    };
  }

  /**
   * Inside the transaction: the windows as of now. The minute never goes back (clocks of two
   * processes may differ by a little; the later one wins), and the running 30-day total drops
   * exactly the ledger rows of the minutes that left its window since it was last advanced.
   */
  function windowsOf(account: number, now: number): Windows {
    const s = ledger();
    let minute = Math.floor(now / MINUTE_MS);
    const saved = s.month.get(account);
    let month: { monthFrom: number; monthCalls: number };
    if (!saved) {
      minute = Math.max(minute, s.newest.get(account)?.minute ?? minute);
      const monthFrom = minute - WINDOWS.month;
      month = { monthFrom, monthCalls: s.sumRange.get(account, monthFrom, minute)?.calls ?? 0 };
    } else {
      minute = Math.max(minute, saved.minute);
      month = { monthFrom: saved.monthFrom, monthCalls: saved.monthCalls };
      const monthFrom = minute - WINDOWS.month;
      if (monthFrom > month.monthFrom) {
        const left = s.sumRange.get(account, month.monthFrom, monthFrom - 1)?.calls ?? 0;
        month = { monthFrom, monthCalls: month.monthCalls - left };
      }
    }
    const stale = !saved || saved.minute !== minute || saved.monthFrom !== month.monthFrom;
    const hour = s.hour.get(account, minute - WINDOWS.hour);
    return {
      minute,
      monthFrom: month.monthFrom,
      hourCalls: hour?.calls ?? 0,
      monthCalls: month.monthCalls,
      hourOldest: hour?.oldest ?? null,
      stale,
    };
  }

  /** The minute from which a call is admitted again, given the calls to shed from the window. */
  function admissionMinute(account: number, w: Windows, window: WindowName, excess: number) {
    const span = WINDOWS[window];
    let shed = 0;
    for (const { minute, calls } of ledger().rowsFrom.iterate(account, w.minute - span)) {
      shed += calls;
      if (shed >= excess) return minute + span + 1;
    }
    // Only a cap of 0 gets here: no amount of waiting admits a call. Report a whole window.
    return w.minute + span + 1;
  }

  function decide(
    account: number,
    w: Windows,
    limits: Limits,
    now: number,
    admitted: boolean,
    needed = 1,
  ): RateDecision {
    const hourLeft = limits.hourly - w.hourCalls;
    const monthLeft = limits.monthly - w.monthCalls;
    const binding: WindowName = monthLeft < hourLeft ? "month" : "hour";
    const limit = binding === "hour" ? limits.hourly : limits.monthly;
    const remaining = Math.max(0, binding === "hour" ? hourLeft : monthLeft);
    const nowSeconds = Math.ceil(now / 1000);

    if (!admitted) {
      let until = w.minute + 1;
      let refusing: WindowName = binding;
      for (const window of ["hour", "month"] as const) {
        const left = window === "hour" ? hourLeft : monthLeft;
        if (left >= needed) continue;
        const from = admissionMinute(account, w, window, needed - left);
        if (from >= until) {
          until = from;
          refusing = window;
        }
      }
      const retryAfter = Math.max(1, Math.ceil((until * MINUTE_MS - now) / 1000));
      return {
        admitted,
        window: refusing,
        limit: refusing === "hour" ? limits.hourly : limits.monthly,
        remaining: 0,
        // The minute boundary itself, as for an admitted call: not now plus a rounded-up wait,
        // which would round twice and name a second later than the 200s before it.
        resetAt: (until * MINUTE_MS) / 1000,
        retryAfter,
        minute: w.minute,
      };
    }
    const oldest =
      binding === "hour"
        ? w.hourOldest
        : (ledger().oldestFrom.get(account, w.monthFrom)?.minute ?? null);
    const resetAt =
      oldest === null ? nowSeconds : ((oldest + WINDOWS[binding] + 1) * MINUTE_MS) / 1000;
    return {
      admitted,
      window: binding,
      limit,
      remaining,
      resetAt,
      retryAfter: undefined,
      minute: w.minute,
    };
  }

  let lastPrune = Number.NEGATIVE_INFINITY;

  /** Ledger rows older than any window: dropped hourly, with the totals that counted them. */
  function prune(now: number): void {
    if (now - lastPrune < 3_600_000) return;
    lastPrune = now;
    const before = Math.floor(now / MINUTE_MS) - WINDOWS.month - 1;
    const s = ledger();
    // A total whose window still starts before the cut would lose rows it must later subtract:
    // dropping it makes the next decision rebuild it from the ledger.
    s.pruneMonths.run(before);
    s.pruneMinutes.run(before);
  }

  return {
    windowsOf,
    decide,
    prune,

    /** Counts `calls` calls in the decision's minute; returns the windows with them. */
    record(account: number, w: Windows, calls: number): Windows {
      const s = ledger();
      s.add.run(account, w.minute, calls);
      s.saveMonth.run(account, w.minute, w.monthFrom, w.monthCalls + calls);
      return {
        ...w,
        hourCalls: w.hourCalls + calls,
        monthCalls: w.monthCalls + calls,
        hourOldest: w.hourOldest ?? w.minute,
      };
    },

    /** Stores the advanced 30-day total of a decision that counted nothing, if it moved. */
    keep(account: number, w: Windows): void {
      if (w.stale) ledger().saveMonth.run(account, w.minute, w.monthFrom, w.monthCalls);
    },

    /** Takes back `calls` counted in `minute` (from its row and the 30-day total). */
    takeBack(account: number, minute: number, calls: number): void {
      const s = ledger();
      if (s.takeBack.run(calls, account, minute, calls).changes > 0) {
        s.takeBackMonth.run(calls, account, minute);
      }
    },

    /** `fn` as one IMMEDIATE transaction on the ledger: no two processes decide at once. */
    immediate<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
      return ledger().c.transaction(fn).immediate;
    },

    /**
     * A write to the ledger through the storage watch: a full disk throws StorageFullError (the
     * transaction rolled back whole) and is reported at /healthz.
     */
    write<T>(fn: () => T): T {
      return db.storage.write(LEDGER_WRITER, fn);
    },

    /** Reports a ledger write that failed outside `write` (a lease return on a timer). */
    failed(error: unknown): void {
      db.storage.failed(LEDGER_WRITER, error);
    },
  };
}

export type RateLedger = ReturnType<typeof createRateLedger>;
