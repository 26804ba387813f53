/**
 * The smart-money score: eight signals, each scaled to 0..1 and weighted to a 0–100 total, with
 * the points of each kept as the breakdown (docs/methodology.md, "Smart-money score").
 */

import type { BetRecord } from "./bets";
import { consistencyShare, counterConsensusWins, walletCategoryStats } from "./categories";
import { clamp01, roundTo } from "./fill";
import { bayesianWinRate, scoreConfidence } from "./rates";
import { meanFavourableMove } from "./timing";
import { walletWinsTest } from "./wins-test";

export const SIGNAL_WEIGHTS = {
  skill: 20,
  edge: 20,
  significance: 15,
  roi: 10,
  consistency: 10,
  timing: 10,
  contrarian: 5,
  experience: 10,
} as const;

export type SignalName = keyof typeof SIGNAL_WEIGHTS;

/** The measures behind the signals, before scaling. Nulls score 0 points. */
export interface SmartMoneyFacts {
  resolvedBets: number;
  wins: number;
  bayesianWinRate: number | null;
  /** mean(won − entry price) over resolved bets with an entry price (won = 1 or 0). */
  meanEntryEdge: number | null;
  /** log10 of the wins-versus-prices p-value (≤ 0). */
  log10PValue: number | null;
  /** The routed PnL (null when the source is `none`). */
  totalPnl: number | null;
  totalVolume: number;
  consistency: number | null;
  meanMove24h: number | null;
  counterConsensusWins: number;
}

export type ScoreBreakdown =
  | ({ method: "signals" } & Record<SignalName, number>)
  | { method: "bayesian_fallback"; bayesian_win_rate: number | null };

export interface SmartMoneyScore {
  /** 0..100; equals the sum of the breakdown's points. */
  score: number;
  confidence: number;
  breakdown: ScoreBreakdown;
}

/** Each signal's measure divided by the value that earns full points. */
export function signalLevels(f: SmartMoneyFacts): Record<SignalName, number> {
  return {
    skill: f.bayesianWinRate === null ? 0 : clamp01((f.bayesianWinRate - 0.5) / 0.3),
    edge: f.meanEntryEdge === null ? 0 : clamp01(f.meanEntryEdge / 0.25),
    significance: f.log10PValue === null ? 0 : clamp01(-f.log10PValue / 3),
    roi: f.totalPnl === null || f.totalVolume <= 0 ? 0 : clamp01(f.totalPnl / f.totalVolume / 0.5),
    consistency: f.consistency === null ? 0 : clamp01(f.consistency),
    timing: f.meanMove24h === null ? 0 : clamp01(f.meanMove24h / 0.2),
    contrarian: f.wins > 0 ? clamp01(f.counterConsensusWins / f.wins) : 0,
    experience: f.resolvedBets > 1 ? clamp01(Math.log10(f.resolvedBets) / Math.log10(200)) : 0,
  };
}

export function smartMoneyScore(facts: SmartMoneyFacts): SmartMoneyScore {
  const levels = signalLevels(facts);
  const names = Object.keys(SIGNAL_WEIGHTS) as SignalName[];
  const points = Object.fromEntries(
    names.map((name) => [name, roundTo(SIGNAL_WEIGHTS[name] * levels[name], 2)]),
  ) as Record<SignalName, number>;
  const score = roundTo(
    names.reduce((sum, name) => sum + points[name], 0),
    2,
  );
  return {
    score,
    confidence: scoreConfidence(facts.resolvedBets),
    breakdown: { method: "signals", ...points },
  };
}

/**
 * Until the refresh job has scored a wallet: 100 × bayesian_win_rate. With nothing resolved the
 * Bayesian rate is undefined and the prior's own mean (50) is served, at confidence 0.
 */
export function fallbackScore(wins: number, resolvedBets: number): SmartMoneyScore {
  const rate = bayesianWinRate(wins, resolvedBets);
  return {
    score: roundTo(100 * (rate ?? 0.5), 2),
    confidence: scoreConfidence(resolvedBets),
    breakdown: { method: "bayesian_fallback", bayesian_win_rate: rate },
  };
}

/** A bet with, where known, its favourable move 24 h after entry (for the timing signal). */
export type ScoredBet = BetRecord & { move24h?: number | null };

/**
 * Gathers the score's measures from one wallet's bets plus its routed PnL. `known.log10PValue`
 * is the wins-versus-prices result for these same resolved bets when the caller already has it:
 * the exact test is quadratic in resolved bets, and a wallet's resolved bets rarely change.
 */
export function smartMoneyFacts(
  bets: readonly ScoredBet[],
  routed: { totalPnl: number | null },
  known?: { log10PValue: number | null },
): SmartMoneyFacts {
  const resolved = bets.filter((b) => b.won !== null);
  const wins = resolved.filter((b) => b.won === true).length;
  const priced = resolved.filter((b) => b.entryPrice !== null);
  const test = known !== undefined ? known : priced.length > 0 ? walletWinsTest(priced) : null;
  const edgeSum = priced.reduce((sum, b) => sum + (b.won ? 1 : 0) - b.entryPrice!, 0);
  return {
    resolvedBets: resolved.length,
    wins,
    bayesianWinRate: bayesianWinRate(wins, resolved.length),
    meanEntryEdge: priced.length > 0 ? edgeSum / priced.length : null,
    log10PValue: test?.log10PValue ?? null,
    totalPnl: routed.totalPnl,
    totalVolume: bets.reduce((sum, b) => sum + b.volume, 0),
    consistency: consistencyShare(walletCategoryStats(bets)),
    meanMove24h: meanFavourableMove(bets),
    counterConsensusWins: counterConsensusWins(resolved),
  };
}
