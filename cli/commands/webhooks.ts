import { type Command, InvalidArgumentError, Option } from "commander";
import type { App } from "../../src/app";
import type { Account } from "../../src/auth/accounts";
import { isoOrNull } from "../../src/domain";
import { DELIVERY_STATUSES, type DeliveryStatus } from "../../src/webhooks/deliveries";
import { CHANNELS, type Channel, SCORE_TYPES, type ScoreType } from "../../src/webhooks/endpoints";
import {
  type CommonOptions,
  instantArgument,
  print,
  table,
  withApp,
  withDbOption,
} from "../context";
import { CliError, must } from "../errors";

function account(app: App, name: string): Account {
  const found = app.accounts.get(name);
  if (!found) {
    throw new CliError(`no account named "${name}" (create one with: keys mint --account ${name})`);
  }
  return found;
}

/** Account names by id, for listings that span accounts. */
function accountNames(app: App): Map<number, string> {
  return new Map(app.accounts.list().map((a) => [a.id, a.name]));
}

function parseInteger(min: number, max: number) {
  return (text: string) => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new InvalidArgumentError(`"${text}" must be a whole number from ${min} to ${max}`);
    }
    return Number(text);
  };
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command("webhooks")
    .description("manage webhook endpoints of both channels (dashboard and api)");

  withDbOption(webhooks.command("add"))
    .description("add an endpoint; its signing secret is printed once")
    .requiredOption("--account <name>", "owning account")
    .requiredOption("--url <url>", "callback URL (https, public host)")
    .addOption(
      new Option("--channel <channel>", "dashboard: followed-wallet alerts; api: filtered signals")
        .choices(CHANNELS)
        .makeOptionMandatory(),
    )
    .option("--min-score <n>", "only signals scoring at least N (0-100)", parseInteger(0, 100))
    .addOption(new Option("--score-type <type>", "only this signal type").choices(SCORE_TYPES))
    .option("--category <category>", "only markets of this category")
    .option("--json", "print JSON")
    .action(
      (
        options: CommonOptions & {
          account: string;
          url: string;
          channel: Channel;
          minScore?: number;
          scoreType?: ScoreType;
          category?: string;
        },
      ) =>
        withApp(options, ({ app }) => {
          const owner = account(app, options.account);
          const result = app.webhooks.endpoints.create({
            accountId: owner.id,
            tier: owner.tier,
            channel: options.channel,
            callbackUrl: options.url,
            minScore: options.minScore ?? null,
            scoreType: options.scoreType ?? null,
            category: options.category ?? null,
          });
          if (!result.ok) throw new CliError(result.reason);
          const { endpoint, secret } = result.value;
          const data = {
            id: endpoint.id,
            account: owner.name,
            channel: endpoint.channel,
            callback_url: endpoint.callbackUrl,
            min_score: endpoint.minScore,
            score_type: endpoint.scoreType,
            category: endpoint.category,
            secret,
            created_at: isoOrNull(endpoint.createdAt),
          };
          print(options, data, () =>
            [
              `added ${endpoint.id} (${endpoint.channel}) for ${owner.name} -> ${endpoint.callbackUrl}`,
              `secret ${secret}`,
              "This secret is shown once; store it now.",
            ].join("\n"),
          );
        }),
    );

  withDbOption(webhooks.command("list"))
    .description("list live endpoints (never their secrets)")
    .option("--account <name>", "only this account's")
    .option("--json", "print JSON")
    .action((options: CommonOptions & { account?: string }) =>
      withApp(options, ({ app }) => {
        const owner = options.account === undefined ? null : account(app, options.account);
        const names = accountNames(app);
        const rows = app.webhooks.endpoints.list(owner?.id ?? null).map((e) => ({
          id: e.id,
          account: names.get(e.accountId) ?? null,
          channel: e.channel,
          callback_url: e.callbackUrl,
          min_score: e.minScore,
          score_type: e.scoreType,
          category: e.category,
          created_at: isoOrNull(e.createdAt),
        }));
        print(options, rows, () =>
          table(rows, [
            "id",
            "account",
            "channel",
            "callback_url",
            "min_score",
            "score_type",
            "category",
            "created_at",
          ]),
        );
      }),
    );

  withDbOption(webhooks.command("remove"))
    .description("remove an endpoint; its waiting deliveries end as dead")
    .argument("<id>")
    .option("--json", "print JSON")
    .action((id: string, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        if (!app.webhooks.endpoints.remove(id)) throw new CliError(`no webhook endpoint ${id}`);
        print(options, { id, removed: true }, () => `removed ${id}`);
      }),
    );

  withDbOption(webhooks.command("test"))
    .description("send a sample payload to an endpoint now (the dashboard's Test action)")
    .argument("<id>")
    .option("--json", "print JSON")
    .action((id: string, options: CommonOptions) =>
      withApp(options, async ({ app }) => {
        const endpoint = app.webhooks.endpoints.get(id);
        if (!endpoint) throw new CliError(`no webhook endpoint ${id}`);
        const outcome = await app.webhooks.sender.sendTest(endpoint);
        const data = {
          delivery_id: outcome.deliveryId,
          event: outcome.event,
          ok: outcome.ok,
          status_code: outcome.statusCode,
          error: outcome.error,
          duration_ms: outcome.durationMs,
          response_excerpt: outcome.responseExcerpt,
        };
        print(options, data, () =>
          outcome.ok
            ? `delivered ${outcome.event} test to ${id}: HTTP ${outcome.statusCode} in ${outcome.durationMs} ms`
            : `test to ${id} failed: ${outcome.error}`,
        );
        if (!outcome.ok) throw new CliError(`test delivery failed: ${outcome.error}`);
      }),
    );
}

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
          const owner = account(app, options.account);
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

  withDbOption(follows.command("list"))
    .description("list follows, direct wallets first")
    .option("--account <name>", "only this account's")
    .option("--json", "print JSON")
    .action((options: CommonOptions & { account?: string }) =>
      withApp(options, ({ app }) => {
        const owner = options.account === undefined ? null : account(app, options.account);
        const names = accountNames(app);
        const rows = app.webhooks.follows.follows(owner?.id ?? null).map((f) => ({
          account: names.get(f.accountId) ?? null,
          kind: f.kind,
          target: f.target,
          created_at: isoOrNull(f.createdAt),
        }));
        print(options, rows, () => table(rows, ["account", "kind", "target", "created_at"]));
      }),
    );
}

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
        const owner = options.account === undefined ? null : account(app, options.account);
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
        const names = accountNames(app);
        const rows = app.webhooks.follows.lists().map((l) => ({
          slug: l.slug,
          account: l.accountId === null ? null : (names.get(l.accountId) ?? null),
          members: l.members,
          created_at: isoOrNull(l.createdAt),
        }));
        print(options, rows, () => table(rows, ["slug", "account", "members", "created_at"]));
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

