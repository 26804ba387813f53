import type { Command } from "commander";
import type { App } from "../src/app";
import type { Account } from "../src/auth/accounts";
import { type CommonOptions, printTable, withApp } from "./context";
import { CliError } from "./errors";

/** The account a command acts for, by its name; a clear error when there is none. */
export function accountNamed(app: App, name: string): Account {
  const found = app.accounts.get(name);
  if (!found) {
    throw new CliError(`no account named "${name}" (create one with: keys mint --account ${name})`);
  }
  return found;
}

/** The account an optional --account names; null when it is omitted (every account's). */
export function optionalAccount(app: App, name: string | undefined): Account | null {
  return name === undefined ? null : accountNamed(app, name);
}

/** An account's name by its id (null for none or an unknown id), for listings that span accounts. */
export function accountNames(app: App): (id: number | null) => string | null {
  const names = new Map(app.accounts.list().map((a) => [a.id, a.name]));
  return (id) => (id === null ? null : (names.get(id) ?? null));
}

/**
 * A listing that spans accounts, narrowed to one by --account: `rows` gets that account's id (null:
 * every account's) and a function naming an account by its id. Printed as JSON with --json, else
 * as a table of `columns`.
 */
export function listAcrossAccounts<Row extends Record<string, unknown>>(
  command: Command,
  rows: (
    app: App,
    accountId: number | null,
    accountName: (id: number | null) => string | null,
  ) => Row[],
  columns: (keyof Row & string)[],
): Command {
  return command
    .option("--account <name>", "only this account's")
    .option("--json", "print JSON")
    .action((options: CommonOptions & { account?: string }) =>
      withApp(options, ({ app }) => {
        const owner = optionalAccount(app, options.account);
        printTable(options, rows(app, owner?.id ?? null, accountNames(app)), columns);
      }),
    );
}
