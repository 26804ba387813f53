import { type Command, InvalidArgumentError, Option } from "commander";
import { TIERS, type Tier } from "../../src/auth/tiers";
import { isoOrNull } from "../../src/domain";
import { accountNamed } from "../accounts";
import { type CommonOptions, print, printTable, withApp, withDbOption } from "../context";
import { CliError, must } from "../errors";
import { registerInstallationKey } from "./installation-key";

const tierOption = () =>
  new Option("--tier <tier>", "the account's tier").choices(TIERS).makeOptionMandatory();

export function registerKeys(program: Command): void {
  const keys = program
    .command("keys")
    .description("mint, list and revoke API and MCP keys; rotate the installation key");
  registerInstallationKey(keys);

  withDbOption(keys.command("mint"))
    .description("mint a key (printed once; only its SHA-256 is stored)")
    .addOption(tierOption())
    .option("--account <name>", "account to mint for (created when new)")
    .addOption(new Option("--kind <kind>", "key kind").choices(["api", "mcp"]).default("api"))
    .option("--json", "print JSON")
    .action((options: CommonOptions & { tier: Tier; account?: string; kind: "api" | "mcp" }) =>
      withApp(options, ({ app }) => {
        const minted = must(
          app.accounts.mintKey({
            tier: options.tier,
            account: options.account,
            kind: options.kind,
          }),
        );
        const { key, id, account, tier } = minted;
        print(options, { key, id, account, tier }, () =>
          [
            key,
            `id ${id}, account ${account}, tier ${tier}, kind ${minted.kind}`,
            "This key is shown once; store it now.",
          ].join("\n"),
        );
      }),
    );

  withDbOption(keys.command("list"))
    .description("list keys (never the keys themselves)")
    .option("--json", "print JSON")
    .action((options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const rows = app.accounts.listKeys().map((k) => ({
          id: k.id,
          account: k.account,
          tier: k.tier,
          kind: k.kind,
          hint: k.hint,
          created_at: isoOrNull(k.createdAt),
          revoked_at: isoOrNull(k.revokedAt),
        }));
        printTable(options, rows, [
          "id",
          "account",
          "tier",
          "kind",
          "hint",
          "created_at",
          "revoked_at",
        ]);
      }),
    );

  withDbOption(keys.command("revoke"))
    .description("revoke a key by id or by the key itself; a running server refuses it at once")
    .argument("<id-or-key>")
    .option("--json", "print JSON")
    .action((idOrKey: string, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const key = must(app.accounts.revokeKey(idOrKey));
        print(
          options,
          { id: key.id, account: key.account, revoked_at: isoOrNull(key.revokedAt) },
          () => `revoked ${key.id} (account ${key.account})`,
        );
      }),
    );
}

export function registerAccounts(program: Command): void {
  const accounts = program.command("accounts").description("list accounts, set tiers and limits");

  withDbOption(accounts.command("list"))
    .description("list accounts with their tier and effective rate limits")
    .option("--json", "print JSON")
    .action((options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const rows = app.accounts.list().map((a) => ({
          name: a.name,
          tier: a.tier,
          hourly_limit: a.hourlyLimit,
          monthly_limit: a.monthlyLimit,
          limits_overridden: a.limitsOverridden,
          created_at: isoOrNull(a.createdAt),
        }));
        printTable(options, rows, [
          "name",
          "tier",
          "hourly_limit",
          "monthly_limit",
          "limits_overridden",
          "created_at",
        ]);
      }),
    );

  withDbOption(accounts.command("set-tier"))
    .description("move an account (and so all its keys) to another tier")
    .argument("<name>")
    .argument("<tier>", `one of ${TIERS.join(", ")}`)
    .option("--json", "print JSON")
    .action((name: string, tier: string, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        if (!(TIERS as readonly string[]).includes(tier)) {
          throw new CliError(`tier "${tier}" must be one of ${TIERS.join(", ")}`);
        }
        accountNamed(app, name);
        const account = must(app.accounts.setTier(name, tier as Tier));
        print(
          options,
          { name: account.name, tier: account.tier },
          () => `account ${account.name} is now on ${account.tier}`,
        );
      }),
    );

  withDbOption(accounts.command("set-limits"))
    .description("override the tier's rate limits for one account (--reset restores them)")
    .argument("<name>")
    .option("--hourly <n>", "calls per rolling hour", parseCount)
    .option("--monthly <n>", "calls per rolling 30 days", parseCount)
    .option("--reset", "restore the tier's limits")
    .option("--json", "print JSON")
    .action(
      (
        name: string,
        options: CommonOptions & { hourly?: number; monthly?: number; reset?: boolean },
      ) =>
        withApp(options, ({ app }) => {
          let limits: { hourly: number; monthly: number } | null = null;
          if (options.reset) {
            if (options.hourly !== undefined || options.monthly !== undefined) {
              throw new CliError("--reset cannot be combined with --hourly or --monthly");
            }
          } else {
            const current = accountNamed(app, name);
            if (options.hourly === undefined && options.monthly === undefined) {
              throw new CliError("give --hourly N, --monthly N, or --reset");
            }
            limits = {
              hourly: options.hourly ?? current.hourlyLimit,
              monthly: options.monthly ?? current.monthlyLimit,
            };
          }
          const account = must(app.accounts.setLimits(name, limits));
          const data = {
            name: account.name,
            tier: account.tier,
            hourly_limit: account.hourlyLimit,
            monthly_limit: account.monthlyLimit,
          };
          print(
            options,
            data,
            () =>
              `account ${account.name}: ${account.hourlyLimit}/hour, ${account.monthlyLimit}/30 days${account.limitsOverridden ? " (override)" : " (tier default)"}`,
          );
        }),
    );
}

function parseCount(text: string): number {
  if (!/^\d+$/.test(text)) throw new InvalidArgumentError(`"${text}" is not a whole number`);
  return Number(text);
}
