import * as v from "valibot";
import { AddressSchema, isoDateTime, nullableNumber, PageOf } from "./shared";

/**
 * Response schemas of the market endpoints (MarketSignal, Sentiment,
 * ImpliedProbability, MarketMover, MarketDetail, MarketFlow, MarketRank, MarketAnalysis). Objects
 * are strict, so the OpenAPI document and the tests' v.parse both reject a field that drifts in
 * or out. The free-form records (detail stats, holders, price points, flow buckets)
 * are spelled out here, which is where a client learns their fields.
 */
const int = v.pipe(v.number(), v.integer());
const nullableInt = v.nullable(int);
const probability = v.pipe(v.number(), v.minValue(0), v.maxValue(1));
const nullableProbability = v.nullable(probability);
const outcome = v.picklist(["YES", "NO"]);

const sentimentFields = {
  yes_ratio: nullableProbability,
  yes_volume: nullableNumber,
  no_volume: nullableNumber,
  total_whale_volume: nullableNumber,
  unique_whales: nullableInt,
};

export const SentimentSchema = v.strictObject({
  sentiment: v.nullable(v.picklist(["bullish", "bearish", "mixed"])),
  ...sentimentFields,
});

export const ImpliedProbabilitySchema = v.nullable(
  v.strictObject({
    yes_implied_prob: nullableProbability,
    no_implied_prob: nullableProbability,
    current_price: nullableProbability,
    edge: nullableNumber,
    samples: nullableInt,
    unique_wallets: nullableInt,
  }),
);

export const MarketSignalSchema = v.strictObject({
  market: v.strictObject({
    slug: v.string(),
    title: v.nullable(v.string()),
    category: v.nullable(v.string()),
    condition_id: v.string(),
  }),
  sentiment: v.strictObject({
    direction: v.nullable(v.picklist(["bullish", "bearish", "mixed"])),
    ...sentimentFields,
  }),
  smart_money_probability: ImpliedProbabilitySchema,
});

export const MarketSentimentSchema = v.strictObject({
  ...SentimentSchema.entries,
  implied_probability: ImpliedProbabilitySchema,
});

export const MarketMoverSchema = v.strictObject({
  slug: v.string(),
  title: v.nullable(v.string()),
  category: v.nullable(v.string()),
  volume: nullableNumber,
  trade_count: nullableInt,
  net_flow: nullableNumber,
});

export const MoversSchema = v.strictObject({
  period_hours: int,
  count: int,
  movers: v.array(MarketMoverSchema),
});

export const MarketRankSchema = v.strictObject({
  slug: v.string(),
  title: v.nullable(v.string()),
  category: v.nullable(v.string()),
  whale_volume: nullableNumber,
  price_change: nullableNumber,
  trade_count: nullableInt,
});

export const MarketRankPageSchema = PageOf(MarketRankSchema);

const HolderSchema = v.strictObject({
  address: AddressSchema,
  shares: v.number(),
  // A share-weighted average of prices: in 0..1 up to rounding, so not range-checked.
  entry_price: nullableNumber,
  position_usd: v.number(),
  volume: v.number(),
  trade_count: int,
  pnl: nullableNumber,
  wallet_type: v.nullable(v.string()),
  platform_name: v.nullable(v.string()),
  smart_money_score: nullableNumber,
});

export const MarketDetailSchema = v.strictObject({
  slug: v.string(),
  title: v.nullable(v.string()),
  category: v.nullable(v.string()),
  condition_id: v.nullable(v.string()),
  resolved_outcome: v.nullable(outcome),
  outcome_names: v.pipe(
    v.nullable(v.strictObject({ yes: v.string(), no: v.string() })),
    v.description(
      'Polymarket\'s names for the outcomes ("Yes"/"No", "Up"/"Down", two teams): yes is index 0, no is index 1. Null when unknown.',
    ),
  ),
  stats: v.strictObject({
    volume: v.number(),
    trade_count: int,
    unique_wallets: int,
    last_price: nullableProbability,
    last_trade_at: v.nullable(isoDateTime),
    volume_24h: v.number(),
    trade_count_24h: int,
    end_date: v.nullable(isoDateTime),
    created_at: v.nullable(isoDateTime),
    resolved_at: v.nullable(isoDateTime),
  }),
  top_yes_holders: v.array(HolderSchema),
  top_no_holders: v.array(HolderSchema),
  price_history: v.array(
    v.strictObject({
      hour: isoDateTime,
      price: nullableProbability,
      volume: v.number(),
      trade_count: int,
    }),
  ),
});

const FlowBucketSchema = v.strictObject({
  start: isoDateTime,
  end: isoDateTime,
  yes_buy_usd: v.number(),
  yes_sell_usd: v.number(),
  no_buy_usd: v.number(),
  no_sell_usd: v.number(),
  net_flow: v.number(),
  unique_wallets: int,
  avg_price: nullableNumber,
  trades: int,
});

const flowFields = {
  slug: v.string(),
  window_minutes: int,
  whales_only: v.boolean(),
  total_volume: nullableNumber,
  net_yes: nullableNumber,
  net_no: nullableNumber,
  buckets: v.array(FlowBucketSchema),
};

export const MarketFlowSchema = v.strictObject(flowFields);

export const MarketAnalysisSchema = v.strictObject({
  market_slug: v.string(),
  market_title: v.nullable(v.string()),
  market_category: v.nullable(v.string()),
  condition_id: v.nullable(v.string()),
  smart_money_prob: nullableProbability,
  market_price: nullableProbability,
  divergence: nullableNumber,
  sample_wallets: int,
  top_positions: v.array(
    v.strictObject({
      address: AddressSchema,
      market_side: outcome,
      volume: nullableNumber,
      trade_count: nullableInt,
      wallet_type: v.nullable(v.string()),
      win_rate: nullableProbability,
      total_pnl: nullableNumber,
      platform_name: v.nullable(v.string()),
    }),
  ),
  sentiment: SentimentSchema,
  flow_24h: v.strictObject({ ...flowFields, relaxed: v.boolean() }),
});
