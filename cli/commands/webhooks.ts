import { type Command, Option } from "commander";
import { isoOrNull } from "../../src/domain";
import { CHANNELS, type Channel, SCORE_TYPES, type ScoreType } from "../../src/webhooks/endpoints";
import { accountNamed, listAcrossAccounts } from "../accounts";
import { type CommonOptions, parseInteger, print, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

/** `smartmoney webhooks`: an account's webhook endpoints (docs/webhooks.md). */
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
          const owner = accountNamed(app, options.account);
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

  listAcrossAccounts(
    withDbOption(webhooks.command("list")).description("list live endpoints (never their secrets)"),
    (app, accountId, accountName) =>
      app.webhooks.endpoints.list(accountId).map((e) => ({
        id: e.id,
        account: accountName(e.accountId),
        channel: e.channel,
        callback_url: e.callbackUrl,
        min_score: e.minScore,
        score_type: e.scoreType,
        category: e.category,
        created_at: isoOrNull(e.createdAt),
      })),
    [
      "id",
      "account",
      "channel",
      "callback_url",
      "min_score",
      "score_type",
      "category",
      "created_at",
    ],
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
