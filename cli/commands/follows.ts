import type { Command } from "commander";
import { isoOrNull } from "../../src/domain";
import { accountNamed, listAcrossAccounts } from "../accounts";
import { type CommonOptions, print, withApp, withDbOption } from "../context";
import { CliError, must } from "../errors";

/** `smartmoney follows`: the wallets and lists an account follows (the dashboard channel). */
export function registerFollows(program: Command): void {
  const follows = program
    .command("follows")
    .description("wallets and lists an account follows (the dashboard channel's alerts)");

  for (const verb of ["add", "remove"] as const) {
    withDbOption(follows.command(verb))
      .description(
        verb === "add"
          ? "follow a wallet directly or a list of wallets"
          : "stop following a wallet or a list",
      )
      .requiredOption("--account <name>", "the following account")
      .option("--wallet <address>", "a wallet address")
      .option("--list <slug>", "a list's slug")
      .option("--json", "print JSON")
      .action((options: CommonOptions & { account: string; wallet?: string; list?: string }) =>
        withApp(options, ({ app }) => {
          if ((options.wallet === undefined) === (options.list === undefined)) {
            throw new CliError("give exactly one of --wallet ADDRESS or --list SLUG");
          }
          const owner = accountNamed(app, options.account);
          const f = app.webhooks.follows;
          const target = options.wallet ?? `list:${options.list}`;
          let changed: boolean;
          if (options.wallet !== undefined) {
            changed =
              verb === "add"
                ? must(f.followWallet(owner.id, options.wallet)).added
                : must(f.unfollowWallet(owner.id, options.wallet)).removed;
          } else {
            changed =
              verb === "add"
                ? must(f.followList(owner.id, options.list!)).added
                : must(f.unfollowList(owner.id, options.list!)).removed;
          }
          const data = { account: owner.name, target: target.toLowerCase(), changed };
          print(options, data, () => {
            if (verb === "add") {
              return changed
                ? `${owner.name} follows ${data.target}`
                : `${owner.name} already follows ${data.target}`;
            }
            return changed
              ? `${owner.name} no longer follows ${data.target}`
              : `${owner.name} did not follow ${data.target}`;
          });
        }),
      );
  }

  listAcrossAccounts(
    withDbOption(follows.command("list")).description("list follows, direct wallets first"),
    (app, accountId, accountName) =>
      app.webhooks.follows.follows(accountId).map((f) => ({
        account: accountName(f.accountId),
        kind: f.kind,
        target: f.target,
        created_at: isoOrNull(f.createdAt),
      })),
    ["account", "kind", "target", "created_at"],
  );
}
