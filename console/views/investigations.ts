import { facts, format, h, link, marketLink, replace, section, table, walletLink } from "../dom";
import { failure, heading, type View } from "../view";

interface Investigation {
  id: number;
  type: string;
  category: string;
  title: string;
  status: string;
  wallet_count: number;
  resolved_bets: number;
  win_rate: number;
  edge: number;
  p_value: number;
  created_at: string;
}

interface Detail extends Investigation {
  summary: string;
  wallets: {
    address: string;
    role: string;
    resolved_bets: number;
    wins: number;
    win_rate: number | null;
    total_pnl: number | null;
  }[];
}

interface Analysis {
  market_slug: string;
  market_title: string | null;
  smart_money_prob: number | null;
  market_price: number | null;
  divergence: number | null;
  sample_wallets: number;
  top_positions: {
    address: string;
    market_side: string;
    volume: number;
    wallet_type: string | null;
    platform_name: string | null;
  }[];
}

/**
 * Investigations: the open insider investigations and one's evidence, and a live market analysis
 * (GET /v1/analyze/market/{slug}) run on demand, where the key's tier allows.
 */
export const investigationsView: View = async (ctx) => {
  const id = ctx.args[0];
  if (id) return detail(ctx, id);
  ctx.main.append(heading("Investigations"));

  const slug = h("input", {
    id: "analyze-slug",
    name: "slug",
    type: "text",
    required: true,
    placeholder: "market slug",
  });
  const result = h("div", { className: "analysis", attrs: { "aria-live": "polite" } });
  const form = h(
    "form",
    {
      className: "filters",
      on: {
        submit: (event) => {
          event.preventDefault();
          void analyze(slug.value.trim());
        },
      },
    },
    h("label", { htmlFor: "analyze-slug" }, "Market"),
    slug,
    h("button", { type: "submit" }, "Run analysis"),
  );
  async function analyze(market: string): Promise<void> {
    replace(result, h("p", {}, "Running…"));
    const answer = await ctx.api.get<Analysis>(`/v1/analyze/market/${encodeURIComponent(market)}`);
    if (!ctx.alive()) return;
    if (!answer.ok) {
      replace(result, failure(answer));
      return;
    }
    const a = answer.body;
    replace(
      result,
      h("h3", {}, marketLink(a.market_slug, a.market_title)),
      facts([
        ["Smart-money probability", format.price(a.smart_money_prob)],
        ["Market price", format.price(a.market_price)],
        ["Divergence", format.price(a.divergence)],
        ["Wallets sampled", format.number(a.sample_wallets)],
      ]),
      table(
        "Top positions",
        [
          { label: "Wallet", cell: (p) => walletLink(p.address, p.platform_name) },
          { label: "Side", cell: (p) => p.market_side },
          { label: "Type", cell: (p) => p.wallet_type ?? "–" },
          { label: "Volume", figure: (p) => p.volume, show: format.usd },
        ],
        a.top_positions,
      ),
    );
    result.dataset.done = "true";
  }
  ctx.main.append(section("Run a market analysis", form, result));

  const list = await ctx.api.get<{ data: Investigation[] }>("/v1/investigations", { limit: 50 });
  if (!ctx.alive()) return undefined;
  const open = section("Open investigations");
  open.append(
    list.ok
      ? table(
          "Open investigations, most significant first",
          [
            { label: "Investigation", cell: (i) => link(`investigations/${i.id}`, i.title) },
            { label: "Type", cell: (i) => i.type, sort: (i) => i.type },
            { label: "Category", cell: (i) => i.category, sort: (i) => i.category },
            { label: "Wallets", figure: (i) => i.wallet_count, show: format.number },
            { label: "Win rate", figure: (i) => i.win_rate, show: format.percent },
            { label: "p-value", figure: (i) => i.p_value, show: format.pValue },
          ],
          list.body.data,
        )
      : failure(list),
  );
  ctx.main.append(open);
  return undefined;
};

async function detail(ctx: Parameters<View>[0], id: string) {
  const answer = await ctx.api.get<Detail>(`/v1/investigations/${encodeURIComponent(id)}`);
  if (!ctx.alive()) return undefined;
  if (!answer.ok) {
    ctx.main.append(heading("Investigation"), failure(answer));
    return undefined;
  }
  const d = answer.body;
  ctx.main.append(
    heading(d.title),
    h("p", {}, d.summary),
    facts([
      ["Status", d.status],
      ["Category", d.category],
      ["Resolved bets", format.number(d.resolved_bets)],
      ["Win rate", format.percent(d.win_rate)],
      ["Edge", format.percent(d.edge)],
      ["p-value", d.p_value.toExponential(2)],
      ["Opened", format.time(d.created_at)],
    ]),
    table(
      "Wallets under investigation",
      [
        { label: "Wallet", cell: (w) => walletLink(w.address) },
        { label: "Role", cell: (w) => w.role },
        { label: "Resolved bets", figure: (w) => w.resolved_bets, show: format.number },
        { label: "Wins", figure: (w) => w.wins, show: format.number },
        { label: "PnL", figure: (w) => w.total_pnl, show: format.usd },
      ],
      d.wallets,
    ),
  );
  return undefined;
}
