/**
 * The insider signal: eight categories of suspicion summed and capped at 100, fired at 65 or more
 * (docs/methodology.md, "Signals"), and the sentence that says which facts drove it. Each category's
 * points rise linearly from 0 to its maximum between two documented thresholds
 * (docs/methodology.md, "Insider signal").
 */

import { clamp01, DAY_MS, type Outcome, roundTo, type TradeSide } from "./fill";
import { formatAge, formatPercent, formatPrice, formatUsd, joinClauses, plural } from "./format";
import { bayesianWinRate } from "./rates";

export const INSIDER_FIRE_SCORE = 65;

export const INSIDER_WEIGHTS = {
  size: 20,
  odds: 20,
  funding_cluster: 15,
  timing_cluster: 15,
  freshness: 15,
  concentration: 10,
  niche_market: 10,
  cluster_reputation: 15,
} as const;

export type InsiderCategory = keyof typeof INSIDER_WEIGHTS;

/** Everything the score needs about one trade, gathered by the caller as of the trade's time. */
export interface InsiderFacts {
  side: TradeSide;
  outcome: Outcome;
  price: number;
  usd: number;
  /** Epoch ms of the trade (the wallet's age is measured to it; no clock is read). */
  tradeTs: number;
  /** The market's USD volume over the 30 days up to and including this trade. */
  marketVolumeUsd: number;
  /** Members of the wallet's sybil (shared-funder) cluster; 0 when it belongs to none. */
  clusterSize: number;
  /**
   * Other fresh wallets (first funded less than 7 days before their trade) that bought this
   * trade's outcome in this market during the hour before it.
   */
  freshSameSideWallets: number;
  /** First inbound USDC transfer, epoch ms; null when none was seen. */
  firstFundedAt: number | null;
  /** The wallet's trades before this one. */
  priorTrades: number;
  /** The wallet's total volume and its volume in this market, both including this trade. */
  walletVolumeUsd: number;
  walletMarketVolumeUsd: number;
  /** The cluster's record before this trade (all members' resolved bets and wins). */
  clusterResolvedBets: number;
  clusterWins: number;
  /** A member of the cluster, or the cluster, is in an open investigation. */
  clusterUnderInvestigation: boolean;
}

export interface InsiderScore {
  /** 0..100, the capped sum of the points. */
  score: number;
  fires: boolean;
  points: Record<InsiderCategory, number>;
}

const FRESH_MS = 7 * DAY_MS;

/** Share of the market's volume that earns full size points. */
const FULL_SIZE_SHARE = 0.1;
/**
 * A bet earns its size and odds points in full only from this many USD, in proportion below.
 * Without it a few dollars in a days-old market "are 100% of its volume", and a $2 lottery ticket
 * at 0.01 looks like inside knowledge: on the fixture world those made four of five insider
 * signals false (docs/methodology.md, "Insider signal").
 */
const FULL_SIZE_USD = 1_000;
/** Buying at 0.20 earns 5 of 20 odds points, at 0.05 or less all 20. */
const ODDS_FROM_PRICE = 0.2;
/** Markets under this 30-day volume start to count as niche; at a tenth of it, fully niche. */
const NICHE_VOLUME_USD = 100_000;
/** The cluster's record counts once it has this many resolved bets. */
const REPUTATION_MIN_BETS = 10;

/** The ratios both the points and the sentence are built from. */
function measures(f: InsiderFacts) {
  return {
    marketShare: f.marketVolumeUsd > 0 ? f.usd / f.marketVolumeUsd : 1,
    concentration: f.walletVolumeUsd > 0 ? f.walletMarketVolumeUsd / f.walletVolumeUsd : 0,
    inCluster: f.clusterSize >= 2,
    fresh: f.firstFundedAt !== null && f.tradeTs - f.firstFundedAt < FRESH_MS,
    walletAgeMs: f.firstFundedAt === null ? null : f.tradeTs - f.firstFundedAt,
    clusterRate: bayesianWinRate(f.clusterWins, f.clusterResolvedBets),
  };
}

