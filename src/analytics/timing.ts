/**
 * When a wallet trades relative to resolution (the /v1/wallets/{address}/timing answer) and whether prices move its
 * way afterwards (the score's `timing` signal).
 */

import { directionOf, type Outcome, type TradeSide } from "./fill";
import { winRate } from "./rates";

/** The timing answer covers the wallet's last 500 resolved trades. */
export const TIMING_TRADE_LIMIT = 500;

/** Hours between a trade and its market's resolution, [fromHours, toHours). */
export const TIMING_BUCKETS: readonly { label: string; fromHours: number; toHours: number }[] = [
  { label: "<1h", fromHours: 0, toHours: 1 },
  { label: "1-6h", fromHours: 1, toHours: 6 },
  { label: "6-24h", fromHours: 6, toHours: 24 },
  { label: "1-7d", fromHours: 24, toHours: 168 },
  { label: "7-30d", fromHours: 168, toHours: 720 },
  { label: ">30d", fromHours: 720, toHours: Number.POSITIVE_INFINITY },
];

export interface ResolvedTrade {
  outcome: Outcome;
  side: TradeSide;
  ts: number;
  resolvedOutcome: Outcome;
  resolvedAt: number;
}

export interface TimingBucket {
  label: string;
  count: number;
  wins: number;
  winRate: number | null;
}

/** A trade wins when its direction (BUY YES / SELL NO → YES) is the resolved outcome. */
export function tradeWon(trade: ResolvedTrade): boolean {
  return directionOf(trade) === trade.resolvedOutcome;
}

/** What the buckets need of a trade: its time, its bucket, and whether it won. */
export interface TimedTrade {
  ts: number;
  /** Its index in TIMING_BUCKETS (timingBucketOf), or -1 for a trade after the resolution. */
  bucket: number;
  won: boolean;
}

/** The index in TIMING_BUCKETS of a trade at `ts` in a market resolved at `resolvedAt`, or -1. */
export function timingBucketOf(ts: number, resolvedAt: number): number {
  const hours = (resolvedAt - ts) / 3_600_000;
  return TIMING_BUCKETS.findIndex((b) => hours >= b.fromHours && hours < b.toHours);
}

export function timedTrade(trade: ResolvedTrade): TimedTrade {
  return {
    ts: trade.ts,
    bucket: timingBucketOf(trade.ts, trade.resolvedAt),
    won: tradeWon(trade),
  };
}

/**
 * Win rate by hours-before-resolution over the most recent 500 trades given. Every bucket is
 * always present (count 0, win rate null) so charts line up; trades dated after their market's
 * resolution are left out.
 */
export function timingBuckets(trades: readonly TimedTrade[]): TimingBucket[] {
  const recent =
    trades.length > TIMING_TRADE_LIMIT
      ? [...trades].sort((a, b) => b.ts - a.ts).slice(0, TIMING_TRADE_LIMIT)
      : trades;
  const counts = TIMING_BUCKETS.map(() => ({ count: 0, wins: 0 }));
  for (const trade of recent) {
    const bucket = counts[trade.bucket];
    if (bucket === undefined) continue;
    bucket.count += 1;
    if (trade.won) bucket.wins += 1;
  }
  return TIMING_BUCKETS.map((b, i) => {
    const { count, wins } = counts[i]!;
    return { label: b.label, count, wins, winRate: winRate(wins, count) };
  });
}

/**
 * Mean of the favourable move (price of the bet's side 24 h after entry − entry price) over the
 * bets where the caller knows that later price: the side's last trade at or before entry + 24 h,
 * or the payout (1 or 0) when the market resolved sooner. The caller stores the move per bet
 * (wallet_bets.move_24h), so a wallet can be scored again without its fills.
 */
export function meanFavourableMove(bets: Iterable<{ move24h?: number | null }>): number | null {
  let sum = 0;
  let n = 0;
  for (const bet of bets) {
    if (bet.move24h === undefined || bet.move24h === null) continue;
    sum += bet.move24h;
    n += 1;
  }
  return n > 0 ? sum / n : null;
}

/** The favourable move of one bet, or null while its later price or its entry is unknown. */
export function favourableMove(
  entryPrice: number | null,
  priceAfter24h: number | null,
): number | null {
  return entryPrice === null || priceAfter24h === null ? null : priceAfter24h - entryPrice;
}

/**
 * The buckets as the read models store them (wallet_timing.counts, sql/0024): JSON of each
 * bucket's count and wins in TIMING_BUCKETS order, flattened ([count, wins, count, wins, …]).
 * About 30 characters instead of the answer's 230 or more; the win rates are computed on read,
 * the same division the refresh did.
 */
export function storedTiming(buckets: readonly TimingBucket[]): string {
  return JSON.stringify(buckets.flatMap((b) => [b.count, b.wins]));
}

/** The buckets of a stored wallet_timing.counts (storedTiming). */
export function timingFromStored(counts: string): TimingBucket[] {
  const values = JSON.parse(counts) as number[];
  if (values.length !== TIMING_BUCKETS.length * 2) {
    throw new Error(`stored timing has ${values.length} values, not ${TIMING_BUCKETS.length * 2}`);
  }
  return TIMING_BUCKETS.map((b, i) => {
    const count = values[2 * i]!;
    const wins = values[2 * i + 1]!;
    return { label: b.label, count, wins, winRate: winRate(wins, count) };
  });
}
