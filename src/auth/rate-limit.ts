import type { Clock } from "../clock";
import type { Db } from "../db/open";
import { StorageFullError } from "../db/storage";
import type { Log } from "../log";
import {
  createRateLedger,
  type Limits,
  MINUTE_MS,
  type RateDecision,
  type Windows,
} from "./rate-ledger";

export type { Limits, RateDecision, WindowName } from "./rate-ledger";

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

/**
 * Per-account rolling hourly and 30-day limits, exact across every process that shares the
 * database (two servers, a server and a stdio MCP process, a CLI command). The counts are the
 * ledger's (rate-ledger.ts); this is the policy of how calls are handed out from it.
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
  const { clock, log } = deps;
  const ledger = createRateLedger(deps);

  const leases = new Map<number, Lease>();
  let returnTimer: ReturnType<typeof setTimeout> | undefined;

  /** Inside a transaction: the unspent part of a lease goes back to the minute it was counted in. */
  function giveBack(account: number, lease: Lease): void {
    leases.delete(account);
    if (lease.unspent === 0) return;
    ledger.takeBack(account, lease.minute, lease.unspent);
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
    const now = clock.now();
    returnExpired(now);
    // A decision that reaches the ledger replaces the account's lease: what it had left is
    // returned first, so it counts as room for this decision.
    const held = leases.get(account);
    if (held && calls > 0) giveBack(account, held);
    ledger.prune(now);
    const w = ledger.windowsOf(account, now);
    // A lease used up in its own minute means calls come faster than it lasts: take more.
    const cap =
      held && held.unspent === 0 && held.minute === w.minute
        ? Math.min(LEASE_MAX, held.cap * 2)
        : LEASE_START;
    const admitted =
      calls === 0 ||
      (w.hourCalls + calls <= limits.hourly && w.monthCalls + calls <= limits.monthly);
    if (!admitted || calls === 0) {
      ledger.keep(account, w);
      return ledger.decide(account, w, limits, now, admitted, calls);
    }
    const left = Math.min(limits.hourly - w.hourCalls, limits.monthly - w.monthCalls) - calls;
    const leased = Math.min(cap, Math.floor(left / LEASE_SHARE));
    const after: Windows = ledger.record(account, w, calls + leased);
    const decision = ledger.decide(account, after, limits, now, true);
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
    const decision = ledger.write(() => {
      transaction ??= ledger.immediate(decideAndRecord);
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
      ledger.immediate(() => {
        if (expiredOnly) returnExpired(clock.now());
        else for (const [account, lease] of leases) giveBack(account, lease);
      })();
      return true;
    } catch (error) {
      ledger.failed(error);
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
        decision = ledger.decide(account, ledger.windowsOf(account, now), limits, now, true);
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
      try {
        ledger.write(() => ledger.immediate(() => ledger.takeBack(account, minute, calls))());
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
