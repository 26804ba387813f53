import { DAY_MS, directionOf, type Fill, HOUR_MS } from "../analytics/fill";
import { impliedProbability, marketSentiment, walletFlows } from "../analytics/sentiment";

export const SENTIMENT_WINDOW_MS = 30 * DAY_MS;

/** What the market model needs to know about a wallet. */
export interface WalletStanding {
  bayesianWinRate: number | null;
  /** Total volume over 50,000 USD. */
  whale: boolean;
  insider: boolean;
}

export interface MarketHourRow {
  hour: number;
  volume: number;
  whale_volume: number;
  trade_count: number;
  net_flow: number;
  open_yes: number;
  close_yes: number;
}

export interface MarketStatsRow {
  volume: number;
  trade_count: number;
  unique_wallets: number;
  last_yes_price: number | null;
  last_trade_at: number | null;
  sentiment: string | null;
  yes_ratio: number | null;
  yes_volume: number | null;
  no_volume: number | null;
  total_whale_volume: number | null;
  unique_whales: number | null;
  yes_implied_prob: number | null;
  no_implied_prob: number | null;
  implied_edge: number | null;
  implied_samples: number | null;
  implied_wallets: number | null;
}

const yesEquivalent = (fill: Fill) => (fill.outcome === "YES" ? fill.price : 1 - fill.price);

/**
 * One market's read-model rows from all its fills in time order: hourly buckets (volume, whale
 * volume, net YES-minus-NO flow, first and last YES-equivalent price), totals, the current price
 * (its last YES trade, else 1 − its last NO trade) and the 30-day sentiment and implied
 * probability over whale and insider wallets.
 */
export function marketModel(
  fills: readonly Fill[],
  now: number,
  standing: (wallet: string) => WalletStanding | undefined,
): { stats: MarketStatsRow; hours: MarketHourRow[] } {
  const hours: MarketHourRow[] = [];
  const wallets = new Set<string>();
  let volume = 0;
  let lastYes: number | null = null;
  let lastNo: number | null = null;
  const recentWhaleFills: Fill[] = [];
  for (const fill of fills) {
    const hour = Math.floor(fill.ts / HOUR_MS);
    let bucket = hours.at(-1);
    if (!bucket || bucket.hour !== hour) {
      bucket = {
        hour,
        volume: 0,
        whale_volume: 0,
        trade_count: 0,
        net_flow: 0,
        open_yes: yesEquivalent(fill),
        close_yes: yesEquivalent(fill),
      };
      hours.push(bucket);
    }
    const who = standing(fill.wallet);
    bucket.volume += fill.usd;
    bucket.trade_count += 1;
    bucket.net_flow += directionOf(fill) === "YES" ? fill.usd : -fill.usd;
    bucket.close_yes = yesEquivalent(fill);
    if (who?.whale) bucket.whale_volume += fill.usd;
    volume += fill.usd;
    wallets.add(fill.wallet);
    if (fill.outcome === "YES") lastYes = fill.price;
    else lastNo = fill.price;
    if (fill.ts >= now - SENTIMENT_WINDOW_MS && fill.ts <= now && (who?.whale || who?.insider)) {
      recentWhaleFills.push(fill);
    }
  }
  const currentPrice = lastYes ?? (lastNo === null ? null : 1 - lastNo);
  const flows = walletFlows(recentWhaleFills);
  const weightOf = (wallet: string) => standing(wallet)?.bayesianWinRate ?? null;
  const sentiment = marketSentiment(flows.values(), weightOf);
  const implied = impliedProbability(flows.values(), weightOf, currentPrice);
  const hasWhales = sentiment.totalWhaleVolume > 0;
  return {
    hours,
    stats: {
      volume,
      trade_count: fills.length,
      unique_wallets: wallets.size,
      last_yes_price: currentPrice,
      last_trade_at: fills.at(-1)?.ts ?? null,
      sentiment: sentiment.sentiment,
      yes_ratio: sentiment.yesRatio,
      yes_volume: hasWhales ? sentiment.yesVolume : null,
      no_volume: hasWhales ? sentiment.noVolume : null,
      total_whale_volume: hasWhales ? sentiment.totalWhaleVolume : null,
      unique_whales: hasWhales ? sentiment.uniqueWhales : null,
      yes_implied_prob: implied.yesImpliedProb,
      no_implied_prob: implied.noImpliedProb,
      implied_edge: implied.edge,
      implied_samples: implied.yesImpliedProb === null ? null : implied.samples,
      implied_wallets: implied.yesImpliedProb === null ? null : implied.uniqueWallets,
    },
  };
}
