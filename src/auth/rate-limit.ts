import type { Clock } from "../clock";
import type { Connection, Db } from "../db/open";
import { StorageFullError } from "../db/storage";
import type { Log } from "../log";
import { openLedger } from "./rate-ledger";

const MINUTE_MS = 60_000;
/** A lease takes 1/LEASE_SHARE of what the account has left beyond the call itself... */
const LEASE_SHARE = 16;
/**
 * ...and at most this many calls. A lease spent within the minute it was taken lets the next
 * one be twice its cap, up to LEASE_MAX; any other lease starts again at LEASE_START. So an
 * account calling a few times a second never holds more than 64, and one calling hundreds of
 * times a second reaches a transaction per 1,024 calls instead of per 64 (a transaction costs
 * about as much CPU as 64 leased calls; docs/architecture.md, Quota leases).
 */
export const LEASE_START = 64;
/** The most a lease holds: what a crash can leave counted but unspent, per account. */
export const LEASE_MAX = 1024;
/** After the minute's end, before returning expired leases: room for a timer that fires early. */
const RETURN_SLACK_MS = 50;

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
interface Windows {
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

/** Calls this process has counted in the ledger for an account but not yet admitted. */
interface Lease {
  /** The ledger minute the calls were counted in: they may only be admitted in it. */
  minute: number;
  /** The limits the lease was taken under: a change of limits returns it. */
  hourly: number;
  monthly: number;
  unspent: number;
  /** The most this lease could hold: the next one may take twice as much if this one is spent. */
  cap: number;
  /** The decision that took the lease, its `remaining` net of every leased call. */
  decision: RateDecision;
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/** The rate-limit ledger's name for the storage watch. */
export const LEDGER_WRITER = "rate limits";

/**
 * Per-account rolling hourly and 30-day limits, exact across every process that shares the
 * database (two servers, a server and a stdio MCP process, a CLI command).
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
 *
 * A transaction per call cost about as much CPU as the rest of a cheap request, so a process
 * takes a LEASE: with the call it records a block of the account's remaining quota (1/16 of
 * it, at most LEASE_MAX; nothing extra once fewer than 16 calls remain) and then admits that
 * many calls from memory. Leased calls are counted in the ledger from the start, so no process
 * can admit more than the limit; what a lease costs is that calls leased but not yet spent are
 * unavailable to other processes. A lease is only good in the minute it was counted in (its
 * calls must fall in that ledger minute), and its unspent part goes back to the ledger when the
 * minute ends, when this process needs a new lease, and on close.
 */
export function createRateLimiter(deps: { db: Db; clock: Clock; log: Log }) {
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

  const leases = new Map<number, Lease>();
  let returnTimer: ReturnType<typeof setTimeout> | undefined;

  /** Inside a transaction: the unspent part of a lease goes back to the minute it was counted in. */
  function giveBack(account: number, lease: Lease): void {
    leases.delete(account);
    if (lease.unspent === 0) return;
    const s = ledger();
    if (s.takeBack.run(lease.unspent, account, lease.minute, lease.unspent).changes > 0) {
      s.takeBackMonth.run(lease.unspent, account, lease.minute);
    }
  }

  /** Inside a transaction: every lease whose minute is over goes back. */
  function returnExpired(now: number): void {
    const minute = Math.floor(now / MINUTE_MS);
    for (const [account, lease] of leases) if (lease.minute < minute) giveBack(account, lease);
  }

  /**
   * One decision in one IMMEDIATE transaction: `calls` calls are recorded if both windows have
   * room for all of them, else none is; with them, a lease on 1/LEASE_SHARE of what is left
   * after them. `calls = 0` only reads (and advances the windows).
   */
  function decideAndRecord(account: number, limits: Limits, calls: number): RateDecision {
    const s = ledger();
    const now = clock.now();
    returnExpired(now);
    // A decision that reaches the ledger replaces the account's lease: what it had left is
    // returned first, so it counts as room for this decision.
    const held = leases.get(account);
    if (held && calls > 0) giveBack(account, held);
    prune(now);
    const w = windowsOf(account, now);
    // A lease used up in its own minute means calls come faster than it lasts: take more.
    const cap =
      held && held.unspent === 0 && held.minute === w.minute
        ? Math.min(LEASE_MAX, held.cap * 2)
        : LEASE_START;
    const admitted =
      calls === 0 ||
      (w.hourCalls + calls <= limits.hourly && w.monthCalls + calls <= limits.monthly);
    if (!admitted || calls === 0) {
      if (w.stale) s.saveMonth.run(account, w.minute, w.monthFrom, w.monthCalls);
      return decide(account, w, limits, now, admitted, calls);
    }
    const left = Math.min(limits.hourly - w.hourCalls, limits.monthly - w.monthCalls) - calls;
    const leased = Math.min(cap, Math.floor(left / LEASE_SHARE));
    const counted = calls + leased;
    s.add.run(account, w.minute, counted);
    s.saveMonth.run(account, w.minute, w.monthFrom, w.monthCalls + counted);
    const after: Windows = {
      ...w,
      hourCalls: w.hourCalls + counted,
      monthCalls: w.monthCalls + counted,
      hourOldest: w.hourOldest ?? w.minute,
    };
    const decision = decide(account, after, limits, now, true);
    if (leased === 0) return decision;
    taken = {
      minute: w.minute,
      hourly: limits.hourly,
      monthly: limits.monthly,
      unspent: leased,
      cap,
      decision,
    };
    return { ...decision, remaining: decision.remaining + leased };
  }

  let transaction: ((account: number, limits: Limits, calls: number) => RateDecision) | undefined;
  /** The lease the running transaction took: held only once the transaction has committed. */
  let taken: Lease | undefined;

  const charge = (account: number, limits: Limits, calls: number): RateDecision => {
    taken = undefined;
    // A full disk refuses the call (503 storage_full) rather than admitting it uncounted: a
    // count held only in this process's memory would be invisible to the other processes
    // sharing the ledger, which could then admit past the cap. The transaction rolled back
    // whole, so nothing is lost: the refused call was not served. docs/operations.md.
    const decision = db.storage.write(LEDGER_WRITER, () => {
      transaction ??= ledger().c.transaction(decideAndRecord).immediate;
      return transaction(account, limits, calls);
    });
    if (taken) {
      leases.set(account, taken);
      taken = undefined;
      scheduleReturn(clock.now());
    }
    return decision;
  };

  /** Returns every lease in one transaction; false when the ledger could not be reached. */
  function returnLeases(expiredOnly: boolean): boolean {
    if (leases.size === 0) return true;
    try {
      const s = ledger();
      s.c
        .transaction(() => {
          if (expiredOnly) returnExpired(clock.now());
          else for (const [account, lease] of leases) giveBack(account, lease);
        })
        .immediate();
      return true;
    } catch (error) {
      db.storage.failed(LEDGER_WRITER, error);
      // Closed under us, locked past the busy timeout, or a full disk: the calls stay counted
      // (the safe side) and leave the windows with their minute.
      log.warn({ err: error as Error, leases: leases.size }, "rate-limit leases not returned");
      leases.clear();
      return false;
    }
  }

  /**
   * At the end of the minute, the unspent leases go back, so another process can admit them.
   * The timer does not hold the process open; a process that exits without close() leaves its
   * leases counted (docs/operations.md, Rate limits).
   */
  function scheduleReturn(now: number): void {
    if (returnTimer) return;
    const delay = (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS - now + RETURN_SLACK_MS;
    returnTimer = setTimeout(() => {
      returnTimer = undefined;
      if (returnLeases(true) && leases.size > 0) scheduleReturn(clock.now());
    }, delay);
    returnTimer.unref();
  }

  /** The account's lease, if it can admit `calls` more calls under `limits` now. */
  function usableLease(account: number, limits: Limits, calls: number): Lease | undefined {
    const lease = leases.get(account);
    if (
      lease === undefined ||
      lease.unspent < calls ||
      lease.hourly !== limits.hourly ||
      lease.monthly !== limits.monthly ||
      Math.floor(clock.now() / MINUTE_MS) > lease.minute
    ) {
      return undefined;
    }
    return lease;
  }

  /** Admits `calls` calls from the account's lease when it has them, else from the ledger. */
  function admitCalls(account: number, limits: Limits, calls: number): RateDecision {
    const lease = usableLease(account, limits, calls);
    if (!lease) return charge(account, limits, calls);
    lease.unspent -= calls;
    return { ...lease.decision, remaining: lease.decision.remaining + lease.unspent };
  }

  return {
    /** Counts the call if both windows have room; otherwise refuses it without counting. */
    admit(account: number, limits: Limits): RateDecision {
      return admitCalls(account, limits, 1);
    },

    /**
     * Counts `calls` calls at once (an MCP batch) if both windows have room for all of them;
     * otherwise refuses without counting any.
     */
    admitMany(account: number, limits: Limits, calls: number): RateDecision {
      return admitCalls(account, limits, Math.max(1, calls));
    },

    /**
     * The headers' figures without counting a call (for answers that do not count, e.g. 403):
     * the ledger's, plus what this process's lease has left.
     */
    peek(account: number, limits: Limits): RateDecision {
      let decision: RateDecision;
      try {
        decision = charge(account, limits, 0);
      } catch (error) {
        if (!(error instanceof StorageFullError)) throw error;
        // Only headers hang on it (a 403, a 404): read the windows without advancing them,
        // rather than answer a call that needs no write with a full disk's 503.
        const now = clock.now();
        decision = decide(account, windowsOf(account, now), limits, now, true);
      }
      const lease = usableLease(account, limits, 1);
      if (!lease || !decision.admitted) return decision;
      return { ...decision, remaining: decision.remaining + lease.unspent };
    },

    /**
     * Takes back calls counted in `minute` by a decision whose answer turned out not to count
     * (the webhook endpoint cap's 403, found only once the call was admitted). While the lease
     * they came from is still good, they go back to it; otherwise to the ledger.
     */
    refund(account: number, minute: number, calls = 1): void {
      const lease = leases.get(account);
      if (lease && lease.minute === minute && Math.floor(clock.now() / MINUTE_MS) <= minute) {
        lease.unspent += calls;
        return;
      }
      const s = ledger();
      try {
        db.storage.write(LEDGER_WRITER, () =>
          s.c
            .transaction(() => {
              if (s.takeBack.run(calls, account, minute, calls).changes > 0) {
                s.takeBackMonth.run(calls, account, minute);
              }
            })
            .immediate(),
        );
      } catch (error) {
        if (!(error instanceof StorageFullError)) throw error;
        // The calls stay counted (the safe side), and the answer they refund still goes out.
        log.warn({ account_id: account, calls }, "rate-limit refund not stored: the disk is full");
      }
    },

    /** Returns every lease's unspent calls to the ledger: call before the database closes. */
    close(): void {
      if (returnTimer) clearTimeout(returnTimer);
      returnTimer = undefined;
      returnLeases(false);
    },
  };
}
