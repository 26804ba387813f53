/**
 * The probabilities the product serves, computed for one market at one cutoff from the history
 * before it (docs/methodology.md, "Backtest"): the same functions the refresh and the API call,
 * fed point-in-time inputs.
 */

import { WHALE_VOLUME_USD } from "../analytics/fill";
import { heldPosition, type MarketPosition, smartMoneyProbability } from "../analytics/sentiment";
import { ANALYSIS_POSITIONS_PER_SIDE } from "../read/market-analysis";
import { currentPriceOf, marketModel, type WalletStanding } from "../refresh/market-model";
import { betFromFills } from "../refresh/wallet-model";
import type { HistoryFill } from "./history";
import type { HistoryIndex } from "./point-in-time";

export interface MarketForecast {
  /** The market's price at the cutoff: its last YES trade before it, else 1 − its last NO trade. */
  price: number | null;
  /** GET /v1/signals/market's smart_money_probability.yes_implied_prob. */
  yesImpliedProb: number | null;
  /** Whale wallets holding a positive net position behind yesImpliedProb. */
  impliedWallets: number;
  /** /v1/analyze's smart_money_prob. */
  smartMoneyProb: number | null;
  sampleWallets: number;
}

/**
 * The market's price at the cutoff, as the market model computes it (its last YES trade before
 * the cutoff, else 1 − its last NO trade): cheap, so a forecast outside the band costs nothing.
 */
export function priceAt(index: HistoryIndex, marketId: number, cutoff: number): number | null {
  const prices = index.context(cutoff).prices;
  return currentPriceOf(prices.lastPrice(marketId, "YES"), prices.lastPrice(marketId, "NO"));
}

/**
 * The market's forecasts at `cutoff`. Reads nothing at or after the cutoff: the market's fills
 * before it, and every wallet's record as a refresh at the cutoff would have computed it.
 */
export function forecastAt(index: HistoryIndex, marketId: number, cutoff: number): MarketForecast {
  const fills = index.marketFillsBefore(marketId, cutoff);
  // The refresh's standing: whales (and insiders, which the backtest cannot date: see
  // point-in-time.ts) weighted by their Bayesian win rate; everyone else does not count.
  const standings = new Map<string, WalletStanding | undefined>();
  const standing = (wallet: string): WalletStanding | undefined => {
    if (standings.has(wallet)) return standings.get(wallet);
    let found: WalletStanding | undefined;
    if (index.mayBeWhale(wallet, cutoff)) {
      const stats = index.walletAt(wallet, cutoff);
      // The wallet model's own volume decides, as the refresh's standing does.
      if (stats.total_volume > WHALE_VOLUME_USD || stats.wallet_type === "insider")
        found = {
          bayesianWinRate: stats.bayesian_win_rate,
          whale: stats.total_volume > WHALE_VOLUME_USD,
          insider: stats.wallet_type === "insider",
        };
    }
    standings.set(wallet, found);
    return found;
  };
  const { stats } = marketModel(fills, cutoff, standing);
  const smart = smartMoneyAt(index, marketId, cutoff, fills);
  return {
    price: stats.last_yes_price,
    yesImpliedProb: stats.yes_implied_prob,
    impliedWallets: stats.implied_wallets ?? 0,
    smartMoneyProb: smart.probability,
    sampleWallets: smart.sampleWallets,
  };
}

/**
 * MarketAnalysis's share at the cutoff: the ANALYSIS_POSITIONS_PER_SIDE largest holders of each
 * side by BUY USD (then address, as the API's query orders them), each position at the cost of
 * what it still holds, weighted by the holder's score × confidence at the cutoff.
 */
function smartMoneyAt(
  index: HistoryIndex,
  marketId: number,
  cutoff: number,
  fills: readonly HistoryFill[],
) {
  const byWallet = new Map<string, HistoryFill[]>();
  for (const fill of fills) {
    const mine = byWallet.get(fill.wallet);
    if (mine === undefined) byWallet.set(fill.wallet, [fill]);
    else mine.push(fill);
  }
  const ctx = index.context(cutoff);
  const bets = [...byWallet].map(([wallet, mine]) => betFromFills(wallet, marketId, mine, ctx));
  const wallets = [...byWallet.keys()];
  const positions: MarketPosition[] = [];
  /** Holders whose position holds something at cost: the others count for nothing. */
  const holding = new Set<string>();
  for (const side of ["YES", "NO"] as const) {
    const holders = bets
      .map((bet, i) => ({ bet, wallet: wallets[i] as string }))
      .filter((h) => h.bet.side === side)
      .sort((a, b) => b.bet.buy_usd - a.bet.buy_usd || (a.wallet < b.wallet ? -1 : 1))
      .slice(0, ANALYSIS_POSITIONS_PER_SIDE);
    for (const { bet, wallet } of holders) {
      const position = heldPosition({
        wallet,
        side: bet.side,
        entryPrice: bet.entry_price,
        yesShares: bet.yes_shares,
        noShares: bet.no_shares,
        volume: bet.volume,
        trades: bet.trade_count,
      });
      positions.push(position);
      if (Math.max(0, position.netYesUsd) + Math.max(0, position.netNoUsd) > 0) holding.add(wallet);
    }
  }
  return smartMoneyProbability(positions, (wallet) => {
    // Nothing resolved, confidence 0: weighed at nothing, as smartMoneyProbability would. A
    // position holding nothing at cost adds nothing to the share whatever its weight.
    if (!holding.has(wallet) || !index.hasResolvedBet(wallet, cutoff)) return null;
    const stats = index.walletAt(wallet, cutoff);
    return { score: stats.smart_money_score, confidence: stats.confidence };
  });
}
