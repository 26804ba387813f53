import type { Answer, Api } from "../api";
import { chart } from "../charts";
import { facts, format, h, link, marketLink, section, table, walletLink } from "../dom";
import { type MarketEnd, type Outcome, pnlOverTime } from "../ledger";
import { type Trade, tradeColumns } from "../trades";
import { failure, heading, orFailure, type View } from "../view";

interface Stats {
  total_bets: number;
  resolved_bets: number;
  win_rate: number | null;
  bayesian_win_rate: number | null;
  total_volume: number | null;
  total_pnl: number | null;
  pnl_source: string;
  markets_traded: number | null;
}

interface Profile {
  address: string;
  platform_name: string | null;
  wallet_type: string | null;
  stats: Stats | null;
  funding_cluster?: { id: string; role: string; member_count: number } | null;
  /** The dossier's latest whale and insider alerts (terminal and above). */
  alerts?: {
    id: number;
    type: string;
    score: number;
    bet_value: number;
    side: string;
    outcome: string;
    price: number;
    explanation: string;
    created_at: string;
    market: { slug: string; title: string | null };
  }[];
}

/** Most markets whose ends the PnL replay asks for (a call or two each). */
const LEDGER_MARKETS = 40;

/**
 * What the replay needs of each market the wallet traded: its resolution, and for open ones each
 * outcome's last trade price (from the market's newest fills). Null when the wallet traded more
 * markets than LEDGER_MARKETS or a call failed: the view falls back to cash flow.
 */
async function ledgerMarkets(api: Api, fills: Trade[]): Promise<Map<string, MarketEnd> | null> {
  const slugs = [...new Set(fills.map((t) => t.market_slug))];
  if (slugs.length > LEDGER_MARKETS) return null;
  const ends = await Promise.all(
    slugs.map(async (slug): Promise<[string, MarketEnd] | null> => {
      const market = await api.get<{
        condition_id: string;
        resolved_outcome: Outcome | null;
        stats: { resolved_at: string | null };
      }>(`/v1/markets/${encodeURIComponent(slug)}`);
      if (!market.ok) return null;
      const { resolved_outcome: resolvedOutcome, stats } = market.body;
      const lastTrade: Record<Outcome, number | null> = { YES: null, NO: null };
      if (resolvedOutcome === null) {
        const newest = await api.get<{ data: { outcome: Outcome; price: number }[] }>(
          "/v1/trades",
          {
            market: market.body.condition_id,
            limit: 100,
          },
        );
        if (!newest.ok) return null;
        for (const t of newest.body.data) lastTrade[t.outcome] ??= t.price;
      }
      const resolvedAt = stats.resolved_at === null ? null : Date.parse(stats.resolved_at);
      return [slug, { resolvedOutcome, resolvedAt, lastTrade }];
    }),
  );
  if (ends.some((end) => end === null)) return null;
  return new Map(ends as [string, MarketEnd][]);
}

/** Fills read for the PnL chart: four pages of 100, newest first. */
export const WALLET_CHART_PAGES = 4;

/** A wallet's fills, newest first, up to `pages` pages of 100. */
export async function walletFills(api: Api, address: string, pages: number) {
  const fills: Trade[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < pages; page += 1) {
    const answer: Answer<{ data: Trade[]; next_cursor: string | null }> = await api.get(
      `/v1/wallets/${address}/trades`,
      { limit: 100, cursor },
    );
    if (!answer.ok) return answer;
    fills.push(...answer.body.data);
    cursor = answer.body.next_cursor;
    if (cursor === null) break;
  }
  return { ok: true as const, fills, complete: cursor === null };
}

/**
 * A wallet's dossier: its profile and score, cash flow over time and the timing histogram
 * (charts), categories, trades, correlated wallets and funding connections. A free key sees the
 * lite profile and the score, and the tier the rest needs.
 */
