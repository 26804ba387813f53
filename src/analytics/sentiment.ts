/**
 * Market sentiment and the whale-implied probability (docs/methodology.md, "Market sentiment and
 * whale-implied probability"), plus the MarketAnalysis variant. The caller picks the fills (30
 * days, whale and insider wallets); these functions only weigh them.
 */

import type { Fill, Outcome } from "./fill";

export const BULLISH_FROM = 0.6;
export const BEARISH_TO = 0.4;
/** Weight of a wallet with no resolved bets: the Beta(10, 10) prior's mean. */
export const NEUTRAL_WEIGHT = 0.5;

/** One wallet's money in one market. */
export interface WalletMarketFlow {
  wallet: string;
  /** BUY YES + SELL NO, USD. */
  yesFlowUsd: number;
  /** BUY NO + SELL YES, USD. */
  noFlowUsd: number;
  /** BUY YES − SELL YES, USD: the net position in YES at cost (negative after selling more than bought). */
  netYesUsd: number;
  netNoUsd: number;
  volume: number;
  trades: number;
}

export function walletFlows(fills: Iterable<Fill>): Map<string, WalletMarketFlow> {
  const flows = new Map<string, WalletMarketFlow>();
  for (const fill of fills) {
    let flow = flows.get(fill.wallet);
    if (flow === undefined) {
      flow = {
        wallet: fill.wallet,
        yesFlowUsd: 0,
        noFlowUsd: 0,
        netYesUsd: 0,
        netNoUsd: 0,
        volume: 0,
        trades: 0,
      };
      flows.set(fill.wallet, flow);
    }
    const signed = fill.side === "BUY" ? fill.usd : -fill.usd;
    if (fill.outcome === "YES") flow.netYesUsd += signed;
    else flow.netNoUsd += signed;
    const towardYes = (fill.outcome === "YES") === (fill.side === "BUY");
    if (towardYes) flow.yesFlowUsd += fill.usd;
    else flow.noFlowUsd += fill.usd;
    flow.volume += fill.usd;
    flow.trades += 1;
  }
  return flows;
}

export type SentimentLabel = "bullish" | "bearish" | "mixed";

export interface SentimentFigures {
  sentiment: SentimentLabel | null;
  /** Weighted YES flow / (weighted YES + weighted NO flow). */
  yesRatio: number | null;
  /** Unweighted USD, so customers can read them as dollars. */
  yesVolume: number;
  noVolume: number;
  totalWhaleVolume: number;
  uniqueWhales: number;
}

export function sentimentLabel(yesRatio: number | null): SentimentLabel | null {
  if (yesRatio === null) return null;
  if (yesRatio >= BULLISH_FROM) return "bullish";
  if (yesRatio <= BEARISH_TO) return "bearish";
  return "mixed";
}

const ratio = (part: number, whole: number): number | null => (whole > 0 ? part / whole : null);

/** weightOf: the wallet's bayesian_win_rate (null → NEUTRAL_WEIGHT). */
export function marketSentiment(
  flows: Iterable<WalletMarketFlow>,
  weightOf: (wallet: string) => number | null,
): SentimentFigures {
  let yesVolume = 0;
  let noVolume = 0;
  let weightedYes = 0;
  let weightedNo = 0;
  let uniqueWhales = 0;
  for (const flow of flows) {
    if (flow.yesFlowUsd + flow.noFlowUsd <= 0) continue;
    const weight = weightOf(flow.wallet) ?? NEUTRAL_WEIGHT;
    yesVolume += flow.yesFlowUsd;
    noVolume += flow.noFlowUsd;
    weightedYes += weight * flow.yesFlowUsd;
    weightedNo += weight * flow.noFlowUsd;
    uniqueWhales += 1;
  }
  const totalWhaleVolume = yesVolume + noVolume;
  const yesRatio = totalWhaleVolume > 0 ? ratio(weightedYes, weightedYes + weightedNo) : null;
  return {
    sentiment: sentimentLabel(yesRatio),
    yesRatio,
    yesVolume,
    noVolume,
    totalWhaleVolume,
    uniqueWhales,
  };
}

/**
 * Σ weight × held YES / Σ weight × (held YES + held NO), a position counting at its net cost and
 * only when positive. At cost, a market's holders as a whole split in proportion to the price,
 * so whales who hold like everyone else imply the market price and the edge is zero.
 */
function weightedYesShare(
  flows: Iterable<WalletMarketFlow>,
  weightOf: (wallet: string) => number,
): { share: number | null; wallets: number; samples: number } {
  let yes = 0;
  let all = 0;
  let wallets = 0;
  let samples = 0;
  for (const flow of flows) {
    const heldYes = Math.max(0, flow.netYesUsd);
    const heldNo = Math.max(0, flow.netNoUsd);
    if (heldYes + heldNo <= 0) continue;
    const weight = weightOf(flow.wallet);
    yes += weight * heldYes;
    all += weight * (heldYes + heldNo);
    wallets += 1;
    samples += flow.trades;
  }
  return { share: ratio(yes, all), wallets, samples };
}

