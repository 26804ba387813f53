import type * as v from "valibot";
import type { Db } from "../db/open";
import { isoOrNull as iso } from "../domain";
import { notFound } from "../errors";
import { createPriceHistoryReader } from "../refresh/price-history";
import type {
  MarketDetailSchema,
  MarketSentimentSchema,
  MarketSignalSchema,
} from "../schemas/markets";
import { createMarketAnalysis } from "./market-analysis";
import { createFlowReads, flowOut, type MarketFlow } from "./market-flow";
import { createHolderReads, holderOf } from "./market-positions";
import { createMarketRankings, type MarketRankingsOptions, windowHours } from "./market-rankings";
import { createMarketRows, impliedOf, refOf, sentimentOf } from "./market-rows";

/**
 * Market read models as the API serves them: signal, sentiment, detail, flow, movers,
 * trending and moving rankings, and the live MarketAnalysis. Every query is index-backed and
 * bounded; only flow reads raw trades, and only one market's within a window of at most a day.
 */

// The answer shapes are the response schemas' (src/schemas/markets.ts): declared once, there.
export type MarketSignal = v.InferOutput<typeof MarketSignalSchema>;
export type MarketSentiment = v.InferOutput<typeof MarketSentimentSchema>;
export type MarketDetail = v.InferOutput<typeof MarketDetailSchema>;

export type MarketQueries = ReturnType<typeof createMarketQueries>;

/**
 * Every market answer, from its parts: the rows (market-rows.ts), holders (market-positions.ts),
 * flow (market-flow.ts), the rankings (market-rankings.ts) and the analysis (market-analysis.ts).
 */
export function createMarketQueries(db: Db, options: MarketRankingsOptions = {}) {
  const r = db.reader;
  const rows = createMarketRows(r);
  const { bySlug: marketBySlug, statsOf } = rows;
  const holders = createHolderReads(r);
  const flow = createFlowReads(r);
  const rankings = createMarketRankings(db, options);
  const analysis = createMarketAnalysis({ rows, holders, flow });
  const priceHistoryOf = createPriceHistoryReader(r);
  const hoursSince = r.prepare<[number, number], { volume: number; trade_count: number }>(
    `SELECT coalesce(sum(volume), 0) AS volume, coalesce(sum(trade_count), 0) AS trade_count
       FROM market_hours WHERE market_id = ? AND hour >= ?`,
  );

  return {
    signal(slug: string): MarketSignal | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      const { sentiment, ...figures } = sentimentOf(stats);
      return {
        market: refOf(market),
        sentiment: { direction: sentiment, ...figures },
        smart_money_probability: impliedOf(stats),
      };
    },

    sentiment(slug: string): MarketSentiment | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      return { ...sentimentOf(stats), implied_probability: impliedOf(stats) };
    },

    /**
     * The market's detail as JSON text. Its price_history is stored serialized by the refresh
     * (market_price_history, all but its newest hours: src/refresh/price-history.ts), so it is
     * spliced in as the last field rather than parsed and serialized again: that array is most
     * of the answer's bytes.
     */
    detailJson(slug: string, now: number): string | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const stats = statsOf.get(market.id);
      const day = hoursSince.get(market.id, windowHours(now, 24).from)!;
      const head: Omit<MarketDetail, "price_history"> = {
        ...refOf(market),
        resolved_outcome: market.resolved_outcome,
        outcome_names:
          market.yes_name && market.no_name ? { yes: market.yes_name, no: market.no_name } : null,
        stats: {
          volume: stats?.volume ?? 0,
          trade_count: stats?.trade_count ?? 0,
          unique_wallets: stats?.unique_wallets ?? 0,
          last_price: stats?.last_yes_price ?? null,
          last_trade_at: iso(stats?.last_trade_at ?? null),
          volume_24h: day.volume,
          trade_count_24h: day.trade_count,
          end_date: iso(market.end_date),
          created_at: iso(market.created_at),
          resolved_at: iso(market.resolved_at),
        },
        top_yes_holders: holders.top(market.id, "YES").map(holderOf),
        top_no_holders: holders.top(market.id, "NO").map(holderOf),
      };
      return `${JSON.stringify(head).slice(0, -1)},"price_history":${priceHistoryOf(market.id)}}`;
    },

    /** Fills of [now − minutes, now], optionally only by wallets over WHALE_VOLUME_USD of volume. */
    flow(
      slug: string,
      options: { minutes: number; whalesOnly: boolean; now: number },
    ): MarketFlow | undefined {
      const market = marketBySlug.get(slug);
      if (!market) return undefined;
      const figures = flow.flowOf(market.id, options.minutes, options.whalesOnly, options.now);
      return flowOut(market.slug, options.whalesOnly, figures);
    },

    ...rankings,
    ...analysis,
  };
}

/** The one wording of an unknown market, for REST's 404 and MCP's tool error alike. */
export const marketNotFound = (slug: string) => notFound(`no market with slug '${slug}'`);
