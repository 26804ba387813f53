import type * as v from "valibot";
import type { Outcome } from "../analytics/fill";
import type { SentimentLabel } from "../analytics/sentiment";
import type { Connection } from "../db/open";
import type { MarketStatsRow } from "../refresh/market-model";
import type { ImpliedProbabilitySchema, SentimentSchema } from "../schemas/markets";

/** A market and its stats as the market answers read them, and the shapes they share. */

export type Sentiment = v.InferOutput<typeof SentimentSchema>;
export type ImpliedProbability = NonNullable<v.InferOutput<typeof ImpliedProbabilitySchema>>;

export interface MarketRef {
  slug: string;
  title: string | null;
  category: string | null;
  condition_id: string;
}

export interface MarketRow extends MarketRef {
  id: number;
  end_date: number | null;
  created_at: number | null;
  resolved_outcome: Outcome | null;
  resolved_at: number | null;
  yes_name?: string | null;
  no_name?: string | null;
}

/** A market_stats row as the refresh writes it, its sentiment one of sentimentLabel()'s labels. */
export type StatsRow = Omit<MarketStatsRow, "sentiment"> & { sentiment: SentimentLabel | null };

export function sentimentOf(stats: StatsRow | undefined): Sentiment {
  return {
    sentiment: stats?.sentiment ?? null,
    yes_ratio: stats?.yes_ratio ?? null,
    yes_volume: stats?.yes_volume ?? null,
    no_volume: stats?.no_volume ?? null,
    total_whale_volume: stats?.total_whale_volume ?? null,
    unique_whales: stats?.unique_whales ?? null,
  };
}

/** Null when the refresh has not seen the market trade yet. */
export function impliedOf(stats: StatsRow | undefined): ImpliedProbability | null {
  if (!stats) return null;
  return {
    yes_implied_prob: stats.yes_implied_prob,
    no_implied_prob: stats.no_implied_prob,
    current_price: stats.last_yes_price,
    edge: stats.implied_edge,
    samples: stats.implied_samples,
    unique_wallets: stats.implied_wallets,
  };
}

export const refOf = (m: MarketRow): MarketRef => ({
  slug: m.slug,
  title: m.title,
  category: m.category,
  condition_id: m.condition_id,
});

export function createMarketRows(r: Connection) {
  return {
    bySlug: r.prepare<[string], MarketRow>(
      `SELECT m.id, m.slug, m.title, m.category, m.condition_id, m.end_date, m.created_at,
              m.resolved_outcome, m.resolved_at, o.yes_name, o.no_name
         FROM markets m LEFT JOIN market_outcomes o ON o.market_id = m.id WHERE m.slug = +?`,
    ),
    statsOf: r.prepare<[number], StatsRow>("SELECT * FROM market_stats WHERE market_id = ?"),
  };
}
