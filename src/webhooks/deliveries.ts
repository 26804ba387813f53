import type { Clock } from "../clock";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import { fail, ok, type Result } from "../result";
import type { FollowedVia, SignalForDelivery, WebhookEvent } from "./payload";

export const DELIVERY_STATUSES = ["pending", "delivered", "dead"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface Delivery {
  id: string;
  signalId: number;
  endpointId: string;
  event: WebhookEvent;
  followedVia: FollowedVia | null;
  status: DeliveryStatus;
  /** Attempts in the current round; a replay starts a new round at 0. */
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** A delivery's fields as the API and the CLI print them (snake_case, instants in ISO 8601). */
export function deliveryJson(d: Delivery) {
  return {
    id: d.id,
    event: d.event,
    signal_id: d.signalId,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: iso(d.nextAttemptAt),
    created_at: iso(d.createdAt)!,
    delivered_at: iso(d.deliveredAt),
  };
}

export interface Attempt {
  attempt: number;
  startedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

/** A delivery claimed by this process until `leaseUntil`. */
export interface Claimed {
  id: string;
  signalId: number;
  endpointId: string;
  event: WebhookEvent;
  followedVia: FollowedVia | null;
  attempts: number;
  leaseUntil: number;
}

export interface AttemptOutcome {
  ok: boolean;
  /** False when no later attempt can succeed (the target is refused): the delivery dies now. */
  retryable: boolean;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  startedAt: number;
  durationMs: number;
}

/** A finished attempt to record. */
interface Finished {
  claimed: Claimed;
  outcome: AttemptOutcome;
}

interface ClaimLimits {
  limit: number;
  perEndpoint: number;
  /** Deliveries in flight at once per account, across processes; unlimited when absent. */
  perAccount?: number;
  leaseMs: number;
}

/** Where a page of deliveries resumes: after this (created_at, id), newest first. */
export interface DeliveryPosition {
  createdAt: number;
  id: string;
}

const COLUMNS = `d.id, d.signal_id AS signalId, d.endpoint_id AS endpointId, d.event,
  d.followed_via AS followedVia, d.status, d.attempts, d.last_status_code AS lastStatusCode,
  d.last_error AS lastError, d.next_attempt_at AS nextAttemptAt, d.created_at AS createdAt,
  d.delivered_at AS deliveredAt`;

/** Sorts after every real (created_at, id): the start of a newest-first listing. */
const NEWEST: DeliveryPosition = { createdAt: Number.MAX_SAFE_INTEGER, id: "~" };

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;

/** One account's share of a claim: what it has in flight and its endpoints with due work. */
interface Tenant {
  busy: number;
  oldest: number;
  due: { endpointId: string; oldest: number; room: number }[];
}

/**
 * The outbox's rows after enqueue: leasing due deliveries to a sender, recording each attempt
 * and the state it leads to, and the listings and replays customers and operators use.
 */
export function createDeliveryStore(deps: { db: Db; clock: Clock; backoffMs: number[] }) {
  const { db, clock, backoffMs } = deps;
  const w = db.writer;

  // Every live endpoint with how many of its deliveries are in flight now and when its oldest
  // due, unleased one came due (null: none). One index probe each, however long a backlog is;
  // the caller drops the nulls and orders, which keeps each probe to a single evaluation.
  const dueEndpoints = w.prepare<
    { now: number },
    { endpointId: string; accountId: number; busy: number; oldest: number | null }
  >(
    `SELECT e.id AS endpointId, e.account_id AS accountId,
            (SELECT count(*) FROM deliveries d
              WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.lease_until >= @now)
              AS busy,
            (SELECT d.next_attempt_at FROM deliveries d
              WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= @now
                AND (d.lease_until IS NULL OR d.lease_until < @now)
              ORDER BY d.next_attempt_at LIMIT 1) AS oldest
       FROM webhook_endpoints e WHERE e.deleted_at IS NULL`,
  );
  // The endpoint's due, unleased deliveries, oldest first, then leased one by one by rowid:
  // together a third of the cost of one UPDATE ... WHERE id IN (subquery) RETURNING (measured).
  const dueOf = w.prepare<
    { endpoint: string; now: number; n: number },
    Omit<Claimed, "leaseUntil"> & { rowid: number }
  >(
    `SELECT rowid, id, signal_id AS signalId, endpoint_id AS endpointId, event,
            followed_via AS followedVia, attempts
       FROM deliveries
      WHERE endpoint_id = +@endpoint AND status = 'pending' AND next_attempt_at <= +@now
        AND (lease_until IS NULL OR lease_until < +@now)
      ORDER BY next_attempt_at LIMIT +@n`,
  );
  const nextDue = w.prepare<[number], { at: number | null }>(
    "SELECT min(next_attempt_at) AS at FROM deliveries WHERE status = 'pending' AND next_attempt_at > ?",
  );
  const lease = w.prepare<[number, number]>(
    "UPDATE deliveries SET lease_until = ? WHERE rowid = ?",
  );
  const insertAttempt = w.prepare<{ id: string; attempt: number } & AttemptOutcome>(
    `INSERT INTO delivery_attempts
       (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
     VALUES (@id, @attempt, @startedAt, @durationMs, @statusCode, @error, @responseExcerpt)`,
  );
  // Guarded by the lease: if it lapsed and another process took the delivery over, that
  // process owns the state now; this attempt is still logged above.
  const settle = w.prepare<{
    id: string;
    leaseUntil: number;
    attempts: number;
    status: DeliveryStatus;
    next: number | null;
    code: number | null;
    error: string | null;
    deliveredAt: number | null;
  }>(
    `UPDATE deliveries
        SET attempts = @attempts, status = @status, next_attempt_at = @next, lease_until = NULL,
            last_status_code = @code, last_error = @error, delivered_at = @deliveredAt
      WHERE id = @id AND status = 'pending' AND lease_until = @leaseUntil`,
  );
  const signalById = w.prepare<
    [number],
    Omit<SignalForDelivery, "wallet" | "market"> & {
      walletAddress: string;
      walletType: string | null;
      title: string | null;
      category: string | null;
      slug: string | null;
    }
  >(
    // Scalar subqueries rather than a join: SQLite re-prepares the join form every time an id
    // is bound (measured about 20 µs a call against 4 µs), and this runs once per attempt. A
    // missing market leaves slug null, which signalForDelivery treats as no row, as the join did.
    `SELECT s.id, s.type, s.score, s.bet_value AS betValue, s.side, s.outcome, s.price,
            s.explanation, s.created_at AS createdAt, s.wallet AS walletAddress,
            s.wallet_type AS walletType,
            (SELECT title FROM markets WHERE id = s.market_id) AS title,
            (SELECT category FROM markets WHERE id = s.market_id) AS category,
            (SELECT slug FROM markets WHERE id = s.market_id) AS slug
       FROM signals s WHERE s.id = ?`,
  );
  const pageOf = w.prepare<
    { endpoint: string; createdAt: number; id: string; limit: number },
    Delivery
  >(
    `SELECT ${COLUMNS} FROM deliveries d
      WHERE d.endpoint_id = @endpoint AND (d.created_at, d.id) < (@createdAt, @id)
      ORDER BY d.created_at DESC, d.id DESC LIMIT +@limit`,
  );
  const pageOfStatus = w.prepare<
    { endpoint: string; status: DeliveryStatus; createdAt: number; id: string; limit: number },
    Delivery
  >(
    `SELECT ${COLUMNS} FROM deliveries d
      WHERE d.endpoint_id = @endpoint AND d.status = @status
        AND (d.created_at, d.id) < (@createdAt, @id)
      ORDER BY d.created_at DESC, d.id DESC LIMIT +@limit`,
  );
  const recent = w.prepare<
    { status: DeliveryStatus | null; account: number | null; limit: number },
    Delivery & { accountId: number }
  >(
    `SELECT ${COLUMNS}, e.account_id AS accountId
       FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE (@status IS NULL OR d.status = @status)
        AND (@account IS NULL OR e.account_id = @account)
      ORDER BY d.created_at DESC, d.id DESC LIMIT +@limit`,
  );
  const byId = w.prepare<[string], Delivery & { accountId: number; endpointLive: number }>(
    `SELECT ${COLUMNS}, e.account_id AS accountId, e.deleted_at IS NULL AS endpointLive
       FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = ?`,
  );
  const attemptsOf = w.prepare<[string], Attempt>(
    `SELECT attempt, started_at AS startedAt, duration_ms AS durationMs,
            status_code AS statusCode, error, response_excerpt AS responseExcerpt
       FROM delivery_attempts WHERE delivery_id = ? ORDER BY id`,
  );
  const restart = w.prepare<{ id: string; now: number }>(
    `UPDATE deliveries
        SET status = 'pending', attempts = 0, next_attempt_at = @now, lease_until = NULL,
            delivered_at = NULL
      WHERE id = @id`,
  );
  const deadSince = w.prepare<{ since: number; account: number | null }, { id: string }>(
    `SELECT d.id FROM deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.status = 'dead' AND d.created_at >= @since AND e.deleted_at IS NULL
        AND (@account IS NULL OR e.account_id = @account)
      ORDER BY d.created_at, d.id`,
  );

  /**
   * Inside a write transaction: leases due deliveries into the room there is, fairly between
   * accounts. Each account may hold at most `perAccount` deliveries in flight (counting every
   * process's leases) and each endpoint `perEndpoint`; within that, the free slots are dealt
   * round-robin, one delivery per account per round, the account with the oldest due delivery
   * first, and within an account round-robin over its endpoints. So one tenant's hanging
   * endpoints can hold only its own share of the sender, never another tenant's.
   */
  function claimRows(opts: ClaimLimits): Claimed[] {
    const now = clock.now();
    const leaseUntil = now + opts.leaseMs;
    const perAccount = opts.perAccount ?? Number.POSITIVE_INFINITY;
    const claimed: Claimed[] = [];
    const endpoints = dueEndpoints.all({ now });
    const accounts = new Map<number, Tenant>();
    for (const e of endpoints) {
      let tenant = accounts.get(e.accountId);
      if (!tenant) {
        tenant = { busy: 0, oldest: Number.POSITIVE_INFINITY, due: [] };
        accounts.set(e.accountId, tenant);
      }
      tenant.busy += e.busy;
      if (e.oldest === null || e.busy >= opts.perEndpoint) continue;
      tenant.oldest = Math.min(tenant.oldest, e.oldest);
      tenant.due.push({
        endpointId: e.endpointId,
        oldest: e.oldest,
        room: opts.perEndpoint - e.busy,
      });
    }
    const order = [...accounts.values()].filter((a) => a.due.length > 0 && a.busy < perAccount);
    order.sort((a, b) => a.oldest - b.oldest);
    for (const tenant of order) {
      tenant.due.sort((a, b) => a.oldest - b.oldest || (a.endpointId < b.endpointId ? -1 : 1));
    }
    const rows = new Map<string, ReturnType<typeof dueOf.all>>();
    let progress = true;
    while (progress && claimed.length < opts.limit) {
      progress = false;
      for (const tenant of order) {
        if (claimed.length >= opts.limit) break;
        const row = nextOf(tenant, perAccount, rows, now);
        if (!row) continue;
        const { rowid, ...delivery } = row;
        lease.run(leaseUntil, rowid);
        claimed.push({ ...delivery, leaseUntil });
        tenant.busy += 1;
        progress = true;
      }
    }
    return claimed;
  }

  /** The tenant's next delivery to lease: from its next endpoint in turn that has one. */
  function nextOf(
    tenant: Tenant,
    perAccount: number,
    rows: Map<string, ReturnType<typeof dueOf.all>>,
    now: number,
  ) {
    if (tenant.busy >= perAccount) return undefined;
    while (tenant.due.length > 0) {
      const endpoint = tenant.due.shift()!;
      let queue = rows.get(endpoint.endpointId);
      if (!queue) {
        const n = Math.min(endpoint.room, perAccount - tenant.busy);
        queue = dueOf.all({ endpoint: endpoint.endpointId, now, n });
        rows.set(endpoint.endpointId, queue);
      }
      const row = queue.shift();
      if (!row) continue; // nothing (more) due there: the endpoint drops out
      if (queue.length > 0) tenant.due.push(endpoint); // back of the line
      return row;
    }
    return undefined;
  }

  /** Inside a transaction: one attempt logged and its delivery moved on, if still leased. */
  function recordOne(claimed: Claimed, outcome: AttemptOutcome): DeliveryStatus | null {
    const attempts = claimed.attempts + 1;
    const now = clock.now();
    const next = outcome.ok
      ? { status: "delivered" as const, next: null }
      : afterFailure(attempts, outcome.retryable, now);
    insertAttempt.run({ id: claimed.id, attempt: attempts, ...outcome });
    const settled = settle.run({
      id: claimed.id,
      leaseUntil: claimed.leaseUntil,
      attempts,
      status: next.status,
      next: next.next,
      code: outcome.statusCode,
      error: outcome.error,
      deliveredAt: outcome.ok ? now : null,
    });
    return settled.changes > 0 ? next.status : null;
  }

  const recordEach = (finished: Finished[]): (DeliveryStatus | null)[] =>
    finished.map(({ claimed, outcome }) => recordOne(claimed, outcome));

  const claimDue = w.transaction(claimRows);
  const recordAll = w.transaction(recordEach);
  const recordThenClaim = w.transaction((finished: Finished[], opts: ClaimLimits) => ({
    statuses: recordEach(finished),
    claimed: claimRows(opts),
  }));

  /** Where a failed attempt leads: another try after the round's next wait, or death. */
  function afterFailure(attempts: number, retryable: boolean, now: number) {
    const wait = retryable ? backoffMs[attempts - 1] : undefined;
    return wait === undefined
      ? { status: "dead" as const, next: null }
      : { status: "pending" as const, next: now + wait };
  }

  return {
    /**
     * Leases up to `limit` due deliveries, at most `perEndpoint` in flight per endpoint (counting
     * other processes' leases), in one write transaction so two drainers never share a row.
     */
    claim: (opts: ClaimLimits): Claimed[] => claimDue.immediate(opts),

    /**
     * Logs the attempt and moves the delivery on. Returns the state it is now in, or null when
     * the lease had lapsed and another drainer owns the delivery (only the attempt is logged).
     */
    record: (claimed: Claimed, outcome: AttemptOutcome): DeliveryStatus | null =>
      recordAll([{ claimed, outcome }])[0]!,

    /**
     * `record` for several finished attempts in one transaction, each judged on its own lease;
     * the states come back in order. A commit costs more than the statements it carries (every
     * page they touch is written to the WAL), so a busy drainer records a turn's attempts at once.
     */
    recordMany: (finished: Finished[]) => recordAll(finished),

    /**
     * `recordMany`, then `claim` into the slots that frees, in one write transaction: a busy
     * drainer's turn costs one commit instead of two.
     */
    recordAndClaim: (
      finished: Finished[],
      opts: ClaimLimits,
    ): { statuses: (DeliveryStatus | null)[]; claimed: Claimed[] } =>
      recordThenClaim.immediate(finished, opts),

    /** Milliseconds until the next pending delivery comes due, or null when none waits. */
    nextDueIn(): number | null {
      const now = clock.now();
      const at = nextDue.get(now)?.at ?? null;
      return at === null ? null : at - now;
    },

    signalForDelivery(signalId: number): SignalForDelivery | undefined {
      const row = signalById.get(signalId);
      if (!row) return undefined;
      const { walletAddress, walletType, title, category, slug, ...signal } = row;
      if (slug === null) return undefined;
      return {
        ...signal,
        wallet: { address: walletAddress, type: walletType },
        market: { title, category, slug },
      };
    },

    /** One page of an endpoint's deliveries, newest first, and where the next page starts. */
    page(
      endpointId: string,
      opts: { status?: DeliveryStatus; limit: number; after?: DeliveryPosition },
    ): { rows: Delivery[]; next: DeliveryPosition | null } {
      const after = opts.after ?? NEWEST;
      const params = { endpoint: endpointId, ...after, limit: opts.limit + 1 };
      const rows = opts.status
        ? pageOfStatus.all({ ...params, status: opts.status })
        : pageOf.all(params);
      const more = rows.length > opts.limit;
      if (more) rows.pop();
      const last = rows[rows.length - 1];
      return { rows, next: more && last ? { createdAt: last.createdAt, id: last.id } : null };
    },

    /** The operator's view across endpoints, newest first. */
    recent: (opts: { status?: DeliveryStatus; accountId?: number; limit: number }) =>
      recent.all({
        status: opts.status ?? null,
        account: opts.accountId ?? null,
        limit: opts.limit,
      }),

    get(id: string): (Delivery & { accountId: number; attemptLog: Attempt[] }) | undefined {
      const row = byId.get(id);
      if (!row) return undefined;
      const { endpointLive: _live, ...delivery } = row;
      return { ...delivery, attemptLog: attemptsOf.all(id) };
    },

    /**
     * Sends deliveries again from a fresh round of attempts (same delivery id, new timestamps
     * and signatures at send time). All ids must be replayable or none is touched.
     */
    replay(ids: string[]): Result<string[]> {
      return w.transaction((): Result<string[]> => {
        for (const id of ids) {
          const row = byId.get(id);
          if (!row) return fail(`no delivery "${id}"`);
          if (!row.endpointLive) return fail(`delivery ${id}: its endpoint was removed`);
          if (row.status === "pending") return fail(`delivery ${id} is still pending`);
        }
        const now = clock.now();
        for (const id of ids) restart.run({ id, now });
        return ok(ids);
      })();
    },

    /** Dead deliveries created at or after `since`, of live endpoints, oldest first. */
    deadSince: (since: number, accountId?: number): string[] =>
      deadSince.all({ since, account: accountId ?? null }).map((row) => row.id),
  };
}
