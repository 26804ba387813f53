import { format, h, replace, section, table } from "../dom";
import { type Trade, tradeColumns } from "../trades";
import { failure, heading, type View } from "../view";

interface Investigation {
  id: number;
  type: string;
  category: string;
  title: string;
  win_rate: number;
  p_value: number;
  created_at: string;
}

/** How often the feed asks again: well inside a terminal key's 1,000 calls an hour. */
const POLL_MS = 15_000;
const HOUR_MS = 3_600_000;

/**
 * Signals as they fire: the large fills of the last hours (GET /v1/trades with its own filters:
 * min_bet, side, market) and the open insider investigations (GET /v1/investigations), asked
 * again every 15 s without a reload. New rows are marked.
 */
export const signalsView: View = async (ctx) => {
  const form = h("form", { className: "filters", attrs: { "aria-label": "Signal filters" } });
  const field = (label: string, input: HTMLInputElement | HTMLSelectElement) =>
    h("label", {}, label, input);
  const minBet = h("input", {
    name: "min_bet",
    type: "number",
    value: "10000",
    attrs: { min: "0" },
  });
  const hours = h("input", {
    name: "hours",
    type: "number",
    value: "24",
    attrs: { min: "1", max: "2160" },
  });
  const side = h(
    "select",
    { name: "side" },
    h("option", { value: "" }, "both"),
    h("option", { value: "BUY" }, "BUY"),
    h("option", { value: "SELL" }, "SELL"),
  );
  const market = h("input", {
    name: "market",
    type: "text",
    placeholder: "condition id 0x… (optional)",
  });
  form.append(
    field("Minimum bet (USD)", minBet),
    field("Last hours", hours),
    field("Side", side),
    field("Market (condition id)", market),
    h("button", { type: "submit" }, "Apply"),
  );
  const updated = h("p", { className: "updated", attrs: { "aria-live": "polite" } });
  const whaleHost = h("div");
  const insiderHost = h("div");
  ctx.main.append(
    heading("Signals"),
    h(
      "p",
      { className: "lede" },
      "Whale-size fills and insider investigations, refreshed every 15 s.",
    ),
    form,
    updated,
    section("Whale fills", whaleHost),
    section("Insider investigations", insiderHost),
  );

  const seen = new Set<number>();
  let first = true;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function refresh(): Promise<void> {
    const end = Date.now();
    const start = end - Math.max(1, Number(hours.value) || 24) * HOUR_MS;
    const [fills, open] = await Promise.all([
      ctx.api.get<{ data: Trade[] }>("/v1/trades", {
        start: new Date(start).toISOString(),
        end: new Date(end).toISOString(),
        min_bet: minBet.value,
        side: side.value,
        market: market.value.trim(),
        limit: 50,
      }),
      ctx.api.get<{ data: Investigation[] }>("/v1/investigations", { limit: 10 }),
    ]);
    if (!ctx.alive()) return;
    if (fills.ok) {
      const fresh = new Set(
        first ? [] : fills.body.data.filter((t) => !seen.has(t.id)).map((t) => t.id),
      );
      for (const t of fills.body.data) seen.add(t.id);
      replace(
        whaleHost,
        table(
          `${fills.body.data.length} fills of at least ${format.usd(Number(minBet.value) || 0)}`,
          [
            ...tradeColumns({ wallet: true }),
            {
              label: "",
              cell: (t) => (fresh.has(t.id) ? h("span", { className: "badge" }, "new") : ""),
            },
          ],
          fills.body.data,
        ),
      );
    } else {
      replace(whaleHost, failure(fills));
    }
    if (open.ok) {
      replace(
        insiderHost,
        table(
          "Open investigations, most significant first",
          [
            {
              label: "Investigation",
              cell: (i) => h("a", { href: `#/investigations/${i.id}` }, i.title),
            },
            { label: "Category", cell: (i) => i.category },
            { label: "Win rate", figure: (i) => i.win_rate, show: format.percent },
            { label: "p-value", figure: (i) => i.p_value, show: format.pValue },
            { label: "Opened", cell: (i) => format.time(i.created_at), sort: (i) => i.created_at },
          ],
          open.body.data,
        ),
      );
    } else {
      replace(insiderHost, failure(open));
    }
    first = false;
    replace(updated, `Updated ${format.time(new Date().toISOString())}`);
    updated.dataset.polls = String(Number(updated.dataset.polls ?? "0") + 1);
  }

  function schedule(): void {
    timer = setTimeout(async () => {
      if (!ctx.alive()) return;
      await refresh();
      if (ctx.alive()) schedule();
    }, POLL_MS);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(timer);
    first = true;
    seen.clear();
    void refresh().then(() => ctx.alive() && schedule());
  });
  await refresh();
  schedule();
  return () => clearTimeout(timer);
};
