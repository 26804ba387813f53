/** Win rates and the confidence that goes with them (docs/methodology.md, "Bets" and "Win rates"). */

/** Strength of the Beta(10, 10) prior: ten imagined wins and ten imagined losses. */
export const PRIOR_WINS = 10;
export const PRIOR_BETS = 20;

/** wins / resolved, or null when nothing has resolved yet. */
export function winRate(wins: number, resolvedBets: number): number | null {
  return resolvedBets > 0 ? wins / resolvedBets : null;
}

/**
 * (wins + 10) / (resolved + 20): the raw win rate shrunk toward one half, so that 3 wins out of
 * 3 (0.565) does not outrank 70 out of 100 (0.667). Null at zero resolved bets, as the raw rate.
 */
export function bayesianWinRate(wins: number, resolvedBets: number): number | null {
  return resolvedBets > 0 ? (wins + PRIOR_WINS) / (resolvedBets + PRIOR_BETS) : null;
}

/** resolved / (resolved + 20): how much of the Bayesian estimate comes from the wallet itself. */
export function scoreConfidence(resolvedBets: number): number {
  return resolvedBets / (resolvedBets + PRIOR_BETS);
}
