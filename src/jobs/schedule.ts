import type { Core } from "../core";
import { ingestJob } from "../ingest/polymarket/job";
import { drainJob } from "./drain";
import { refreshJob } from "./refresh";
import { type ScheduledJob, type Scheduler, startScheduler } from "./scheduler";

/** What runs beside the API: webhook deliveries, the read-model refresh, and ingest when set. */
export function scheduledJobs(app: Core): ScheduledJob[] {
  const { config } = app.deps;
  return [
    drainJob(app),
    refreshJob(app),
    ...(config.ingestCron ? [ingestJob(app, config.ingestCron)] : []),
  ];
}

/** Starts the jobs; `stop` stops scheduling, lets runs in progress finish, and stops the drainer. */
export function runScheduledJobs(app: Core): Scheduler {
  const scheduler = startScheduler(scheduledJobs(app), app.deps.log);
  return {
    async stop() {
      await scheduler.stop();
      await app.webhooks.drainer.stop();
    },
  };
}
