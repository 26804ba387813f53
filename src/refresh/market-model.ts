import { DAY_MS, directionOf, type Fill, HOUR_MS } from "../analytics/fill";
import { impliedProbability, marketSentiment, walletFlows } from "../analytics/sentiment";

export const SENTIMENT_WINDOW_MS = 30 * DAY_MS;

/** What the market model needs to know about a wallet. */
export interface WalletStanding {
  bayesianWinRate: number | null;
  /** Total volume over WHALE_VOLUME_USD. */
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
  /** Each outcome's last trade price: the marks of open positions. */
  last_yes_trade: number | null;
  last_no_trade: number | null;
}

const yesEquivalent = (fill: Fill) => (fill.outcome === "YES" ? fill.price : 1 - fill.price);

const inWindow = (fill: Fill, now: number) =>
  fill.ts >= now - SENTIMENT_WINDOW_MS && fill.ts <= now;

const counts = (who: WalletStanding | undefined) => who?.whale === true || who?.insider === true;

/**
 * Hourly buckets from fills in time order: volume, whale volume, net YES-minus-NO flow, first
 * and last YES-equivalent price. Fills from the start of an hour on give that hour's bucket and
 * every later one exactly, which lets an incremental refresh redo only the hours that changed.
 */
function hourBuckets(
  fills: readonly Fill[],
  standing: (wallet: string) => WalletStanding | undefined,
): MarketHourRow[] {
  const hours: MarketHourRow[] = [];
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
    bucket.volume += fill.usd;
    bucket.trade_count += 1;
    bucket.net_flow += directionOf(fill) === "YES" ? fill.usd : -fill.usd;
    bucket.close_yes = yesEquivalent(fill);
    if (standing(fill.wallet)?.whale) bucket.whale_volume += fill.usd;
  }
  return hours;
}

type SentimentColumns = Pick<
  MarketStatsRow,
  | "sentiment"
  | "yes_ratio"
  | "yes_volume"
  | "no_volume"
  | "total_whale_volume"
  | "unique_whales"
  | "yes_implied_prob"
  | "no_implied_prob"
  | "implied_edge"
  | "implied_samples"
  | "implied_wallets"
>;

/** The 30-day sentiment and implied probability from the window's whale and insider fills. */
function sentimentColumns(
  whaleFills: readonly Fill[],
  standing: (wallet: string) => WalletStanding | undefined,
  currentPrice: number | null,
): SentimentColumns {
  const flows = walletFlows(whaleFills);
  const weightOf = (wallet: string) => standing(wallet)?.bayesianWinRate ?? null;
  const sentiment = marketSentiment(flows.values(), weightOf);
  const implied = impliedProbability(flows.values(), weightOf, currentPrice);
  const hasWhales = sentiment.totalWhaleVolume > 0;
  return {
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
  };
}

/** A market's current price: its last YES trade, else 1 − its last NO trade. */
export const currentPriceOf = (lastYes: number | null, lastNo: number | null) =>
  lastYes ?? (lastNo === null ? null : 1 - lastNo);

/**
 * One market's read-model rows from all its fills in time order: hourly buckets, totals, the
 * current price (its last YES trade, else 1 − its last NO trade) and the 30-day sentiment and
 * implied probability over whale and insider wallets.
 */
export function marketModel(
  fills: readonly Fill[],
  now: number,
  standing: (wallet: string) => WalletStanding | undefined,
): { stats: MarketStatsRow; hours: MarketHourRow[] } {
  const wallets = new Set<string>();
  let volume = 0;
  let lastYes: number | null = null;
  let lastNo: number | null = null;
  const recentWhaleFills: Fill[] = [];
  for (const fill of fills) {
    volume += fill.usd;
    wallets.add(fill.wallet);
    if (fill.outcome === "YES") lastYes = fill.price;
    else lastNo = fill.price;
    if (inWindow(fill, now) && counts(standing(fill.wallet))) recentWhaleFills.push(fill);
  }
  const currentPrice = currentPriceOf(lastYes, lastNo);
  return {
    hours: hourBuckets(fills, standing),
    stats: {
      volume,
      trade_count: fills.length,
      unique_wallets: wallets.size,
      last_yes_price: currentPrice,
      last_trade_at: fills.at(-1)?.ts ?? null,
      ...sentimentColumns(recentWhaleFills, standing, currentPrice),
      last_yes_trade: lastYes,
      last_no_trade: lastNo,
    },
  };
}

/** What appending needs beyond the market's previous stats and its latest fills. */
export interface AppendInputs {
  /** The market's fills from the start of the hour of its first new fill, in time order. */
  fills: readonly Fill[];
  /** Wallets among the new fills that had never traded the market. */
  newWallets: number;
  now: number;
  standing: (wallet: string) => WalletStanding | undefined;
  /** A wallet with fills here changed standing (weight, whale, insider): redo the sentiment. */
  sentimentChanged?: boolean;
  /** The window's whale and insider fills, read only when the sentiment must be redone. */
  windowWhaleFills: () => Fill[];
}

/**
 * The market's rows after new fills that all come after its previous last fill, or after a
 * wallet's standing changed: the same figures marketModel gives over all its fills, from the
 * previous stats plus the new fills (sums are continued in the same order, so they match to the
 * last bit), and the hours `fills` covers (every fill of each hour given). The sentiment is
 * recomputed when a whale or insider fill is among the new ones or `sentimentChanged`; otherwise
 * only its edge moves, with the current price.
 */
export function appendToMarket(
  previous: MarketStatsRow & { last_trade_at: number },
  input: AppendInputs,
): { stats: MarketStatsRow; hours: MarketHourRow[] } {
  let volume = previous.volume;
  let added = 0;
  let lastYes = previous.last_yes_trade;
  let lastNo = previous.last_no_trade;
  let whaleFill = false;
  let lastTradeAt = previous.last_trade_at;
  for (const fill of input.fills) {
    if (fill.ts <= previous.last_trade_at) continue;
    volume += fill.usd;
    added += 1;
    lastTradeAt = fill.ts;
    if (fill.outcome === "YES") lastYes = fill.price;
    else lastNo = fill.price;
    if (inWindow(fill, input.now) && counts(input.standing(fill.wallet))) whaleFill = true;
  }
  const currentPrice = currentPriceOf(lastYes, lastNo);
  const sentiment: SentimentColumns =
    whaleFill || input.sentimentChanged === true
      ? sentimentColumns(input.windowWhaleFills(), input.standing, currentPrice)
      : {
          sentiment: previous.sentiment,
          yes_ratio: previous.yes_ratio,
          yes_volume: previous.yes_volume,
          no_volume: previous.no_volume,
          total_whale_volume: previous.total_whale_volume,
          unique_whales: previous.unique_whales,
          yes_implied_prob: previous.yes_implied_prob,
          no_implied_prob: previous.no_implied_prob,
          implied_edge:
            previous.yes_implied_prob !== null && currentPrice !== null
              ? previous.yes_implied_prob - currentPrice
              : null,
          implied_samples: previous.implied_samples,
          implied_wallets: previous.implied_wallets,
        };
  return {
    hours: hourBuckets(input.fills, input.standing),
    stats: {
      volume,
      trade_count: previous.trade_count + added,
      unique_wallets: previous.unique_wallets + input.newWallets,
      last_yes_price: currentPrice,
      last_trade_at: lastTradeAt,
      ...sentiment,
      last_yes_trade: lastYes,
      last_no_trade: lastNo,
    },
  };
}
