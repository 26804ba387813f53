import { Command, CommanderError } from "commander";
import { registerDatabase } from "./commands/database";
import { registerImport } from "./commands/import";
import { registerIngest } from "./commands/ingest";
import { registerInvestigations } from "./commands/investigations";
import { registerJobs } from "./commands/jobs";
import { registerAccounts, registerKeys } from "./commands/keys";
import { registerMcp } from "./commands/mcp";
import { registerRestore } from "./commands/restore";
import { registerSeed } from "./commands/seed";
import { registerServe } from "./commands/serve";
import { registerStatus } from "./commands/status";
import {
  registerDeliveries,
  registerFollows,
  registerLists,
  registerWebhooks,
} from "./commands/webhooks";
import { CliError } from "./errors";

/** Exit status: 0 success, 1 failure (one line on stderr), 2 usage error. */
export async function main(argv: string[]): Promise<number> {
  const program = new Command()
    .name("smartmoney")
    .description("Polymarket smart-money intelligence appliance: REST API, MCP and signed webhooks")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });

  registerServe(program);
  registerDatabase(program);
  registerStatus(program);
  registerRestore(program);
  registerImport(program);
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

  for (const command of allCommands(program)) command.exitOverride();
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
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`smartmoney: ${message.split("\n")[0]}\n`);
    return 1;
  }
}

function* allCommands(command: Command): Generator<Command> {
  for (const sub of command.commands) {
    yield sub;
    yield* allCommands(sub);
  }
}
