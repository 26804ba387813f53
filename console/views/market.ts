import type { Answer } from "../api";
import { chart } from "../charts";
import { facts, format, h, marketLink, replace, section, table, walletLink } from "../dom";
import type { Trade } from "../trades";
import { failure, heading, orFailure, type View } from "../view";

interface Holder {
  address: string;
  shares: number;
  entry_price: number | null;
  position_usd: number | null;
  wallet_type: string | null;
  platform_name: string | null;
  smart_money_score: number | null;
}

interface Market {
  slug: string;
  title: string | null;
  category: string | null;
  condition_id: string;
  resolved_outcome: string | null;
  stats: {
    volume: number | null;
    trade_count: number | null;
    unique_wallets: number | null;
    last_price: number | null;
    volume_24h: number | null;
    end_date: string | null;
  };
  top_yes_holders: Holder[];
  top_no_holders: Holder[];
}

interface Sentiment {
  sentiment: string;
  yes_ratio: number | null;
  total_whale_volume: number;
  unique_whales: number;
  implied_probability: {
    yes_implied_prob: number | null;
    current_price: number | null;
    edge: number | null;
  } | null;
}

interface Flow {
  window_minutes: number;
  total_volume: number;
  net_yes: number;
  net_no: number;
  buckets: { start: string; net_flow: number; trades: number }[];
}

interface Ranked {
  slug: string;
  title: string | null;
  category: string | null;
  whale_volume: number;
  price_change: number | null;
  trade_count: number;
}

/** Fills read for the price chart: five pages of 100, newest first. */
const PRICE_PAGES = 5;
const FLOW_MINUTES = 1440;

/** Trending markets (by whale volume) with a search box: the way into a market's view. */
export const marketsView: View = async (ctx) => {
  const search = h("input", { name: "search", type: "search", placeholder: "words in the title" });
  const host = h("div");
  const form = h(
    "form",
    { className: "filters", attrs: { role: "search" } },
    h("label", {}, "Search markets", search),
    h("button", { type: "submit" }, "Search"),
  );
  ctx.main.append(heading("Markets"), form, host);
  async function show(): Promise<void> {
    const answer = await ctx.api.get<{ data: Ranked[] }>("/v1/markets/trending", {
      period_hours: 168,
      limit: 50,
      search: search.value.trim(),
    });
    if (!ctx.alive()) return;
    if (!answer.ok) {
      replace(host, failure(answer));
      return;
    }
    replace(
      host,
      table(
        "Markets by whale volume over the last 7 days",
        [
          { label: "Market", cell: (m) => marketLink(m.slug, m.title), sort: (m) => m.title },
          { label: "Category", cell: (m) => m.category ?? "–", sort: (m) => m.category },
          { label: "Whale volume", figure: (m) => m.whale_volume, show: format.usd },
          { label: "Price change", figure: (m) => m.price_change, show: format.price },
          { label: "Fills", figure: (m) => m.trade_count, show: format.number },
        ],
        answer.body.data,
      ),
    );
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void show();
  });
  await show();
  return undefined;
};

/**
 * One market: its figures, the YES price over its latest fills with the whales' entries marked,
 * whale sentiment with the whale-implied probability beside the price, money flow over the last
 * day, and the top holders on each side.
 */
