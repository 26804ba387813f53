import type { Command } from "commander";
import type { App } from "../../src/app";
import { drainOnce } from "../../src/jobs/drain";
import { refreshNow } from "../../src/jobs/refresh";
import { type CommonOptions, print, withApp, withDbOption } from "../context";
import { CliError } from "../errors";
import { ingestJobSummary } from "./ingest";

/** Jobs the scheduler runs, runnable by hand; each returns its summary. */
const JOBS: Record<string, (app: App, options: JobOptions) => Promise<object> | object> = {
  drain: drainOnce,
  refresh: (app, options) => refreshNow(app, { full: options.full }),
  ingest: ingestJobSummary,
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
    .option("--json", "print JSON")
    .action((name: string, options: JobOptions) =>
      withApp(options, async ({ app }) => {
        const job = JOBS[name];
        if (!job)
          throw new CliError(`no job "${name}": choose one of ${Object.keys(JOBS).join(", ")}`);
        const summary = await job(app, options);
        print(options, { job: name, ...summary }, () =>
          [
            `${name}:`,
            ...Object.entries(summary).map(([key, value]) => `  ${key} ${String(value)}`),
          ].join("\n"),
        );
      }),
    );
}