export function registerDeliveries(program: Command): void {
  const deliveries = program
    .command("deliveries")
    .description("inspect and replay webhook deliveries");

  withDbOption(deliveries.command("list"))
    .description("recent deliveries, newest first")
    .addOption(new Option("--status <status>", "only this status").choices(DELIVERY_STATUSES))
    .option("--account <name>", "only this account's endpoints")
    .option("--limit <n>", "at most N rows (1-1000)", parseInteger(1, 1000), 50)
    .option("--json", "print JSON")
    .action(
      (options: CommonOptions & { status?: DeliveryStatus; account?: string; limit: number }) =>
        withApp(options, ({ app }) => {
          const owner = options.account === undefined ? undefined : account(app, options.account);
          const names = accountNames(app);
          const rows = app.webhooks.deliveries
            .recent({
              limit: options.limit,
              ...(options.status ? { status: options.status } : {}),
              ...(owner ? { accountId: owner.id } : {}),
            })
            .map((d) => ({
              id: d.id,
              account: names.get(d.accountId) ?? null,
              endpoint_id: d.endpointId,
              event: d.event,
              signal_id: d.signalId,
              status: d.status,
              attempts: d.attempts,
              last_status_code: d.lastStatusCode,
              last_error: d.lastError,
              next_attempt_at: isoOrNull(d.nextAttemptAt),
              created_at: isoOrNull(d.createdAt),
              delivered_at: isoOrNull(d.deliveredAt),
            }));
          print(options, rows, () =>
            table(rows, [
              "id",
              "account",
              "endpoint_id",
              "event",
              "status",
              "attempts",
              "last_status_code",
              "last_error",
              "created_at",
            ]),
          );
        }),
    );

  withDbOption(deliveries.command("show"))
    .description("one delivery with every attempt made")
    .argument("<id>")
    .option("--json", "print JSON")
    .action((id: string, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const d = app.webhooks.deliveries.get(id);
        if (!d) throw new CliError(`no delivery "${id}"`);
        const attempts = d.attemptLog.map((a) => ({
          attempt: a.attempt,
          started_at: isoOrNull(a.startedAt),
          duration_ms: a.durationMs,
          status_code: a.statusCode,
          error: a.error,
          response_excerpt: a.responseExcerpt,
        }));
        const data = {
          id: d.id,
          account: accountNames(app).get(d.accountId) ?? null,
          endpoint_id: d.endpointId,
          event: d.event,
          followed_via: d.followedVia,
          signal_id: d.signalId,
          status: d.status,
          attempts: d.attempts,
          last_status_code: d.lastStatusCode,
          last_error: d.lastError,
          next_attempt_at: isoOrNull(d.nextAttemptAt),
          created_at: isoOrNull(d.createdAt),
          delivered_at: isoOrNull(d.deliveredAt),
          attempt_log: attempts,
        };
        print(options, data, () => {
          const { attempt_log: _log, ...fields } = data;
          const head = Object.entries(fields).map(([k, v]) => `${k.padEnd(17)}${v ?? "-"}`);
          return [
            ...head,
            "",
            table(attempts, ["attempt", "started_at", "duration_ms", "status_code", "error"]),
          ].join("\n");
        });
      }),
    );

  withDbOption(deliveries.command("replay"))
    .description(
      "send deliveries again from a fresh round of attempts (same delivery id, new signatures)",
    )
    .argument("[ids...]", "delivery ids")
    .option("--dead", "replay every dead delivery (of live endpoints)")
    .option(
      "--since <time>",
      "with --dead: only deliveries created at or after this time",
      instantArgument,
    )
    .option("--account <name>", "with --dead: only this account's")
    .option("--json", "print JSON")
    .action(
      (
        ids: string[],
        options: CommonOptions & { dead?: boolean; since?: number; account?: string },
      ) =>
        withApp(options, ({ app }) => {
          if (options.dead === ids.length > 0) {
            throw new CliError("give delivery ids or --dead, not both and not neither");
          }
          if (!options.dead && (options.since !== undefined || options.account !== undefined)) {
            throw new CliError("--since and --account go with --dead");
          }
          const store = app.webhooks.deliveries;
          const owner = options.account === undefined ? undefined : account(app, options.account);
          const chosen = options.dead ? store.deadSince(options.since ?? 0, owner?.id) : ids;
          const replayed = chosen.length === 0 ? [] : must(store.replay(chosen));
          print(options, { replayed }, () =>
            replayed.length === 0
              ? "nothing to replay"
              : `queued ${replayed.length} deliver${replayed.length === 1 ? "y" : "ies"} again; a running server sends them within a second (or run: smartmoney jobs run drain)`,
          );
        }),
    );
}
