import { Command, CommanderError } from "commander";
import packageJson from "../package.json" with { type: "json" };
import { isStorageFull } from "../src/db/storage";
import { registerBacktest } from "./commands/backtest";
import { registerDatabase } from "./commands/database";
import { registerDeliveries } from "./commands/deliveries";
import { registerExport } from "./commands/export";
import { registerFollows } from "./commands/follows";
import { registerImport } from "./commands/import";
import { registerIngest } from "./commands/ingest";
import { registerInvestigations } from "./commands/investigations";
import { registerJobs } from "./commands/jobs";
import { registerAccounts, registerKeys } from "./commands/keys";
import { registerLists } from "./commands/lists";
import { registerMcp } from "./commands/mcp";
import { registerRestore } from "./commands/restore";
import { registerSeed } from "./commands/seed";
import { registerServe } from "./commands/serve";
import { registerStatus } from "./commands/status";
import { registerWebhooks } from "./commands/webhooks";
import { CliError } from "./errors";

/** Where help, version and usage text go; the reference generator (scripts/docs.ts) sets a width. */
export interface ProgramOutput {
  writeOut(text: string): void;
  writeErr(text: string): void;
  helpWidth?: number;
}

const processOutput: ProgramOutput = {
  writeOut: (text) => process.stdout.write(text),
  writeErr: (text) => process.stderr.write(text),
};

/** Every command, registered and not yet parsed. */
export function buildProgram(output: ProgramOutput = processOutput): Command {
  const program = new Command()
    .name("smartmoney")
    .description("Polymarket smart-money intelligence appliance: REST API, MCP and signed webhooks")
    .version(packageJson.version, "-V, --version", "print the version and exit")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({
      writeOut: output.writeOut,
      writeErr: output.writeErr,
      ...(output.helpWidth === undefined
        ? {}
        : { getOutHelpWidth: () => output.helpWidth!, getErrHelpWidth: () => output.helpWidth! }),
    });

  registerServe(program);
  registerDatabase(program);
  registerStatus(program);
  registerRestore(program);
  registerImport(program);
  registerExport(program);
  registerIngest(program);
  registerSeed(program);
  registerKeys(program);
  registerAccounts(program);
  registerWebhooks(program);
  registerFollows(program);
  registerLists(program);
  registerDeliveries(program);
  registerJobs(program);
  registerInvestigations(program);
  registerMcp(program);
  registerBacktest(program);
  for (const command of allCommands(program)) command.exitOverride();
  return program;
}

/** Exit status: 0 success, 1 failure (one line on stderr), 2 usage error. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version output are successes; everything else commander raises is usage.
      return error.code === "commander.helpDisplayed" ||
        error.code === "commander.help" ||
        error.code === "commander.version"
        ? 0
        : 2;
    }
    if (error instanceof CliError) {
      process.stderr.write(`smartmoney: ${error.message}\n`);
      return 1;
    }
    if (isStorageFull(error)) {
      process.stderr.write(`smartmoney: ${storageFullLine(error)}\n`);
      return 1;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`smartmoney: ${message.split("\n")[0]}\n`);
    return 1;
  }
}

export function* allCommands(command: Command): Generator<Command> {
  for (const sub of command.commands) {
    yield sub;
    yield* allCommands(sub);
  }
}

/**
 * The one line a command ends on when the disk is full (src/db/storage.ts): the write it was
 * making rolled back whole, so running the command again once there is room is all it takes.
 */
export function storageFullLine(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const why = typeof code === "string" && code !== "storage_full" ? ` (${code})` : "";
  return `the disk holding the database is full${why}: nothing was written; free space and run the command again`;
}
