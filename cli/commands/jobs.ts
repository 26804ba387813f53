import type { Command } from "commander";
import type { App } from "../../src/app";
import { systemClock } from "../../src/clock";
import { drainOnce } from "../../src/jobs/drain";
import { compactNow, refreshNow } from "../../src/jobs/refresh";
import { runScheduledJobs } from "../../src/jobs/schedule";
import { checkpointLedgerForServer, yieldCpuToServer } from "../background";
import {
  type CommonOptions,
  clockFrom,
  print,
  settingFlag,
  withApp,
  withDbOption,
} from "../context";
import { CliError } from "../errors";
import { withProgress } from "../progress";
import { ingestJobSummary } from "./ingest";

/** Jobs the scheduler runs, runnable by hand; each returns its summary. */
const JOBS: Record<string, (app: App, options: JobOptions) => Promise<object> | object> = {
  drain: drainOnce,
  refresh: (app, options) => refreshNow(app, { full: options.full }),
  ingest: ingestJobSummary,
  compact: (app) => {
    const retention = app.deps.config.fillRetentionMs;
    if (retention === null) {
      throw new CliError(
        "fill retention is off: set SMARTMONEY_FILL_RETENTION (a duration of at least 720h) to compact resolved markets",
      );
    }
    // The first compaction of a database upgraded with years of fills moves them all: a bar.
    return withProgress((report) =>
      compactNow(app, retention, (done, total) =>
        report({ task: "compacting", done, total, unit: "markets" }),
      ),
    );
  },
};

interface JobOptions extends CommonOptions {
  /** refresh: rebuild every read model instead of only what changed. */
  full?: boolean;
}

export function registerJobs(program: Command): void {
  const jobs = program.command("jobs").description("run a scheduled job now");

  withDbOption(jobs.command("run"))
    .description(`run one job now and print its summary (${Object.keys(JOBS).join(", ")})`)
    .argument("<name>", `one of ${Object.keys(JOBS).join(", ")}`)
    .option("--full", "refresh: rebuild every read model, not only what changed")
    .option("--now <time>", "run as if the clock read TIME at start (as `serve --now`)")
    .option("--json", "print JSON")
    .action((name: string, options: JobOptions & { now?: string }) =>
      withApp(
        options,
        async ({ app }) => {
          const job = JOBS[name];
          if (!job)
            throw new CliError(`no job "${name}": choose one of ${Object.keys(JOBS).join(", ")}`);
          const summary = await job(app, options);
          print(options, { job: name, ...summary }, () =>
            [`${name}:`, ...summaryLines(summary, "  ")].join("\n"),
          );
        },
        options.now === undefined ? systemClock : clockFrom(options.now),
      ),
    );

  withDbOption(jobs.command("schedule"))
    .description(
      "run the scheduled jobs (deliveries, refresh, ingest) until SIGTERM or SIGINT; `serve` runs this beside itself",
    )
    .option(...settingFlag("SMARTMONEY_PUBLIC_URL", "url", "base for profile links in webhooks"))
    .option("--now <time>", "run as if the clock read TIME at start (as `serve --now`)")
    .action((options: CommonOptions & { now?: string }) =>
      withApp(
        options,
        async ({ app, db, log }) => {
          // Started by `serve`: the API comes first whenever both want the CPU, and the rate-limit
          // ledger's checkpoints (and their fsyncs) happen here, off its request thread.
          const stopCheckpoints = process.send ? checkpointLedgerForServer(db, log) : () => {};
          if (process.send)
            log.info({ niceness: yieldCpuToServer() }, "jobs yield the CPU to the server");
          // The server that started this process shows the storage state at /healthz.
          const stopReporting = db.storage.onChange(() => {
            if (process.connected) process.send?.({ storage: db.storage.ownStatus() });
          });
          const scheduler = runScheduledJobs(app);
          log.info({ pid: process.pid }, "jobs scheduled");
          const reason = await untilSignal();
          log.info({ reason }, "jobs stopping");
          await scheduler.stop();
          stopCheckpoints();
          stopReporting();
          log.info("jobs stopped");
          // An open IPC channel would keep this process alive.
          if (process.connected) process.disconnect?.();
        },
        options.now === undefined ? systemClock : clockFrom(options.now),
      ),
    );
}

/**
 * Resolves on the first SIGTERM or SIGINT, or, when `serve` started this process, once the IPC
 * channel to it closes: a server that was killed outright leaves no jobs running behind it.
 * Later signals are ignored, not left to end the process mid-stop: a service manager signals
 * every process of the service, and the CLI that started this one in a sized heap
 * (cli/sized-heap.ts) passes the same signal on. SIGKILL stops it at once.
 */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (reason: string) => {
      process.off("disconnect", onDisconnect);
      resolve(reason);
    };
    const onTerm = () => on("SIGTERM");
    const onInt = () => on("SIGINT");
    const onDisconnect = () => on("server gone");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
    if (process.send) process.on("disconnect", onDisconnect);
  });
}

/**
 * A job's summary as text: one `key value` line per field, and a nested object (the refresh's
 * phases, its extensions) as its own block of lines indented under its key.
 */
function summaryLines(summary: object, indent: string): string[] {
  return Object.entries(summary).flatMap(([key, value]) =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? [`${indent}${key}`, ...summaryLines(value, `${indent}  `)]
      : [`${indent}${key} ${Array.isArray(value) ? value.join(", ") : String(value)}`],
  );
}
