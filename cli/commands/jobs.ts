import type { Command } from "commander";
import type { App } from "../../src/app";
import { drainOnce } from "../../src/jobs/drain";
import { type CommonOptions, print, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

/** Jobs the scheduler runs, runnable by hand; each returns its summary. */
const JOBS: Record<string, (app: App) => Promise<object> | object> = {
  drain: drainOnce,
};

export function registerJobs(program: Command): void {
  const jobs = program.command("jobs").description("run a scheduled job now");

  withDbOption(jobs.command("run"))
    .description(`run one job now and print its summary (${Object.keys(JOBS).join(", ")})`)
    .argument("<name>", `one of ${Object.keys(JOBS).join(", ")}`)
    .option("--json", "print JSON")
    .action((name: string, options: CommonOptions) =>
      withApp(options, async ({ app }) => {
        const job = JOBS[name];
        if (!job)
          throw new CliError(`no job "${name}": choose one of ${Object.keys(JOBS).join(", ")}`);
        const summary = await job(app);
        print(options, { job: name, ...summary }, () =>
          [
            `${name}:`,
            ...Object.entries(summary).map(([key, value]) => `  ${key} ${String(value)}`),
          ].join("\n"),
        );
      }),
    );
}
