import * as v from "valibot";
import { ClusterMembershipSchema } from "./funding";
import { AddressSchema, isoDateTime, nullableNumber, PageOf, TradeSchema } from "./shared";

/**
 * Response schemas of the wallet, wallet-signal and leaderboard endpoints. Strict
 * objects: the OpenAPI document says no other field is served, and the tests hold us to it.
 */
const int = v.pipe(v.number(), v.integer());
const nullableInt = v.nullable(int);
const unit = v.pipe(v.number(), v.minValue(0), v.maxValue(1));
const PnlSourceSchema = v.picklist(["platform_api", "ledger", "none"]);

export const WalletStatsSchema = v.nullable(
  v.strictObject({
    total_bets: int,
    resolved_bets: int,
    win_rate: nullableNumber,
    bayesian_win_rate: nullableNumber,
    total_volume: nullableNumber,
    total_pnl: nullableNumber,
    pnl_source: PnlSourceSchema,
    pnl_as_of: v.nullable(isoDateTime),
    markets_traded: nullableInt,
  }),
);

export const WalletSignalSchema = v.strictObject({
  wallet: AddressSchema,
  smart_money_score: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
  confidence: unit,
  breakdown: v.record(v.string(), v.union([v.number(), v.string(), v.null()])),
  wallet_type: v.nullable(v.string()),
  stats: WalletStatsSchema,
});

export const AlertSchema = v.strictObject({
  id: int,
  type: v.picklist(["whale", "insider"]),
  score: v.number(),
  bet_value: v.number(),
  side: v.picklist(["BUY", "SELL"]),
  outcome: v.string(),
  price: v.number(),
  explanation: v.string(),
  created_at: isoDateTime,
  market: v.strictObject({
    slug: v.string(),
    title: v.nullable(v.string()),
    category: v.nullable(v.string()),
  }),
});

const profileEntries = {
  address: AddressSchema,
  platform_name: v.nullable(v.string()),
  wallet_type: v.nullable(v.string()),
  stats: WalletStatsSchema,
};

/** What a free key sees. */
export const WalletProfileLiteSchema = v.strictObject(profileEntries);

/** The full dossier, for terminal keys and above. */
export const WalletDossierSchema = v.strictObject({
  ...profileEntries,
  recent_trades: v.array(TradeSchema),
  alerts: v.array(AlertSchema),
  funding_cluster: v.nullable(ClusterMembershipSchema),
});

export const WalletProfileSchema = v.union([WalletDossierSchema, WalletProfileLiteSchema]);

export const WalletCategoriesSchema = v.strictObject({
  address: AddressSchema,
  categories: v.array(
    v.strictObject({
      category: v.string(),
      bets: nullableInt,
      wins: nullableInt,
      win_rate: nullableNumber,
      pnl: nullableNumber,
      volume: nullableNumber,
    }),
  ),
});

export const WalletTimingSchema = v.strictObject({
  address: AddressSchema,
  buckets: v.array(v.strictObject({ label: v.string(), count: int, win_rate: v.nullable(unit) })),
});

export const CorrelatedWalletsSchema = v.strictObject({
  address: AddressSchema,
  correlated: v.array(
    v.strictObject({
      address: AddressSchema,
      platform_name: v.nullable(v.string()),
      shared_markets: nullableInt,
      same_side_ratio: v.nullable(unit),
    }),
  ),
});

export const WalletSearchSchema = v.strictObject({
  query: v.string(),
  results: v.array(
    v.strictObject({
      address: AddressSchema,
      platform_name: v.nullable(v.string()),
      total_volume: nullableNumber,
      total_pnl: nullableNumber,
    }),
  ),
});

export const WalletEdgeSchema = v.strictObject({
  address: AddressSchema,
  platform_name: v.nullable(v.string()),
  category: v.nullable(v.string()),
  category_win_rate: v.nullable(unit),
  global_win_rate: v.nullable(unit),
  edge: nullableNumber,
  bets: nullableInt,
  total_pnl: nullableNumber,
});

export const LeaderboardEntrySchema = v.strictObject({
  address: AddressSchema,
  platform_name: v.nullable(v.string()),
  total_volume: nullableNumber,
  total_pnl: nullableNumber,
  pnl_source: PnlSourceSchema,
  pnl_as_of: v.nullable(isoDateTime),
  win_rate: v.nullable(unit),
  z_score: nullableNumber,
  total_bets: nullableInt,
});

export const WalletEdgePageSchema = PageOf(WalletEdgeSchema);
export const LeaderboardPageSchema = PageOf(LeaderboardEntrySchema);
