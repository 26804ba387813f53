import { type Command, Option } from "commander";
import { isoOrNull } from "../../src/domain";
import {
  DELIVERY_STATUSES,
  type Delivery,
  type DeliveryStatus,
  deliveryJson,
} from "../../src/webhooks/deliveries";
import { accountNames, optionalAccount } from "../accounts";
import {
  type CommonOptions,
  instantArgument,
  parseInteger,
  print,
  printTable,
  table,
  withApp,
  withDbOption,
} from "../context";
import { CliError, must } from "../errors";

/** `smartmoney deliveries`: the webhook outbox, its attempts, and replays. */
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
          const owner = optionalAccount(app, options.account);
          const accountName = accountNames(app);
          const rows = app.webhooks.deliveries
            .recent({
              limit: options.limit,
              ...(options.status ? { status: options.status } : {}),
              ...(owner ? { accountId: owner.id } : {}),
            })
            .map((d) => deliveryRow(d, accountName(d.accountId)));
          printTable(options, rows, [
            "id",
            "account",
            "endpoint_id",
            "event",
            "status",
            "attempts",
            "last_status_code",
            "last_error",
            "created_at",
          ]);
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
          ...deliveryRow(d, accountNames(app)(d.accountId)),
          followed_via: d.followedVia,
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
          const owner = optionalAccount(app, options.account);
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

/** A delivery as `list` and `show` print it: the API's fields with its account and endpoint. */
function deliveryRow(d: Delivery, account: string | null) {
  const { id, ...fields } = deliveryJson(d);
  return { id, account, endpoint_id: d.endpointId, ...fields };
}
