import { type Command, InvalidArgumentError, Option } from "commander";
import { seedWorld } from "../../src/fixtures/seed-world";
import type { Scale } from "../../src/fixtures/world";
import { type CommonOptions, instantArgument, print, withApp, withDbOption } from "../context";
import { must } from "../errors";

interface SeedCommandOptions extends CommonOptions {
  scale: Scale;
  seed: number;
  now?: number;
}

export function registerSeed(program: Command): void {
  withDbOption(program.command("seed"))
    .description(
      "generate the deterministic fixture world and import it into an empty database (manifest of planted populations at <db>.manifest.json)",
    )
    .addOption(
      new Option("--scale <scale>", "world size")
        .choices(["small", "medium", "large"])
        .default("small"),
    )
    .option("--seed <n>", "generator seed", parseSeed, 42)
    .option(
      "--now <time>",
      "the world's present (default: now); activity spans the 120 days before",
      instantArgument,
    )
    .option("--json", "print JSON")
    .action((options: SeedCommandOptions) =>
      withApp(options, async ({ app, config }) => {
        const progress = process.stderr.isTTY && !options.json;
        const started = performance.now();
        const summary = must(
          await seedWorld(app, {
            scale: options.scale,
            seed: options.seed,
            now: options.now ?? app.deps.clock.now(),
            manifestPath: `${config.dbPath}.manifest.json`,
            onProgress: progress
              ? (rows) => process.stderr.write(`\rseeding: ${rows.toLocaleString("en-US")} rows`)
              : undefined,
          }),
        );
        if (progress) process.stderr.write("\n");
        const seconds = (performance.now() - started) / 1000;
        const counts = Object.fromEntries(
          Object.entries(summary.import.counts).map(([type, c]) => [type, c.new]),
        );
        print(
          options,
          {
            scale: options.scale,
            seed: options.seed,
            now: summary.manifest.now,
            rows: summary.import.rows,
            counts,
            manifest: summary.manifestPath,
            refresh: summary.refresh,
            seconds,
          },
          () =>
            [
              `seeded the ${options.scale} world (seed ${options.seed}, now ${summary.manifest.now}) in ${seconds.toFixed(1)} s`,
              `  ${Object.entries(counts)
                .map(([t, n]) => `${n} ${t}s`)
                .join(", ")}`,
              `  read models: ${summary.refresh.wallets} wallets, ${summary.refresh.markets} markets`,
              `  planted populations: ${summary.manifestPath}`,
            ].join("\n"),
        );
      }),
    );
}

function parseSeed(text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new InvalidArgumentError("must be a whole number");
  return Number(text);
}
