/**
 * Investigation candidates (docs/methodology.md, Investigations): a wallet, or a sybil cluster taken
 * together, with at least 20 resolved bets in a category, a win rate of at least 70%, positive
 * PnL there, an edge of at least 15 points over the category's base rate, and p ≤ 0.1 in the
 * wins-versus-prices test. Pure: the refresh feeds it rows and stores what it returns.
 */

import { type WinsTestMethod, winsVersusPrices } from "../analytics/wins-test";

export const MIN_RESOLVED_BETS = 20;
export const MIN_WIN_RATE = 0.7;
export const MIN_EDGE = 0.15;
export const MAX_P_VALUE = 0.1;
/** Float noise must not drop a case that sits exactly on a threshold (e.g. 14 of 20). */
const EPSILON = 1e-9;

export interface ResolvedBet {
  wallet: string;
  marketId: number;
  side: string;
  entryPrice: number | null;
  usdValue: number;
  won: boolean;
  entryTs: number;
}

export interface CandidateInput {
  category: string;
  /** The subject's PnL in the category (all its bets there, settled and marked). */
  pnl: number;
  baseRate: number;
  /** Every resolved bet of the subject's wallets in the category. */
  bets: readonly ResolvedBet[];
}

export interface CaseStats {
  resolvedBets: number;
  wins: number;
  winRate: number;
  baseRate: number;
  edge: number;
  pnl: number;
  /** The test's bets: the resolved ones with an entry price. */
  n: number;
  testWins: number;
  expectedWins: number;
  pValue: number;
  method: WinsTestMethod;
}

/** The passes that need no test, so the O(n²) p-value runs only on cases that could qualify. */
export function passesScreen(resolvedBets: number, wins: number, pnl: number, baseRate: number) {
  return (
    resolvedBets >= MIN_RESOLVED_BETS &&
    wins / resolvedBets >= MIN_WIN_RATE - EPSILON &&
    pnl > 0 &&
    wins / resolvedBets - baseRate >= MIN_EDGE - EPSILON
  );
}

/** The case's statistics when it qualifies, otherwise null. */
export function qualify(input: CandidateInput): CaseStats | null {
  const resolvedBets = input.bets.length;
  const wins = input.bets.filter((b) => b.won).length;
  if (!passesScreen(resolvedBets, wins, input.pnl, input.baseRate)) return null;
  const priced = input.bets.filter((b) => b.entryPrice !== null);
  const test = winsVersusPrices(
    priced.map((b) => b.entryPrice as number),
    priced.filter((b) => b.won).length,
  );
  if (test.pValue > MAX_P_VALUE) return null;
  const winRate = wins / resolvedBets;
  return {
    resolvedBets,
    wins,
    winRate,
    baseRate: input.baseRate,
    edge: winRate - input.baseRate,
    pnl: input.pnl,
    n: test.n,
    testWins: test.wins,
    expectedWins: test.expectedWins,
    pValue: test.pValue,
    method: test.method,
  };
}

export const EVIDENCE_LIMIT = 50;

/** The evidence shown: the largest resolved bets (by USD on their side), at most 50. */
export function evidenceBets(bets: readonly ResolvedBet[]): ResolvedBet[] {
  return [...bets]
    .sort(
      (a, b) =>
        b.usdValue - a.usdValue ||
        a.entryTs - b.entryTs ||
        a.wallet.localeCompare(b.wallet) ||
        a.marketId - b.marketId,
    )
    .slice(0, EVIDENCE_LIMIT);
}

const pct = (x: number) => `${Math.round(x * 100)}%`;
const shortAddress = (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`;

export function formatPValue(p: number): string {
  return p >= 0.001 ? p.toFixed(3) : p.toExponential(1);
}

export interface CaseSubject {
  type: "wallet" | "cluster";
  subject: string;
  clusterId: string | null;
  walletCount: number;
}

export function caseTitle(s: CaseSubject, category: string, stats: CaseStats): string {
  const who =
    s.type === "wallet"
      ? `Wallet ${shortAddress(s.subject)}`
      : `Cluster ${s.clusterId ?? shortAddress(s.subject)} (${s.walletCount} wallets)`;
  return `${who}: ${stats.wins} of ${stats.resolvedBets} resolved ${category} bets won`;
}

export function caseSummary(s: CaseSubject, category: string, stats: CaseStats): string {
  const who =
    s.type === "wallet"
      ? `Wallet ${s.subject}`
      : `The ${s.walletCount} wallets funded by ${s.subject} (cluster ${s.clusterId ?? "gone"})`;
  return (
    `${who} won ${stats.wins} of ${stats.resolvedBets} resolved ${category} bets (${pct(stats.winRate)}) ` +
    `against a ${category} base rate of ${pct(stats.baseRate)}, an edge of ` +
    `${Math.round(stats.edge * 100)} points, with a profit of $${Math.round(stats.pnl).toLocaleString("en-US")} there. ` +
    `Their entry prices implied ${stats.expectedWins.toFixed(1)} wins out of ${stats.n}; if every bet won ` +
    `with the probability its price gave it, ${stats.testWins} or more wins would have a chance of ` +
    `p = ${formatPValue(stats.pValue)} (${stats.method} Poisson-binomial test).`
  );
}
