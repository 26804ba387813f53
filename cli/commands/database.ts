import { existsSync } from "node:fs";
import type { Command } from "commander";
import { migrate } from "../../src/db/migrate";
import {
  type CommonOptions,
  configFrom,
  openDatabase,
  print,
  withApp,
  withDbOption,
} from "../context";
import { CliError } from "../errors";
import { withMigrationProgress } from "../migration-progress";

export function registerDatabase(program: Command): void {
  withDbOption(program.command("migrate"))
    .description("apply pending migrations and exit")
    .option("--json", "print JSON")
    .action((options: CommonOptions) => {
      const config = configFrom(options);
      const db = openDatabase(config.dbPath);
      try {
        const result = withMigrationProgress((onProgress) => migrate(db.writer, { onProgress }));
        print(options, { applied: result.applied, version: result.current }, () =>
          result.applied.length === 0
            ? `schema is up to date (version ${result.current})`
            : `applied ${result.applied.join(", ")}; schema version ${result.current}`,
        );
      } finally {
        db.close();
      }
    });

  withDbOption(program.command("backup"))
    .description("write a consistent copy of the live database to PATH (safe while serving)")
    .argument("<path>")
    .option("--json", "print JSON")
    .action((path: string, options: CommonOptions) =>
      withApp(options, async ({ db }) => {
        if (existsSync(path)) throw new CliError(`${path} already exists; choose a new file`);
        const started = performance.now();
        await db.writer.backup(path);
        const seconds = (performance.now() - started) / 1000;
        print(options, { path, seconds }, () => `backed up to ${path} in ${seconds.toFixed(2)} s`);
      }),
    );
}
