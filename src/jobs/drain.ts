import type { Core } from "../core";
import { DRAIN_WRITER, type DrainSummary } from "../webhooks/drainer";
import type { ScheduledJob } from "./scheduler";

/** Every second: the backstop that picks up retries coming due and leases that lapsed. */
export const DRAIN_PATTERN = "* * * * * *";

/** `jobs run drain`: sends every delivery due now and reports what became of them. */
export function drainOnce(app: Core): Promise<DrainSummary> {
  return app.webhooks.drainer.drainOnce();
}

/**
 * The server's drain job. It only fills the drainer's free slots and returns; the sends finish
 * in the background and refill the pool themselves, so a slow endpoint never delays a tick.
 */
export function drainJob(app: Core): ScheduledJob {
  app.webhooks.drainer.start();
  return {
    name: "drain",
    // The drainer reports its own bookkeeping to the storage watch, once outcomes are recorded.
    writer: DRAIN_WRITER,
    reportsWrites: true,
    pattern: DRAIN_PATTERN,
    run: () => app.webhooks.drainer.pump(),
    idle: (summary) => (summary as { claimed: number }).claimed === 0,
  };
}
