import { Cron } from "croner";
import type { Log } from "../log";

export interface ScheduledJob {
  name: string;
  /** A cron pattern (croner syntax, seconds optional). */
  pattern: string;
  /** A plain function; returns a summary object for the log. */
  run(): Promise<unknown> | unknown;
  /** True when a run's summary says nothing happened: logged at debug, not info. */
  idle?(summary: unknown): boolean;
}

export interface Scheduler {
  /** Stops scheduling and waits for runs in progress to finish. */
  stop(): Promise<void>;
}

/**
 * croner only decides when; the jobs are plain functions that the CLI can also run by hand.
 * `protect` keeps a slow run from overlapping the next one.
 */
export function startScheduler(jobs: ScheduledJob[], log: Log): Scheduler {
  const running = new Set<Promise<unknown>>();
  const crons = jobs.map(
    (job) =>
      new Cron(job.pattern, { protect: true, name: job.name }, async () => {
        const started = performance.now();
        const run = (async () => job.run())();
        running.add(run);
        try {
          const summary = await run;
          const line = {
            job: job.name,
            duration_ms: Math.round(performance.now() - started),
            summary,
          };
          if (job.idle?.(summary)) log.debug(line, "job finished");
          else log.info(line, "job finished");
        } catch (error) {
          log.error({ job: job.name, err: error }, "job failed");
        } finally {
          running.delete(run);
        }
      }),
  );
  return {
    async stop() {
      for (const cron of crons) cron.stop();
      await Promise.allSettled([...running]);
    },
  };
}
