import type { Clock } from "../clock";
import type { Db } from "../db/open";
import type { Log } from "../log";

const MINUTE_MS = 60_000;

/**
 * A window admitting at minute M counts the calls of minutes M - span .. M. One extra minute
 * beyond the nominal length is what guarantees that no true rolling window of that length (one
 * that starts part-way through a minute) ever holds more than the cap: every call in a true
 * 60-minute window ending at a call made in minute M falls in minutes M - 60 .. M.
 */
const WINDOWS = { hour: 60, month: 30 * 24 * 60 } as const;
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
}

interface AccountWindows {
  minute: number;
  /** Calls per minute for the hour window's minutes (at most 61 entries). */
  recent: Map<number, number>;
  hourCalls: number;
  monthCalls: number;
  /** First minute counted in monthCalls. */
  monthFrom: number;
  /** Oldest minute with calls inside the month window, or null when it is empty. */
  monthOldest: number | null;
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/**
 * Per-account rolling hourly and 30-day limits. Admission happens in memory (Node runs one
 * request at a time, so check-and-count cannot race, whatever the concurrency) from running sums
 * loaded once from the per-minute ledger; admitted calls are flushed to the ledger in batches
 * every `flushMs`, so a hard crash forgets at most that much. The monthly sum drops the minutes
 * leaving the window with one indexed range query per account per minute, never a 43,200-row scan
 * per request.
 */
export function createRateLimiter(deps: { db: Db; clock: Clock; log: Log; flushMs?: number }) {
  const { db, clock, log } = deps;
  const flushMs = deps.flushMs ?? 250;
  const w = db.writer;
  const sumRange = w.prepare<[number, number, number], { calls: number | null }>(
    "SELECT sum(calls) AS calls FROM rate_minutes WHERE account_id = ? AND minute BETWEEN ? AND ?",
  );
  const rowsFrom = w.prepare<[number, number, number], { minute: number; calls: number }>(
    "SELECT minute, calls FROM rate_minutes WHERE account_id = ? AND minute BETWEEN ? AND ? ORDER BY minute",
  );
  const oldestFrom = w.prepare<[number, number], { minute: number }>(
    "SELECT minute FROM rate_minutes WHERE account_id = ? AND minute >= ? ORDER BY minute LIMIT 1",
  );
  const upsert = w.prepare<[number, number, number]>(
    `INSERT INTO rate_minutes (account_id, minute, calls) VALUES (?, ?, ?)
     ON CONFLICT (account_id, minute) DO UPDATE SET calls = calls + excluded.calls`,
  );
  const prune = w.prepare<[number]>("DELETE FROM rate_minutes WHERE minute < ?");

  const states = new Map<number, AccountWindows>();
  /** Admitted calls not yet in the ledger: account → minute → calls. */
  let pending = new Map<number, Map<number, number>>();
  let flushTimer: NodeJS.Timeout | undefined;
  let lastPrune = 0;

  const ledgerSum = (account: number, from: number, to: number) =>
    sumRange.get(account, from, to)?.calls ?? 0;

  function load(account: number, minute: number): AccountWindows {
    flush();
    const recent = new Map<number, number>();
    for (const row of rowsFrom.iterate(account, minute - WINDOWS.hour, minute)) {
      recent.set(row.minute, row.calls);
    }
    const monthFrom = minute - WINDOWS.month;
    return {
      minute,
      recent,
      hourCalls: [...recent.values()].reduce((a, b) => a + b, 0),
      monthCalls: ledgerSum(account, monthFrom, minute),
      monthFrom,
      monthOldest: oldestFrom.get(account, monthFrom)?.minute ?? null,
    };
  }

  function advance(account: number, state: AccountWindows, minute: number): void {
    if (minute <= state.minute) return; // a clock step backwards keeps the later state
    for (const [m, calls] of state.recent) {
      if (m < minute - WINDOWS.hour) {
        state.recent.delete(m);
        state.hourCalls -= calls;
      }
    }
    const monthFrom = minute - WINDOWS.month;
    if (monthFrom > state.monthFrom) {
      flush();
      state.monthCalls -= ledgerSum(account, state.monthFrom, monthFrom - 1);
      state.monthFrom = monthFrom;
      if (state.monthOldest !== null && state.monthOldest < monthFrom) {
        state.monthOldest = oldestFrom.get(account, monthFrom)?.minute ?? null;
      }
    }
    state.minute = minute;
  }

  function windowsOf(account: number, now: number): AccountWindows {
    const minute = Math.floor(now / MINUTE_MS);
    let state = states.get(account);
    if (!state) {
      state = load(account, minute);
      states.set(account, state);
    } else {
      advance(account, state, minute);
    }
    return state;
  }

  /** The minute from which a call is admitted again, given the calls to shed from the window. */
  function admissionMinute(
    account: number,
    state: AccountWindows,
    window: WindowName,
    excess: number,
  ) {
    const span = WINDOWS[window];
    const from = state.minute - span;
    let rows: (readonly [number, number])[];
    if (window === "hour") {
      rows = [...state.recent.entries()].sort((a, b) => a[0] - b[0]);
    } else {
      flush(); // the walk reads the ledger, so it must hold every admitted call
      rows = rowsFrom.all(account, from, state.minute).map((r) => [r.minute, r.calls] as const);
    }
    let shed = 0;
    for (const [minute, calls] of rows) {
      shed += calls;
      if (shed >= excess) return minute + span + 1;
    }
    // Only a cap of 0 gets here: no amount of waiting admits a call. Report a whole window.
    return state.minute + span + 1;
  }

  function decide(
    account: number,
    state: AccountWindows,
    limits: Limits,
    now: number,
    admitted: boolean,
  ): RateDecision {
    const hourLeft = limits.hourly - state.hourCalls;
    const monthLeft = limits.monthly - state.monthCalls;
    const binding: WindowName = monthLeft < hourLeft ? "month" : "hour";
    const limit = binding === "hour" ? limits.hourly : limits.monthly;
    const remaining = Math.max(0, binding === "hour" ? hourLeft : monthLeft);
    const nowSeconds = Math.ceil(now / 1000);

    if (!admitted) {
      let until = state.minute + 1;
      let refusing: WindowName = binding;
      for (const window of ["hour", "month"] as const) {
        const left = window === "hour" ? hourLeft : monthLeft;
        if (left > 0) continue;
        const from = admissionMinute(account, state, window, 1 - left);
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
      };
    }
    const oldest =
      binding === "hour"
        ? state.recent.size === 0
          ? null
          : Math.min(...state.recent.keys())
        : state.monthOldest;
    const resetAt =
      oldest === null ? nowSeconds : ((oldest + WINDOWS[binding] + 1) * MINUTE_MS) / 1000;
    return { admitted, window: binding, limit, remaining, resetAt, retryAfter: undefined };
  }

  function record(account: number, state: AccountWindows): void {
    const minute = state.minute;
    state.recent.set(minute, (state.recent.get(minute) ?? 0) + 1);
    state.hourCalls += 1;
    state.monthCalls += 1;
    if (state.monthOldest === null) state.monthOldest = minute;
    let minutes = pending.get(account);
    if (!minutes) {
      minutes = new Map();
      pending.set(account, minutes);
    }
    minutes.set(minute, (minutes.get(minute) ?? 0) + 1);
    if (!flushTimer && flushMs >= 0) {
      flushTimer = setTimeout(flush, flushMs);
      flushTimer.unref();
    }
  }

  const writePending = w.transaction((batch: Map<number, Map<number, number>>) => {
    for (const [account, minutes] of batch) {
      for (const [minute, calls] of minutes) upsert.run(account, minute, calls);
    }
  });

  function flush(): void {
    if (flushTimer) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
    }
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    try {
      writePending(batch);
    } catch (error) {
      // Keep the counts for the next flush rather than forget admitted calls.
      for (const [account, minutes] of batch) {
        const into = pending.get(account) ?? new Map<number, number>();
        for (const [minute, calls] of minutes) into.set(minute, (into.get(minute) ?? 0) + calls);
        pending.set(account, into);
      }
      log.error({ err: error }, "rate-limit ledger flush failed");
      return;
    }
    const now = clock.now();
    if (now - lastPrune > 3_600_000) {
      lastPrune = now;
      prune.run(Math.floor(now / MINUTE_MS) - WINDOWS.month - 1);
    }
  }

  return {
    /** Counts the call if both windows have room; otherwise refuses it without counting. */
    admit(account: number, limits: Limits): RateDecision {
      const now = clock.now();
      const state = windowsOf(account, now);
      const admitted = state.hourCalls < limits.hourly && state.monthCalls < limits.monthly;
      if (admitted) record(account, state);
      return decide(account, state, limits, now, admitted);
    },

    /** The headers' figures without counting a call (for answers that do not count, e.g. 403). */
    peek(account: number, limits: Limits): RateDecision {
      const now = clock.now();
      const state = windowsOf(account, now);
      return decide(account, state, limits, now, true);
    },

    flush,

    /** Forget in-memory sums, e.g. after the ledger was changed by another process. */
    reset(): void {
      flush();
      states.clear();
    },

    close(): void {
      flush();
    },
  };
}
