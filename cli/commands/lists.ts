import type { Command } from "commander";
import { isoOrNull } from "../../src/domain";
import { accountNames, optionalAccount } from "../accounts";
import { type CommonOptions, print, printTable, withApp, withDbOption } from "../context";
import { must } from "../errors";

/** `smartmoney lists`: named lists of wallets that accounts can follow. */
export function registerLists(program: Command): void {
  const lists = program
    .command("lists")
    .description("named lists of wallets an account can follow");

  withDbOption(lists.command("create"))
    .description("create a list (owned by an account, or the operator's when --account is omitted)")
    .argument("<slug>")
    .option("--account <name>", "owning account")
    .option("--json", "print JSON")
    .action((slug: string, options: CommonOptions & { account?: string }) =>
      withApp(options, ({ app }) => {
        const owner = optionalAccount(app, options.account);
        const list = must(app.webhooks.follows.createList(slug, owner?.id ?? null));
        print(
          options,
          { slug: list.slug, account: owner?.name ?? null, created_at: isoOrNull(list.createdAt) },
          () => `created list ${list.slug}${owner ? ` (owned by ${owner.name})` : ""}`,
        );
      }),
    );

  for (const verb of ["add", "remove"] as const) {
    withDbOption(lists.command(verb))
      .description(verb === "add" ? "add wallets to a list" : "remove wallets from a list")
      .argument("<slug>")
      .argument("<addresses...>")
      .option("--json", "print JSON")
      .action((slug: string, addresses: string[], options: CommonOptions) =>
        withApp(options, ({ app }) => {
          const f = app.webhooks.follows;
          const { changed } = must(
            verb === "add" ? f.addToList(slug, addresses) : f.removeFromList(slug, addresses),
          );
          print(
            options,
            { slug, [verb === "add" ? "added" : "removed"]: changed },
            () =>
              `${verb === "add" ? "added" : "removed"} ${changed} wallet(s) ${verb === "add" ? "to" : "from"} ${slug}`,
          );
        }),
      );
  }

  withDbOption(lists.command("list"))
    .description("list the lists with their member counts")
    .option("--json", "print JSON")
    .action((options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const accountName = accountNames(app);
        const rows = app.webhooks.follows.lists().map((l) => ({
          slug: l.slug,
          account: accountName(l.accountId),
          members: l.members,
          created_at: isoOrNull(l.createdAt),
        }));
        printTable(options, rows, ["slug", "account", "members", "created_at"]);
      }),
    );

  withDbOption(lists.command("show"))
    .description("print a list's members")
    .argument("<slug>")
    .option("--json", "print JSON")
    .action((slug: string, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const members = must(app.webhooks.follows.members(slug));
        print(options, { slug, members }, () =>
          members.length === 0 ? "(no members)" : members.join("\n"),
        );
      }),
    );
}
