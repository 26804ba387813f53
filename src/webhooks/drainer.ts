import type { StorageWatch } from "../db/storage";
import type { Log } from "../log";
import type { AttemptOutcome, Claimed, DeliveryStatus, DeliveryStore } from "./deliveries";
import type { Endpoints } from "./endpoints";
import type { Sender } from "./sender";

export interface DrainLimits {
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  /** Deliveries in flight at once per endpoint, across processes: a slow endpoint gets only this. */
  perEndpoint: number;
  /**
   * Deliveries in flight at once per account, across processes: one tenant's slow endpoints
   * hold only this share of the sender. Unlimited when absent.
   */
  perAccount?: number;
  /** How long a claim holds a delivery; after it, a crashed process's delivery is retaken. */
  leaseMs: number;
}

export interface DrainSummary {
  claimed: number;
  delivered: number;
  retrying: number;
  dead: number;
}

export type Drainer = ReturnType<typeof createDrainer>;

/** The drainer's name for the storage watch: the deliveries' and attempts' bookkeeping. */
export const DRAIN_WRITER = "deliveries";

interface Finished {
  claimed: Claimed;
  outcome: AttemptOutcome;
  done(status: DeliveryStatus | null): void;
  failed(error: unknown): void;
}

/**
 * Sends due deliveries with bounded concurrency, overall and per endpoint. Two ways to drive it:
 * `drainOnce` (the CLI job and tests) sends everything due now and waits for the outcomes;
 * `start` + `pump` (the server) keeps a pool full: the scheduler's tick, a new enqueue, and
 * every finished attempt each refill the free slots, so a slow endpoint never holds up a tick,
 * and a timer set for the next retry's due time sends it on time rather than at the next tick.
 */
