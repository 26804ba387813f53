/** Time-bucketed money flow in one market (the flow endpoint, and the analysis's flow_24h). */

import type { Fill } from "./fill";

/** A window is cut into this many equal buckets: 5-minute buckets for the default hour. */
export const FLOW_BUCKETS = 12;

export interface FlowBucket {
  /** Epoch ms, inclusive. */
  start: number;
  /** Epoch ms, exclusive (the last bucket also takes fills at exactly `to`). */
  end: number;
  yesBuyUsd: number;
  yesSellUsd: number;
  noBuyUsd: number;
  noSellUsd: number;
  /** Money toward YES minus money toward NO: (BUY YES + SELL NO) − (BUY NO + SELL YES). */
  netFlow: number;
  uniqueWallets: number;
  /** Share-weighted mean price in YES terms (a NO fill at p counts as YES at 1 − p); null when empty. */
  avgPrice: number | null;
  trades: number;
}

export interface MarketFlowFigures {
  windowMinutes: number;
  from: number;
  to: number;
  totalVolume: number;
  /** BUY YES − SELL YES, USD. */
  netYes: number;
  /** BUY NO − SELL NO, USD. */
  netNo: number;
  uniqueWallets: number;
  buckets: FlowBucket[];
}

interface BucketTally {
  bucket: FlowBucket;
  wallets: Set<string>;
  yesShares: number;
  yesNotional: number;
}

/**
 * Buckets the fills of [to − minutes, to] (fills outside are ignored; the caller passes a market's
 * fills, already restricted to whales when whales_only). Empty buckets are kept, so charts line up.
 */
export function marketFlow(
  fills: Iterable<Fill>,
  window: { to: number; minutes: number; buckets?: number },
): MarketFlowFigures {
  const count = window.buckets ?? FLOW_BUCKETS;
  const span = window.minutes * 60_000;
  const from = window.to - span;
  const width = span / count;
  const tallies: BucketTally[] = Array.from({ length: count }, (_, i) => ({
    bucket: {
      start: from + Math.round(i * width),
      end: from + Math.round((i + 1) * width),
      yesBuyUsd: 0,
      yesSellUsd: 0,
      noBuyUsd: 0,
      noSellUsd: 0,
      netFlow: 0,
      uniqueWallets: 0,
      avgPrice: null,
      trades: 0,
    },
    wallets: new Set<string>(),
    yesShares: 0,
    yesNotional: 0,
  }));
  const everyone = new Set<string>();
  for (const fill of fills) {
    if (fill.ts < from || fill.ts > window.to) continue;
    const index = Math.min(count - 1, Math.floor((fill.ts - from) / width));
    const t = tallies[index]!;
    const b = t.bucket;
    if (fill.outcome === "YES") {
      if (fill.side === "BUY") b.yesBuyUsd += fill.usd;
      else b.yesSellUsd += fill.usd;
    } else if (fill.side === "BUY") b.noBuyUsd += fill.usd;
    else b.noSellUsd += fill.usd;
    b.trades += 1;
    t.wallets.add(fill.wallet);
    everyone.add(fill.wallet);
    t.yesShares += fill.size;
    t.yesNotional += (fill.outcome === "YES" ? fill.price : 1 - fill.price) * fill.size;
  }
  let totalVolume = 0;
  let netYes = 0;
  let netNo = 0;
  const buckets = tallies.map((t) => {
    const b = t.bucket;
    b.netFlow = b.yesBuyUsd + b.noSellUsd - (b.noBuyUsd + b.yesSellUsd);
    b.uniqueWallets = t.wallets.size;
    b.avgPrice = t.yesShares > 0 ? t.yesNotional / t.yesShares : null;
    totalVolume += b.yesBuyUsd + b.yesSellUsd + b.noBuyUsd + b.noSellUsd;
    netYes += b.yesBuyUsd - b.yesSellUsd;
    netNo += b.noBuyUsd - b.noSellUsd;
    return b;
  });
  return {
    windowMinutes: window.minutes,
    from,
    to: window.to,
    totalVolume,
    netYes,
    netNo,
    uniqueWallets: everyone.size,
    buckets,
  };
}