export const walletView: View = async (ctx) => {
  const address = (ctx.args[0] ?? "").toLowerCase();
  const { api } = ctx;
  const base = `/v1/wallets/${address}`;
  const [profile, score, fills, categories, timing, correlated, connections] = await Promise.all([
    api.get<Profile>(base),
    api.get<{ smart_money_score: number; confidence: number }>(`/v1/signals/wallet/${address}`),
    walletFills(api, address, WALLET_CHART_PAGES),
    api.get<{
      categories: {
        category: string;
        bets: number | null;
        wins: number | null;
        win_rate: number | null;
        pnl: number | null;
        volume: number | null;
      }[];
    }>(`${base}/categories`),
    api.get<{ buckets: { label: string; count: number; win_rate: number | null }[] }>(
      `${base}/timing`,
    ),
    api.get<{
      correlated: {
        address: string;
        platform_name: string | null;
        shared_markets: number | null;
        same_side_ratio: number | null;
      }[];
    }>(`${base}/correlated`),
    api.get<{
      connections: {
        counterparty: string;
        type: string;
        direction: string;
        confidence: number;
        amount: number | null;
        first_seen: string;
      }[];
      cluster: { id: string; role: string; member_count: number } | null;
    }>(`${base}/connections`),
  ]);
  if (!ctx.alive()) return undefined;
  if (!profile.ok) {
    ctx.main.append(heading("Wallet"), failure(profile));
    return undefined;
  }
  const p = profile.body;
  const s = p.stats;
  ctx.main.append(
    heading(p.platform_name ?? "Wallet"),
    h("p", { className: "address" }, p.address),
    facts([
      ["Type", p.wallet_type ?? "–"],
      ["Smart-money score", score.ok ? format.number(score.body.smart_money_score) : "–"],
      ["Total PnL", format.usd(s?.total_pnl)],
      ["PnL source", s?.pnl_source ?? "–"],
      ["Volume", format.usd(s?.total_volume)],
      ["Bets", format.number(s?.total_bets)],
      ["Resolved bets", format.number(s?.resolved_bets)],
      ["Win rate", format.percent(s?.win_rate)],
      ["Markets traded", format.number(s?.markets_traded)],
    ]),
  );

  const pnl = section("PnL over time");
  if (fills.ok) {
    const ordered = [...fills.fills].reverse();
    const markets = fills.complete ? await ledgerMarkets(api, ordered) : null;
    if (!ctx.alive()) return undefined;
    if (markets) {
      const series = pnlOverTime(
        ordered.map((t) => ({
          market: t.market_slug,
          outcome: t.outcome,
          side: t.side,
          price: t.price,
          size: t.size,
          ts: Date.parse(t.trade_timestamp),
        })),
        markets,
        Date.now(),
      );
      pnl.append(
        h(
          "p",
          { className: "hint" },
          `Replayed from the wallet's ${ordered.length} fills by the ledger's rules (average cost, settlement at resolution); open positions are marked at the wallet's last price until the last point, which marks them at each outcome's last trade in the market, as the API does.${s?.pnl_source === "ledger" ? "" : ` The total above is the ${s?.pnl_source === "platform_api" ? "platform's own figure" : "figure the API withholds for this wallet type"}, not the ledger's.`}`,
        ),
        chart({
          title: "PnL over time (USD)",
          x: series.at.map((ms) => ms / 1000),
          series: [{ label: "PnL", values: series.pnl, color: "#2563eb" }],
          yLabel: "USD",
        }),
      );
    } else {
      let running = 0;
      const values = ordered.map((t) => {
        running += t.side === "SELL" ? t.usd_value : -t.usd_value;
        return Math.round(running * 100) / 100;
      });
      pnl.append(
        h(
          "p",
          { className: "hint" },
          `Too many fills or markets to replay here: sell proceeds minus buy costs, cumulative, over the wallet's ${ordered.length} latest fills (payouts of resolved markets are in the total PnL above, not in this line).`,
        ),
        chart({
          title: "Cumulative cash flow (USD)",
          x: ordered.map((t) => Date.parse(t.trade_timestamp) / 1000),
          series: [{ label: "cash flow", values, color: "#2563eb" }],
          yLabel: "USD",
        }),
      );
    }
  } else {
    pnl.append(failure(fills));
  }
  ctx.main.append(pnl);

  ctx.main.append(
    section(
      "Timing: bets by time before resolution",
      ...orFailure(timing, ({ body: { buckets } }) => [
        chart({
          title: "Resolved bets by time before resolution",
          x: buckets.map((_, i) => i),
          labels: buckets.map((b) => b.label),
          series: [
            { label: "bets", values: buckets.map((b) => b.count), color: "#7c3aed", bars: true },
          ],
          yLabel: "bets",
          height: 200,
        }),
        table(
          "Win rate per bucket",
          [
            { label: "Before resolution", cell: (b) => b.label },
            { label: "Bets", cell: (b) => format.number(b.count), numeric: true },
            { label: "Win rate", cell: (b) => format.percent(b.win_rate), numeric: true },
          ],
          buckets,
        ),
      ]),
    ),
    section(
      "Categories",
      ...orFailure(categories, ({ body }) => [
        table(
          "Record per category",
          [
            {
              label: "Category",
              cell: (c) => link(`leaderboards/${c.category}`, c.category),
              sort: (c) => c.category,
            },
            { label: "Bets", figure: (c) => c.bets, show: format.number },
            { label: "Win rate", figure: (c) => c.win_rate, show: format.percent },
            { label: "PnL", figure: (c) => c.pnl, show: format.usd },
            { label: "Volume", figure: (c) => c.volume, show: format.usd },
          ],
          body.categories,
        ),
      ]),
    ),
  );

  // The lite profile a free key gets has no alerts: the trades section below shows the tier.
  if (p.alerts) {
    ctx.main.append(
      section(
        "Signals",
        table(
          "The wallet's latest whale and insider alerts",
          [
            {
              label: "When",
              cell: (a) => format.time(a.created_at),
              sort: (a) => a.created_at,
            },
            { label: "Type", cell: (a) => a.type, sort: (a) => a.type },
            { label: "Market", cell: (a) => marketLink(a.market.slug, a.market.title) },
            { label: "Bet", cell: (a) => `${a.side} ${a.outcome} at ${format.price(a.price)}` },
            { label: "USD", figure: (a) => a.bet_value, show: format.usd },
            { label: "Score", figure: (a) => a.score, show: format.number },
            { label: "Why", cell: (a) => a.explanation },
          ],
          p.alerts,
        ),
      ),
    );
  }

  ctx.main.append(
    section(
      "Trades",
      ...orFailure(fills, ({ fills: latest }) => [
        table("Latest 25 fills", tradeColumns({ wallet: false }), latest.slice(0, 25)),
      ]),
    ),
    section(
      "Correlated wallets",
      ...orFailure(correlated, ({ body }) => [
        table(
          "Wallets betting the same markets on the same side",
          [
            { label: "Wallet", cell: (c) => walletLink(c.address, c.platform_name) },
            { label: "Shared markets", figure: (c) => c.shared_markets, show: format.number },
            { label: "Same side", figure: (c) => c.same_side_ratio, show: format.percent },
          ],
          body.correlated,
        ),
      ]),
    ),
    section(
      "Funding connections",
      ...orFailure(connections, ({ body: { cluster, connections: rows } }) => [
        cluster &&
          h(
            "p",
            {},
            `In sybil cluster ${cluster.id} as ${cluster.role}, ${cluster.member_count} wallets: `,
            link(`clusters/by-id/${cluster.id}`, "draw the cluster"),
          ),
        table(
          "Typed funding-graph connections",
          [
            { label: "Counterparty", cell: (c) => walletLink(c.counterparty) },
            { label: "Type", cell: (c) => c.type, sort: (c) => c.type },
            { label: "Direction", cell: (c) => c.direction },
            { label: "Amount", figure: (c) => c.amount, show: format.usd },
            { label: "Confidence", cell: (c) => format.percent(c.confidence), numeric: true },
            {
              label: "First seen",
              cell: (c) => format.time(c.first_seen),
              sort: (c) => c.first_seen,
            },
          ],
          rows,
        ),
      ]),
    ),
  );
  return undefined;
};
