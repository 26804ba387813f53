/**
 * Category base rates, a wallet's per-category record and edge, and the counter-consensus count
 * (docs/methodology.md, "Bets" and "Win rates"; the edge screener and the per-category record).
 */

import type { Bet, BetRecord } from "./bets";
import { winRate } from "./rates";

/** A bet entered below this price backed the outcome the market thought less likely. */
export const CONSENSUS_PRICE = 0.5;

export interface CategoryRate {
  category: string;
  resolvedBets: number;
  wins: number;
  /** Win rate of every resolved bet in the category, all wallets together. */
  baseRate: number | null;
}

/** Base rates over all wallets' bets; bets in markets without a category are left out. */
export function categoryBaseRates(
  bets: Iterable<Pick<Bet, "category" | "won">>,
): Map<string, CategoryRate> {
  const rates = new Map<string, CategoryRate>();
  for (const bet of bets) {
    if (bet.category === null || bet.won === null) continue;
    let rate = rates.get(bet.category);
    if (rate === undefined) {
      rate = { category: bet.category, resolvedBets: 0, wins: 0, baseRate: null };
      rates.set(bet.category, rate);
    }
    rate.resolvedBets += 1;
    if (bet.won) rate.wins += 1;
  }
  for (const rate of rates.values()) rate.baseRate = winRate(rate.wins, rate.resolvedBets);
  return rates;
}

/** Wins on bets entered below 0.5: the wallet was right when the market leaned the other way. */
export function counterConsensusWins(bets: Iterable<Pick<Bet, "won" | "entryPrice">>): number {
  let count = 0;
  for (const bet of bets) {
    if (bet.won === true && bet.entryPrice !== null && bet.entryPrice < CONSENSUS_PRICE) count += 1;
  }
  return count;
}

export interface WalletCategoryStat {
  category: string;
  bets: number;
  resolvedBets: number;
  wins: number;
  winRate: number | null;
  /** Category win rate minus the wallet's global win rate (the edge screener's `edge`). */
  edge: number | null;
  /** Category win rate minus the category's base rate (what investigations test). */
  edgeOverBaseRate: number | null;
  /** Σ of the caller's per-market PnL; null when the caller has no trustworthy figure. */
  pnl: number | null;
  volume: number;
  counterConsensusWins: number;
}

export interface CategoryStatOptions {
  /** PnL of one market for this wallet, or null when there is no trustworthy figure. */
  pnlOfMarket?: (marketId: number) => number | null;
  baseRates?: ReadonlyMap<string, CategoryRate>;
}

/** One wallet's record per category, most resolved bets first. */
export function walletCategoryStats(
  bets: readonly BetRecord[],
  options: CategoryStatOptions = {},
): WalletCategoryStat[] {
  let resolved = 0;
  let won = 0;
  const groups = new Map<string, BetRecord[]>();
  for (const bet of bets) {
    if (bet.won !== null) resolved += 1;
    if (bet.won === true) won += 1;
    if (bet.category === null) continue;
    const group = groups.get(bet.category);
    if (group === undefined) groups.set(bet.category, [bet]);
    else group.push(bet);
  }
  const globalWinRate = winRate(won, resolved);
  const stats: WalletCategoryStat[] = [];
  for (const [category, group] of groups) {
    const resolvedBets = group.filter((b) => b.won !== null).length;
    const wins = group.filter((b) => b.won === true).length;
    const rate = winRate(wins, resolvedBets);
    const baseRate = options.baseRates?.get(category)?.baseRate ?? null;
    stats.push({
      category,
      bets: group.length,
      resolvedBets,
      wins,
      winRate: rate,
      edge: rate !== null && globalWinRate !== null ? rate - globalWinRate : null,
      edgeOverBaseRate: rate !== null && baseRate !== null ? rate - baseRate : null,
      pnl: sumPnl(group, options.pnlOfMarket),
      volume: group.reduce((sum, b) => sum + b.volume, 0),
      counterConsensusWins: counterConsensusWins(group),
    });
  }
  return stats.sort(
    (a, b) => b.resolvedBets - a.resolvedBets || (a.category < b.category ? -1 : 1),
  );
}

function sumPnl(group: readonly BetRecord[], pnlOfMarket: CategoryStatOptions["pnlOfMarket"]) {
  if (pnlOfMarket === undefined) return null;
  let total = 0;
  for (const bet of group) {
    const pnl = pnlOfMarket(bet.marketId);
    if (pnl === null) return null;
    total += pnl;
  }
  return total;
}

/** Categories need this many resolved bets before their edge counts toward consistency. */
export const CONSISTENCY_MIN_RESOLVED = 3;

/** Share of qualifying categories with a positive edge; null when no category qualifies. */
export function consistencyShare(stats: readonly WalletCategoryStat[]): number | null {
  const qualifying = stats.filter((s) => s.resolvedBets >= CONSISTENCY_MIN_RESOLVED);
  if (qualifying.length === 0) return null;
  return qualifying.filter((s) => s.edge !== null && s.edge > 0).length / qualifying.length;
}
