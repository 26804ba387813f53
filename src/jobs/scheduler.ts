import { Cron } from "croner";
import type { StorageWatch } from "../db/storage";
import type { Log } from "../log";

export interface ScheduledJob {
  name: string;
  /** A cron pattern (croner syntax, seconds optional). */
  pattern: string;
  /** A plain function; returns a summary object for the log. */
  run(): Promise<unknown> | unknown;
  /** True when a run's summary says nothing happened: logged at debug, not info. */
  idle?(summary: unknown): boolean;
  /** The writer it reports to the storage watch as; its name when absent. */
  writer?: string;
  /**
   * True when its writes outlive the run (the drainer records outcomes after `run` returns) and
   * it reports them to the storage watch itself: a run that returns has not written yet.
   */
  reportsWrites?: boolean;
}

export interface Scheduler {
  /** Stops scheduling and waits for runs in progress to finish. */
  stop(): Promise<void>;
}

/**
 * croner only decides when; the jobs are plain functions that the CLI can also run by hand.
 * `protect` keeps a slow run from overlapping the next one.
 *
 * With a storage watch, a full disk pauses the jobs instead of failing every tick: a job whose
 * run met it rolls back (its transaction is all-or-nothing), then runs again only when its retry
 * is due (5 s, doubling to 2 minutes); the other jobs skip their ticks until the storage has room
 * again. The first run that goes through after space is freed resumes everything.
 */
export function startScheduler(jobs: ScheduledJob[], log: Log, storage?: StorageWatch): Scheduler {
  const running = new Set<Promise<unknown>>();
  const crons = jobs.map((job) => {
    const tick = jobTick(job, log, storage, running);
    return new Cron(job.pattern, { protect: true, name: job.name }, async () => {
      await tick();
    });
  });
  return {
    async stop() {
      for (const cron of crons) cron.stop();
      await Promise.allSettled([...running]);
    },
  };
}

/**
 * What one scheduled tick of `job` does: run it unless the full disk holds it back, log how it
 * went, and tell the storage watch. `running` holds the run while it lasts, for `stop`.
 * Resolves to whether the job ran.
 */
export function jobTick(
  job: ScheduledJob,
  log: Log,
  storage?: StorageWatch,
  running: Set<Promise<unknown>> = new Set(),
): () => Promise<boolean> {
  const writer = job.writer ?? job.name;
  return async () => {
    if (storage && !storage.mayWrite(writer)) return false;
    const started = performance.now();
    const run = (async () => job.run())();
    running.add(run);
    try {
      const summary = await run;
      if (!job.reportsWrites) storage?.succeeded(writer);
      const line = {
        job: job.name,
        duration_ms: Math.round(performance.now() - started),
        summary,
      };
      if (job.idle?.(summary)) log.debug(line, "job finished");
      else log.info(line, "job finished");
    } catch (error) {
      if (storage?.failed(writer, error, { retries: true })) {
        log.warn(
          { job: job.name, retry_in_ms: storage.retryIn(writer) },
          "job rolled back: the disk is full; it runs again when the retry is due",
        );
      } else {
        log.error({ job: job.name, err: error }, "job failed");
      }
    } finally {
      running.delete(run);
    }
    return true;
  };
}
