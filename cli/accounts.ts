import type { App } from "../src/app";
import type { Account } from "../src/auth/accounts";
import { CliError } from "./errors";

/** The account a command acts for, by its name; a clear error when there is none. */
export function accountNamed(app: App, name: string): Account {
  const found = app.accounts.get(name);
  if (!found) {
    throw new CliError(`no account named "${name}" (create one with: keys mint --account ${name})`);
  }
  return found;
}

/** Account names by id, for listings that span accounts. */
export function accountNames(app: App): Map<number, string> {
  return new Map(app.accounts.list().map((a) => [a.id, a.name]));
}