export function insiderPoints(f: InsiderFacts): Record<InsiderCategory, number> {
  const { marketShare, concentration, inCluster, fresh, clusterRate } = measures(f);
  const levels: Record<InsiderCategory, number> = {
    size: clamp01(marketShare / FULL_SIZE_SHARE) * clamp01(f.usd / FULL_SIZE_USD),
    odds:
      f.side === "BUY" && f.price <= ODDS_FROM_PRICE
        ? clamp01((0.25 - f.price) / 0.2) * clamp01(f.usd / FULL_SIZE_USD)
        : 0,
    funding_cluster: inCluster ? (10 + 5 * clamp01((f.clusterSize - 2) / 3)) / 15 : 0,
    timing_cluster: Math.min(3, Math.max(0, f.freshSameSideWallets)) / 3,
    freshness: fresh ? clamp01((20 - f.priorTrades) / 15) : 0,
    concentration: clamp01((concentration - 0.5) / 0.4),
    niche_market:
      f.marketVolumeUsd > 0 ? clamp01(Math.log10(NICHE_VOLUME_USD / f.marketVolumeUsd)) : 1,
    cluster_reputation: !inCluster
      ? 0
      : f.clusterUnderInvestigation
        ? 1
        : f.clusterResolvedBets >= REPUTATION_MIN_BETS && clusterRate !== null
          ? clamp01((clusterRate - 0.5) / 0.25)
          : 0,
  };
  // Written out rather than mapped over the names: an import scores every fill it stores.
  const W = INSIDER_WEIGHTS;
  return {
    size: roundTo(W.size * levels.size, 2),
    odds: roundTo(W.odds * levels.odds, 2),
    funding_cluster: roundTo(W.funding_cluster * levels.funding_cluster, 2),
    timing_cluster: roundTo(W.timing_cluster * levels.timing_cluster, 2),
    freshness: roundTo(W.freshness * levels.freshness, 2),
    concentration: roundTo(W.concentration * levels.concentration, 2),
    niche_market: roundTo(W.niche_market * levels.niche_market, 2),
    cluster_reputation: roundTo(W.cluster_reputation * levels.cluster_reputation, 2),
  };
}

export function insiderScore(facts: InsiderFacts): InsiderScore {
  const points = insiderPoints(facts);
  // Summed in the weights' order, from 0, as before (a float sum depends on its order).
  const sum =
    0 +
    points.size +
    points.odds +
    points.funding_cluster +
    points.timing_cluster +
    points.freshness +
    points.concentration +
    points.niche_market +
    points.cluster_reputation;
  const score = Math.min(100, roundTo(sum, 2));
  return { score, fires: score >= INSIDER_FIRE_SCORE, points };
}

function clause(category: InsiderCategory, f: InsiderFacts): string {
  const m = measures(f);
  switch (category) {
    case "size":
      return `the bet is ${formatPercent(m.marketShare)} of the market's 30-day volume`;
    case "odds":
      return `the price gave ${f.outcome} a chance of only ${formatPercent(f.price)}`;
    case "funding_cluster":
      return `its funder also funded ${plural(f.clusterSize - 1, "other wallet")}`;
    case "timing_cluster":
      return `${plural(f.freshSameSideWallets, "other fresh wallet")} bought ${f.outcome} here within the hour`;
    case "freshness":
      return (
        `the wallet was first funded ${formatAge(m.walletAgeMs ?? 0)} earlier ` +
        `with ${plural(f.priorTrades, "prior trade")}`
      );
    case "concentration":
      return `${formatPercent(m.concentration)} of the wallet's volume is in this market`;
    case "niche_market":
      return `the market has only ${formatUsd(f.marketVolumeUsd)} of 30-day volume`;
    case "cluster_reputation":
      return f.clusterUnderInvestigation
        ? "its funding cluster is under investigation"
        : `its funding cluster has won ${formatPercent(f.clusterWins / f.clusterResolvedBets)} ` +
            `of ${plural(f.clusterResolvedBets, "resolved bet")}`;
  }
}

/** How many categories the sentence names: the ones that gave the most points. */
const EXPLAINED_CATEGORIES = 3;

/**
 * e.g. "Insider score 66: bought $8,000 of YES at 0.08; the bet is 20% of the market's 30-day
 * volume, the price gave YES a chance of only 8% and the wallet was first funded 2 days earlier
 * with 1 prior trade."
 */
export function explainInsiderSignal(facts: InsiderFacts, result: InsiderScore): string {
  const verb = facts.side === "BUY" ? "bought" : "sold";
  const trade = `${verb} ${formatUsd(facts.usd)} of ${facts.outcome} at ${formatPrice(facts.price)}`;
  const order = Object.keys(INSIDER_WEIGHTS) as InsiderCategory[];
  const drivers = order
    .filter((c) => result.points[c] > 0)
    .sort((a, b) => result.points[b] - result.points[a] || order.indexOf(a) - order.indexOf(b))
    .slice(0, EXPLAINED_CATEGORIES)
    .map((c) => clause(c, facts));
  const why = drivers.length > 0 ? joinClauses(drivers) : "nothing else about the trade stands out";
  return `Insider score ${Math.round(result.score)}: ${trade}; ${why}.`;
}