export interface ImpliedFigures {
  yesImpliedProb: number | null;
  noImpliedProb: number | null;
  /** The market's last YES trade price, as given. */
  currentPrice: number | null;
  /** yesImpliedProb − currentPrice. */
  edge: number | null;
  /** Fills behind the positions counted. */
  samples: number;
  /** Wallets holding a positive net position. */
  uniqueWallets: number;
}

export function impliedProbability(
  flows: Iterable<WalletMarketFlow>,
  weightOf: (wallet: string) => number | null,
  currentPrice: number | null,
): ImpliedFigures {
  const { share, wallets, samples } = weightedYesShare(flows, (w) => weightOf(w) ?? NEUTRAL_WEIGHT);
  return {
    yesImpliedProb: share,
    noImpliedProb: share === null ? null : 1 - share,
    currentPrice,
    edge: share !== null && currentPrice !== null ? share - currentPrice : null,
    samples,
    uniqueWallets: wallets,
  };
}

export interface MarketPosition {
  wallet: string;
  /** The outcome with the larger net USD. */
  side: Outcome;
  volume: number;
  trades: number;
  netYesUsd: number;
  netNoUsd: number;
}

/** Every wallet's position in the market, largest volume first (then address, for stable ties). */
export function marketPositions(flows: Iterable<WalletMarketFlow>): MarketPosition[] {
  return [...flows]
    .map((f) => ({
      wallet: f.wallet,
      side: (f.netYesUsd >= f.netNoUsd ? "YES" : "NO") as Outcome,
      volume: f.volume,
      trades: f.trades,
      netYesUsd: f.netYesUsd,
      netNoUsd: f.netNoUsd,
    }))
    .sort((a, b) => b.volume - a.volume || (a.wallet < b.wallet ? -1 : 1));
}

/** What heldPosition reads of a bet (wallet_bets keeps these per wallet and market). */
export interface HeldBet {
  wallet: string;
  side: Outcome;
  entryPrice: number | null;
  /** Shares held now, per outcome (negative after selling more than the fills show bought). */
  yesShares: number;
  noShares: number;
  volume: number;
  trades: number;
}

/**
 * A position for the smart-money share: the side's shares held now at the side's entry price,
 * i.e. the cost of what the wallet still holds. A stored bet keeps no per-outcome net USD, and
 * the held cost is what docs/methodology.md's "net position at cost, only when positive"
 * measures: a wallet that sold out counts nothing, one that trimmed counts what is left. The
 * API (src/read/market-positions.ts) and the backtest (src/backtest/) both build positions here.
 */
export function heldPosition(bet: HeldBet): MarketPosition {
  const shares = bet.side === "YES" ? bet.yesShares : bet.noShares;
  const heldCost = Math.max(0, shares) * (bet.entryPrice ?? 0);
  return {
    wallet: bet.wallet,
    side: bet.side,
    volume: bet.volume,
    trades: bet.trades,
    netYesUsd: bet.side === "YES" ? heldCost : 0,
    netNoUsd: bet.side === "NO" ? heldCost : 0,
  };
}

export interface SmartMoneyProbability {
  /** 0..1, or null when no weighted wallet holds a position. */
  probability: number | null;
  sampleWallets: number;
}

/**
 * MarketAnalysis: the same weighted share over the top positions, each weighted by
 * smart_money_score × confidence, so a wallet counts by how good it is and how sure we are.
 */
export function smartMoneyProbability(
  positions: Iterable<MarketPosition>,
  scoreOf: (wallet: string) => { score: number; confidence: number } | null,
): SmartMoneyProbability {
  const scored: WalletMarketFlow[] = [];
  const weights = new Map<string, number>();
  for (const p of positions) {
    const s = scoreOf(p.wallet);
    const weight = s === null ? 0 : (s.score / 100) * s.confidence;
    if (weight <= 0) continue;
    weights.set(p.wallet, weight);
    scored.push({ ...p, yesFlowUsd: 0, noFlowUsd: 0 });
  }
  const { share, wallets } = weightedYesShare(scored, (w) => weights.get(w) ?? 0);
  return { probability: share, sampleWallets: wallets };
}

/** smart_money_prob − market_price (MarketAnalysis.divergence). */
export function divergence(probability: number | null, marketPrice: number | null): number | null {
  return probability !== null && marketPrice !== null ? probability - marketPrice : null;
}