export function createDrainer(deps: {
  store: DeliveryStore;
  endpoints: Endpoints;
  sender: Sender;
  log: Log;
  limits: DrainLimits;
  /**
   * While the disk is full, no delivery is claimed: its outcome could not be recorded, so it
   * would be sent again and again. At each retry one delivery is sent as the probe.
   */
  storage?: StorageWatch;
}) {
  const { store, endpoints, sender, log, limits, storage } = deps;
  /** A probe delivery is out while the storage is full: no other is claimed meanwhile. */
  let probing = false;
  const inFlight = new Set<Promise<DeliveryStatus | null>>();
  let started = false;
  let pumpQueued = false;
  /** Server mode: a timer for the moment the next retry comes due, so it waits no longer. */
  let wake: NodeJS.Timeout | undefined;
  let wakeAt = Number.POSITIVE_INFINITY;

  function scheduleWake(): void {
    if (!started) return;
    const inMs = store.nextDueIn();
    if (inMs === null) return;
    const at = performance.now() + inMs;
    if (wake && wakeAt <= at) return;
    clearTimeout(wake);
    wakeAt = at;
    wake = setTimeout(
      () => {
        wake = undefined;
        wakeAt = Number.POSITIVE_INFINITY;
        queuePump();
        scheduleWake(); // the retry after this one
      },
      Math.max(0, inMs),
    );
    wake.unref();
  }

  /** Finished attempts waiting to be recorded together at the end of this turn of the loop. */
  let finished: Finished[] = [];

  /**
   * Records an attempt's outcome with every other attempt that finishes in the same turn of the
   * event loop: one transaction for all of them rather than one commit each.
   */
  function record(claimed: Claimed, outcome: AttemptOutcome): Promise<DeliveryStatus | null> {
    return new Promise((done, failed) => {
      if (finished.length === 0) setImmediate(recordFinished);
      finished.push({ claimed, outcome, done, failed });
    });
  }

  /**
   * In server mode the slots the finished attempts free are claimed again in the same
   * transaction, so a busy pool costs one commit per turn instead of two.
   */
  function recordFinished(): void {
    const batch = finished;
    finished = [];
    probing = false;
    // Every finished attempt is still counted in flight until its promise settles below.
    const free = started ? slots(limits.concurrency - inFlight.size + batch.length) : 0;
    let settled: { statuses: (DeliveryStatus | null)[]; claimed: Claimed[] };
    try {
      settled =
        free > 0
          ? store.recordAndClaim(batch, { ...limits, limit: free })
          : { statuses: store.recordMany(batch), claimed: [] };
      if (settled.claimed.length > 0 && storage?.retryIn(DRAIN_WRITER) != null) probing = true;
      storage?.succeeded(DRAIN_WRITER);
    } catch (error) {
      if (storage?.failed(DRAIN_WRITER, error, { retries: true })) {
        // The disk is full: every record would fail alike. The attempts stay leased and are
        // sent again once their lease lapses and the storage has room (at least once).
        log.warn(
          { deliveries: batch.length, retry_in_ms: storage.retryIn(DRAIN_WRITER) },
          "webhook attempts not recorded: the disk is full; deliveries paused",
        );
        for (const entry of batch) entry.done(null);
        return;
      }
      // Rolled back: record each on its own, so a fault with one delivery fails only that one.
      for (const entry of batch) {
        try {
          entry.done(store.record(entry.claimed, entry.outcome));
        } catch (error) {
          entry.failed(error);
        }
      }
      return;
    }
    for (const [i, entry] of batch.entries()) entry.done(settled.statuses[i]!);
    send(settled.claimed, queuePump);
    if (settled.statuses.includes("pending")) scheduleWake();
  }

  /** One delivery: send, record, log. Null when its endpoint went away or its lease was lost. */
  async function deliver(claimed: Claimed): Promise<DeliveryStatus | null> {
    const endpoint = endpoints.get(claimed.endpointId);
    if (!endpoint) return null;
    const outcome = await sender.send(claimed, endpoint.callbackUrl);
    const status = await record(claimed, outcome);
    // Never the URL (customers put tokens in query strings) and never the secret.
    log.info(
      {
        delivery_id: claimed.id,
        endpoint_id: claimed.endpointId,
        event: claimed.event,
        attempt: claimed.attempts + 1,
        status_code: outcome.statusCode,
        error: outcome.error,
        duration_ms: outcome.durationMs,
        outcome: status ?? "lease lost",
      },
      "webhook attempt",
    );
    return status;
  }

  /** Claims into the free slots and starts each send; `onDone` sees every outcome. */
  function fill(onDone: (status: DeliveryStatus | null) => void): Promise<unknown>[] {
    const free = slots(limits.concurrency - inFlight.size);
    if (free <= 0) return [];
    let claimed: Claimed[];
    try {
      claimed = store.claim({ ...limits, limit: free });
    } catch (error) {
      if (!storage?.failed(DRAIN_WRITER, error, { retries: true })) throw error;
      return [];
    }
    if (claimed.length > 0 && storage?.retryIn(DRAIN_WRITER) != null) probing = true;
    return send(claimed, onDone);
  }

  /**
   * How many of `free` slots may be claimed into: all while the storage has room; while it is
   * full, none, or one (the probe) once the drainer's retry is due and no probe is out.
   */
  function slots(free: number): number {
    if (!storage) return free;
    if (probing || !storage.mayWrite(DRAIN_WRITER)) return 0;
    return storage.retryIn(DRAIN_WRITER) === null ? free : Math.min(free, 1);
  }

  /** Starts a send per claimed delivery, counted in flight until its outcome is recorded. */
  function send(
    batch: Claimed[],
    onDone: (status: DeliveryStatus | null) => void,
  ): Promise<unknown>[] {
    return batch.map((claimed) => {
      const sending = deliver(claimed).catch((error: unknown) => {
        // A bug (e.g. the database refused the write): the lease lapses and it is retried.
        log.error({ delivery_id: claimed.id, err: error }, "webhook delivery failed internally");
        return null;
      });
      inFlight.add(sending);
      return sending.then((status) => {
        inFlight.delete(sending);
        onDone(status);
      });
    });
  }

  function queuePump(): void {
    if (!started || pumpQueued) return;
    pumpQueued = true;
    setImmediate(() => {
      pumpQueued = false;
      try {
        pump();
      } catch (error) {
        // The next tick tries again; an exception here would otherwise take the server down.
        log.error({ err: error }, "webhook drain failed");
      }
    });
  }

  function pump(): { claimed: number; in_flight: number } {
    const claimed = started ? fill(queuePump).length : 0;
    return { claimed, in_flight: inFlight.size };
  }

  return {
    /** Sends every delivery due now (refilling as attempts finish) and waits for all of them. */
    async drainOnce(): Promise<DrainSummary> {
      const summary: DrainSummary = { claimed: 0, delivered: 0, retrying: 0, dead: 0 };
      const mine = new Set<Promise<unknown>>();
      // Each finished attempt refills before its own promise settles, so the loop below sees
      // the follow-up sends before it could find the set empty.
      const refill = () => {
        const sends = fill((status) => {
          if (status === "delivered") summary.delivered += 1;
          else if (status === "pending") summary.retrying += 1;
          else if (status === "dead") summary.dead += 1;
          refill();
        });
        summary.claimed += sends.length;
        for (const sending of sends) mine.add(sending);
      };
      refill();
      while (mine.size > 0) {
        const waiting = [...mine];
        await Promise.all(waiting);
        for (const done of waiting) mine.delete(done);
      }
      return summary;
    },

    /** Server mode: from now on enqueues and finished attempts refill the pool at once. */
    start(): void {
      started = true;
      scheduleWake(); // retries left waiting by the previous run
    },

    /** The scheduled tick: fill free slots without waiting for the sends. */
    pump,

    /** Called after an enqueue commits. */
    kick: queuePump,

    /** Stops refilling and waits for the attempts in flight to be recorded. */
    async stop(): Promise<void> {
      started = false;
      clearTimeout(wake);
      wake = undefined;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