export const marketView: View = async (ctx) => {
  const slug = ctx.args[0] ?? "";
  const path = `/v1/markets/${encodeURIComponent(slug)}`;
  const market = await ctx.api.get<Market>(path);
  if (!ctx.alive()) return undefined;
  if (!market.ok) {
    ctx.main.append(heading("Market"), failure(market));
    return undefined;
  }
  // /v1/trades names a market by its condition id.
  const fills = async () => {
    const all: Trade[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < PRICE_PAGES; page += 1) {
      const answer: Answer<{ data: Trade[]; next_cursor: string | null }> = await ctx.api.get(
        "/v1/trades",
        { market: market.body.condition_id, limit: 100, cursor },
      );
      if (!answer.ok) return answer;
      all.push(...answer.body.data);
      cursor = answer.body.next_cursor;
      if (cursor === null) break;
    }
    return { ok: true as const, fills: all };
  };
  const [sentiment, flow, trades] = await Promise.all([
    ctx.api.get<Sentiment>(`${path}/sentiment`),
    ctx.api.get<Flow>(`${path}/flow`, { minutes: FLOW_MINUTES }),
    fills(),
  ]);
  if (!ctx.alive()) return undefined;
  const m = market.body;
  const whales = new Set(
    [...m.top_yes_holders, ...m.top_no_holders]
      .filter((x) => x.wallet_type === "whale")
      .map((x) => x.address),
  );
  const implied = sentiment.ok ? sentiment.body.implied_probability : null;
  ctx.main.append(
    heading(m.title ?? m.slug),
    h("p", { className: "address" }, `${m.slug} · ${m.category ?? "no category"}`),
    h(
      "div",
      { className: "versus" },
      h(
        "div",
        {},
        h("span", {}, "Price (YES)"),
        h("strong", { data: { fact: "Price" } }, format.price(m.stats.last_price)),
      ),
      h(
        "div",
        {},
        h("span", {}, "Whale-implied probability"),
        h(
          "strong",
          { data: { fact: "Implied probability" } },
          format.price(implied?.yes_implied_prob),
        ),
      ),
      h(
        "div",
        {},
        h("span", {}, "Edge"),
        h("strong", { data: { fact: "Edge" } }, format.price(implied?.edge)),
      ),
    ),
    facts([
      ["Volume", format.usd(m.stats.volume)],
      ["Volume, 24 h", format.usd(m.stats.volume_24h)],
      ["Fills", format.number(m.stats.trade_count)],
      ["Wallets", format.number(m.stats.unique_wallets)],
      ["Ends", format.time(m.stats.end_date)],
      ["Resolved", m.resolved_outcome ?? "open"],
    ]),
  );

  const priceSection = section(
    "Price with whale entries",
    ...orFailure(trades, ({ fills: latest }) => {
      const ordered = [...latest].reverse();
      // Every fill is a YES price: a NO fill at p is YES at 1 − p.
      const yes = ordered.map((t) => (t.outcome === "YES" ? t.price : 1 - t.price));
      const entries = ordered.map((t, i) =>
        t.side === "BUY" && whales.has(t.wallet) ? (yes[i] ?? null) : null,
      );
      return [
        h(
          "p",
          { className: "hint" },
          `The YES price of the latest ${ordered.length} fills; dots mark buys by the whales among the top holders. The line at the whale-implied probability is where their money puts YES.`,
        ),
        chart({
          title: "YES price",
          x: ordered.map((t) => Date.parse(t.trade_timestamp) / 1000),
          series: [
            { label: "YES price", values: yes, color: "#2563eb" },
            { label: "whale entry", values: entries, color: "#dc2626", points: true },
            {
              label: "whale-implied",
              values: ordered.map(() => implied?.yes_implied_prob ?? null),
              color: "#16a34a",
            },
          ],
          yLabel: "price",
        }),
      ];
    }),
  );
  const flowSection = section(
    "Flow and sentiment",
    ...orFailure(sentiment, ({ body: s }) => [
      facts([
        ["Sentiment", s.sentiment],
        ["YES share of whale money", format.percent(s.yes_ratio)],
        ["Whale volume", format.usd(s.total_whale_volume)],
        ["Whales", format.number(s.unique_whales)],
      ]),
    ]),
    ...orFailure(flow, ({ body: f }) => [
      chart({
        title: "Whale net flow into YES, last 24 h (USD per bucket)",
        x: f.buckets.map((b) => Date.parse(b.start) / 1000),
        series: [
          {
            label: "net flow",
            values: f.buckets.map((b) => b.net_flow),
            color: "#0891b2",
            bars: true,
          },
        ],
        yLabel: "USD",
        height: 200,
      }),
    ]),
  );
  ctx.main.append(priceSection, flowSection);

  const holders = (side: string, rows: Holder[]) =>
    table(
      `Top ${side} holders`,
      [
        { label: "Wallet", cell: (x) => walletLink(x.address, x.platform_name) },
        { label: "Type", cell: (x) => x.wallet_type ?? "–", sort: (x) => x.wallet_type },
        { label: "Shares", figure: (x) => x.shares, show: format.number },
        { label: "Position", figure: (x) => x.position_usd, show: format.usd },
        { label: "Entry", figure: (x) => x.entry_price, show: format.price },
        { label: "Score", figure: (x) => x.smart_money_score, show: format.number },
      ],
      rows,
    );
  ctx.main.append(
    section("Holders", holders("YES", m.top_yes_holders), holders("NO", m.top_no_holders)),
  );
  return undefined;
};
