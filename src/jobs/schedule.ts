import type { Core } from "../core";
import { ingestJob, serveStream } from "../ingest/polymarket/job";
import { drainJob } from "./drain";
import { refreshJob } from "./refresh";
import { type Scheduler, startScheduler } from "./scheduler";

/**
 * What runs beside the API (`jobs schedule`, which `serve` starts): webhook deliveries, the
 * read-model refresh and, when SMARTMONEY_INGEST_CRON is set, Polymarket ingest with its live
 * socket beside the scheduled rounds (which are its fallback). `stop` stops scheduling and the
 * socket, lets runs in progress finish, and stops the drainer.
 */
export function runScheduledJobs(app: Core): Scheduler {
  const { config, log } = app.deps;
  const ingest = config.ingestCron ? ingestJob(app, config.ingestCron) : null;
  const scheduler = startScheduler(
    [drainJob(app), refreshJob(app), ...(ingest ? [ingest] : [])],
    log,
    app.deps.db.storage,
  );
  const stream = ingest ? serveStream(app, () => ingest.runNow()) : null;
  return {
    async stop() {
      await stream?.stop();
      await scheduler.stop();
      await app.webhooks.drainer.stop();
    },
  };
}
