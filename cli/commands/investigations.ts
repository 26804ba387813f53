import { type Command, InvalidArgumentError, Option } from "commander";
import {
  INVESTIGATION_STATUSES,
  type InvestigationStatus,
} from "../../src/funding/investigation-queries";
import { type CommonOptions, print, table, withApp, withDbOption } from "../context";
import { CliError, must } from "../errors";

function investigationId(text: string): number {
  if (!/^[1-9]\d{0,14}$/.test(text)) {
    throw new InvalidArgumentError(
      `"${text}" is not an investigation id (an integer of at least 1)`,
    );
  }
  return Number(text);
}

const pValue = (p: number) => (p >= 0.001 ? p.toFixed(3) : p.toExponential(1));
const percent = (x: number | null) => (x === null ? null : `${Math.round(x * 100)}%`);

/** `investigations list|show|dismiss|reopen`: the admin's verdict on each case. */
export function registerInvestigations(program: Command): void {
  const investigations = program
    .command("investigations")
    .description("list investigations and dismiss or reopen them (dismissed ones leave the API)");

  withDbOption(investigations.command("list"))
    .description("list investigations, the ones that qualify at the latest refresh first")
    .addOption(
      new Option("--status <status>", "only this status, or all")
        .choices([...INVESTIGATION_STATUSES, "all"])
        .default("open"),
    )
    .option("--json", "print JSON")
    .action((options: CommonOptions & { status: InvestigationStatus | "all" }) =>
      withApp(options, ({ app }) => {
        const rows = app.funding.investigations.list(
          options.status === "all" ? null : options.status,
        );
        print(options, rows, () =>
          table(
            rows.map((r) => ({
              ...r,
              win_rate: percent(r.win_rate),
              p_value: pValue(r.p_value),
              qualifies: r.qualifies ? "yes" : "no",
            })),
            [
              "id",
              "type",
              "category",
              "status",
              "qualifies",
              "wallet_count",
              "resolved_bets",
              "win_rate",
              "p_value",
              "subject",
            ],
          ),
        );
      }),
    );

  withDbOption(investigations.command("show"))
    .description("show one investigation in full, whatever its status")
    .argument("<id>", "investigation id", investigationId)
    .option("--json", "print JSON")
    .action((id: number, options: CommonOptions) =>
      withApp(options, ({ app }) => {
        const found = app.funding.investigations.any(id);
        if (!found) throw new CliError(`no investigation with id ${id}`);
        print(options, found, () =>
          [
            `#${found.id} ${found.title}`,
            `status ${found.status}${found.qualifies ? "" : " (no longer qualifies: not served)"}; ${found.type} ${found.subject}; ${found.category}`,
            found.summary,
            "",
            table(found.wallets, [
              "address",
              "role",
              "resolved_bets",
              "wins",
              "win_rate",
              "total_pnl",
            ]),
            "",
            table(found.evidence, [
              "market_slug",
              "side",
              "entry_price",
              "usd_value",
              "outcome",
              "won",
              "hours_before_resolution",
            ]),
          ].join("\n"),
        );
      }),
    );

  for (const [verb, status] of [
    ["dismiss", "dismissed"],
    ["reopen", "open"],
  ] as const) {
    withDbOption(investigations.command(verb))
      .description(
        verb === "dismiss"
          ? "dismiss an investigation: it leaves the API and stays dismissed across refreshes"
          : "reopen a dismissed investigation",
      )
      .argument("<id>", "investigation id", investigationId)
      .option("--json", "print JSON")
      .action((id: number, options: CommonOptions) =>
        withApp(options, ({ app }) => {
          const updated = must(
            app.funding.investigations.setStatus(id, status, app.deps.clock.now()),
          );
          print(options, updated, () => `investigation ${id} is now ${updated.status}`);
        }),
      );
  }
}
