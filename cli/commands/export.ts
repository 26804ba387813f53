import type { Command } from "commander";
import { exportParquet } from "../../src/history/export";
import {
  type CommonOptions,
  instantArgument,
  outDirectory,
  print,
  table,
  withApp,
  withDbOption,
} from "../context";
import { CliError } from "../errors";

interface ExportOptions extends CommonOptions {
  out: string;
  from?: number;
  to?: number;
}

/** `smartmoney export`: Parquet files for analysts (docs/operations.md, "Export"). */
export function registerExport(program: Command): void {
  withDbOption(program.command("export"))
    .description(
      "write fills, bets, wallet stats and markets as Parquet files (zstd) into a directory",
    )
    .requiredOption("--out <dir>", "directory to write into (created if missing)")
    .option("--from <date>", "fills at or after this instant (default: the first)", instantArgument)
    .option("--to <date>", "fills before this instant (default: all)", instantArgument)
    .option("--json", "print JSON")
    .action((options: ExportOptions) =>
      withApp(options, async ({ db, config }) => {
        if (options.from !== undefined && options.to !== undefined && options.from >= options.to) {
          throw new CliError("--from must be before --to");
        }
        outDirectory(options.out);
        const started = performance.now();
        const files = await exportParquet(db.reader, db.path, {
          out: options.out,
          from: options.from,
          to: options.to,
          memoryMb: config.memoryMb,
        });
        const seconds = (performance.now() - started) / 1000;
        print(options, { out: options.out, seconds, files }, () =>
          [
            table(
              files.map((f) => ({ file: f.path, rows: f.rows, bytes: f.bytes })),
              ["file", "rows", "bytes"],
            ),
            `exported in ${seconds.toFixed(1)} s`,
          ].join("\n"),
        );
      }),
    );
}
