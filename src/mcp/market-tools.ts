import * as v from "valibot";
import type { App } from "../app";
import { WHALE_VOLUME_TEXT } from "../domain";
import { badRequest } from "../errors";
import { toPage } from "../paging/pages";
import { pageAfter, type RankKey } from "../read/market-rankings";
import { marketNotFound } from "../read/markets";
import {
  MarketAnalysisSchema,
  MarketFlowSchema,
  MarketRankPageSchema,
  MarketSignalSchema,
  MoversSchema,
} from "../schemas/markets";
import { cursor, integer, marketCategory, oneOf, periodHours, slug, text } from "./inputs";
import { outputOf } from "./outputs";
import { defineTool, figure, type McpTool, morePages, usd } from "./tool";

/** The REST endpoints' cursor names: a cursor from either door pages the same list. */
const RANKINGS = { whale_volume: "markets-trending", price_change: "markets-moving" } as const;

export function marketTools(app: App): McpTool[] {
  const { cursors } = app;
  const { markets } = app.read;
  const context = (now: number) => ({ generation: app.generation, now });

  function rankKeyOf(endpoint: string, given: string): RankKey {
    const [a, b, key] = cursors.decode(endpoint, given, 3);
    if (typeof a !== "number" || typeof b !== "number" || typeof key !== "string") {
      throw badRequest(
        "cursor is invalid: pass next_cursor from this endpoint's previous page unchanged",
      );
    }
    return [a, b, key];
  }

  return [
    defineTool({
      name: "get_market_signal",
      title: "Market smart-money signal",
      description:
        "Whale sentiment on a market over the last 30 days (bullish, bearish or mixed; YES/NO whale volume; number of whales) and the whale-implied probability of YES next to the current price (edge = implied minus price). Same answer as GET /v1/signals/market/{slug}.",
      rest: "GET /v1/signals/market/{slug}",
      minTier: "free",
      input: v.strictObject({ slug }),
      output: outputOf(MarketSignalSchema),
      run: ({ slug }) => {
        const signal = markets.signal(slug);
        if (!signal) throw marketNotFound(slug);
        return signal;
      },
      summarize: (s) => {
        const p = s.smart_money_probability;
        return `${s.market.slug}: whale sentiment ${s.sentiment.direction ?? "none"} (YES ratio ${figure(s.sentiment.yes_ratio)}, ${s.sentiment.unique_whales ?? 0} whales); whale-implied YES ${figure(p?.yes_implied_prob)} vs price ${figure(p?.current_price)}.`;
      },
    }),
    defineTool({
      name: "analyze_market",
      title: "Live market analysis",
      description:
        "A deterministic live analysis of one market: the smart-money probability of YES (the largest holders weighted by their skill), the market price and the divergence between them, the top 10 positions with who holds them, whale sentiment, and the last 24 hours of money flow. Recomputed at most every 30 seconds. Needs the terminal_pro tier. Same answer as GET /v1/analyze/market/{slug}.",
      rest: "GET /v1/analyze/market/{slug}",
      minTier: "terminal_pro",
      input: v.strictObject({ slug }),
      output: outputOf(MarketAnalysisSchema),
      run: ({ slug }, { now }) => {
        const analysis = markets.analysis(slug, now);
        if (!analysis) throw marketNotFound(slug);
        return analysis;
      },
      summarize: (a) =>
        `${a.market_slug}: smart-money probability ${figure(a.smart_money_prob)} vs market price ${figure(a.market_price)} (divergence ${figure(a.divergence)}) from ${a.sample_wallets} wallets; sentiment ${a.sentiment.sentiment ?? "none"}.`,
    }),
    defineTool({
      name: "get_market_flow",
      title: "Market money flow",
      description: `Where the money went in one market over the last \`minutes\`: YES and NO buy/sell volume, net flow, unique wallets and average price in 12 equal time buckets, plus totals. By default only whales (wallets over ${WHALE_VOLUME_TEXT} of total volume). Same answer as GET /v1/markets/{slug}/flow.`,
      rest: "GET /v1/markets/{slug}/flow",
      minTier: "terminal",
      input: v.strictObject({
        slug,
        minutes: v.optional(
          integer("minutes", 5, 1440, "Window length in minutes (5 to 1440)."),
          60,
        ),
        whales_only: v.optional(
          v.pipe(
            v.boolean("whales_only must be true or false"),
            v.description("true (default): only whale wallets; false: every wallet."),
          ),
          true,
        ),
      }),
      output: outputOf(MarketFlowSchema),
      run: ({ slug, minutes, whales_only }, { now }) => {
        const flow = markets.flow(slug, { minutes, whalesOnly: whales_only, now });
        if (!flow) throw marketNotFound(slug);
        return flow;
      },
      summarize: (f) =>
        `${f.slug}: last ${f.window_minutes} min${f.whales_only ? ", whales only" : ""}: volume ${usd(f.total_volume)}, net YES ${usd(f.net_yes)}, net NO ${usd(f.net_no)}.`,
    }),
    defineTool({
      name: "get_trending_markets",
      title: "Trending markets",
      description:
        "Markets ranked over a recent window, either by whale volume (rank_by whale_volume, default: where the smart money is trading) or by absolute YES price change (rank_by price_change: markets with at least 3 trades that moved most). Filter by category or a title substring; paginated. Same answers as GET /v1/markets/trending and GET /v1/markets/moving.",
      rest: "GET /v1/markets/trending, GET /v1/markets/moving",
      minTier: "terminal",
      input: v.strictObject({
        rank_by: v.optional(
          oneOf(
            "rank_by",
            ["whale_volume", "price_change"],
            "whale_volume (default) or price_change.",
          ),
          "whale_volume",
        ),
        period_hours: periodHours,
        limit: v.optional(integer("limit", 1, 100, "Markets per page (1 to 100)."), 20),
        category: v.optional(marketCategory),
        search: v.optional(text("search", 200, "Only markets whose title contains this text.")),
        cursor: v.optional(cursor),
      }),
      output: outputOf(MarketRankPageSchema),
      run: async (q, { now }) => {
        const endpoint = RANKINGS[q.rank_by];
        const filter = { periodHours: q.period_hours, category: q.category, search: q.search };
        const list = await (q.rank_by === "whale_volume"
          ? markets.trending(filter, context(now))
          : markets.moving(filter, context(now)));
        const after = q.cursor === undefined ? undefined : rankKeyOf(endpoint, q.cursor);
        const { rows, more } = pageAfter(list, after, q.limit);
        const page = toPage(cursors, endpoint, rows, more, (last) => last.key);
        return { data: page.data.map((r) => r.row), next_cursor: page.next_cursor };
      },
      summarize: (p) =>
        `${p.data.length} markets: ${p.data
          .slice(0, 3)
          .map((m) => m.slug)
          .join(", ")}${p.data.length > 3 ? ", …" : ""}${morePages(p)}.`,
    }),
    defineTool({
      name: "get_market_movers",
      title: "Market movers by volume",
      description:
        "The markets with the most USD volume over a recent window, with trade count and net flow (YES flow minus NO flow): a bounded top list, no pagination. Same answer as GET /v1/signals/movers.",
      rest: "GET /v1/signals/movers",
      minTier: "terminal",
      input: v.strictObject({
        period_hours: periodHours,
        category: v.optional(marketCategory),
        limit: v.optional(integer("limit", 1, 100, "How many markets (1 to 100)."), 20),
      }),
      output: outputOf(MoversSchema),
      run: async (q, { now }) => {
        const list = await markets.movers(
          { periodHours: q.period_hours, category: q.category },
          context(now),
        );
        const movers = list.slice(0, q.limit).map((r) => r.row);
        return { period_hours: q.period_hours, count: movers.length, movers };
      },
      summarize: (m) =>
        `Top ${m.count} markets by volume over the last ${m.period_hours} h${m.movers[0] ? `: ${m.movers[0].slug} leads with ${usd(m.movers[0].volume)}` : ""}.`,
    }),
  ];
}
