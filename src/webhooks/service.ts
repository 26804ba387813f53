import type { Clock } from "../clock";
import type { Config } from "../config";
import type { Db } from "../db/open";
import type { Log } from "../log";
import { createDeliveryStore, type DeliveryStore } from "./deliveries";
import { createDrainer, type Drainer, type DrainLimits } from "./drainer";
import { createEndpoints, type Endpoints } from "./endpoints";
import { createFollows, type Follows } from "./follows";
import { createOutbox, type Outbox } from "./outbox";
import { createSender, type Sender } from "./sender";
import { createGuardedDispatcher } from "./ssrf";

/** Room beyond the attempt timeout before a claim lapses and another drainer may retake it. */
const LEASE_MARGIN_MS = 30_000;

export interface Webhooks {
  endpoints: Endpoints;
  follows: Follows;
  outbox: Outbox;
  deliveries: DeliveryStore;
  sender: Sender;
  drainer: Drainer;
  /** Closes the outbound connection pool; attempts in flight fail (and are retried). */
  close(): void;
}

/** The webhook services on one app: one guarded connection pool, one drainer. */
export function createWebhooks(deps: {
  db: Db;
  config: Config;
  clock: Clock;
  log: Log;
  secretKey: Buffer;
  limits?: Partial<DrainLimits>;
}): Webhooks {
  const { db, config, clock, log } = deps;
  const dispatcher = createGuardedDispatcher({
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
  });
  const endpoints = createEndpoints({
    db,
    clock,
    secretKey: deps.secretKey,
    allowPrivate: config.webhookAllowPrivate,
  });
  const deliveries = createDeliveryStore({ db, clock, backoffMs: config.webhookBackoffMs });
  const sender = createSender({
    config,
    clock,
    endpoints,
    store: deliveries,
    dispatcher,
    log,
  });
  const drainer = createDrainer({
    store: deliveries,
    endpoints,
    sender,
    log,
    storage: db.storage,
    limits: {
      concurrency: 32,
      perEndpoint: 2,
      perAccount: 8,
      leaseMs: config.webhookTimeoutMs + LEASE_MARGIN_MS,
      ...deps.limits,
    },
  });
  const outbox = createOutbox({
    db,
    clock,
    alertMaxAgeMs: config.alertMaxAgeMs,
    onEnqueued: () => drainer.kick(),
  });
  return {
    endpoints,
    follows: createFollows(db, clock),
    outbox,
    deliveries,
    sender,
    drainer,
    close() {
      void dispatcher.destroy();
    },
  };
}
