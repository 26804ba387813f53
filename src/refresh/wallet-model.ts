import {
  addFillToBet,
  type Bet,
  type BetTally,
  type MarketFacts,
  newBetTally,
  settleBet,
  walletBetStats,
} from "../analytics/bets";
import { walletCategoryStats } from "../analytics/categories";
import { DAY_MS, type Fill, type Outcome } from "../analytics/fill";
import {
  applyFillToPosition,
  newPosition,
  type PositionState,
  valuationFor,
  valuePosition,
} from "../analytics/ledger";
import { routePnl } from "../analytics/pnl-source";
import { bayesianWinRate } from "../analytics/rates";
import { type ScoredBet, smartMoneyFacts, smartMoneyScore } from "../analytics/score";
import { type ResolvedTrade, timingBuckets } from "../analytics/timing";
import { classifyWallet, isMarketMaker, isWhale, type WalletType } from "../analytics/wallet-type";
import { winsZScore } from "../analytics/wins-test";
import type { PriceLookup } from "./prices";

export interface MarketInfo extends MarketFacts {
  id: number;
}

/** Everything about the world a wallet's model needs beyond its own fills. */
export interface WalletContext {
  now: number;
  market(id: number): MarketInfo | undefined;
  prices: PriceLookup;
  platform(
    address: string,
  ): { name: string | null; pnl: number | null; asOf: number | null } | undefined;
  /** Highest insider signal score the wallet drew, or null. */
  maxInsiderScore(address: string): number | null;
  inOpenInvestigation(address: string): boolean;
}

export interface WalletBetRow {
  market_id: number;
  category: string | null;
  side: Outcome;
  entry_price: number | null;
  buy_usd: number;
  volume: number;
  yes_flow: number;
  no_flow: number;
  yes_shares: number;
  no_shares: number;
  trade_count: number;
  two_sided: number;
  first_ts: number;
  entry_ts: number;
  last_ts: number;
  resolved: number;
  won: number | null;
  pnl: number;
  move_24h: number | null;
}

export interface WalletModel {
  stats: {
    address: string;
    platform_name: string | null;
    trade_count: number;
    total_bets: number;
    resolved_bets: number;
    wins: number;
    win_rate: number | null;
    bayesian_win_rate: number | null;
    total_volume: number;
    ledger_pnl: number;
    total_pnl: number | null;
    pnl_source: string;
    pnl_as_of: number | null;
    markets_traded: number;
    expected_wins: number;
    p_value: number | null;
    z_score: number | null;
    counter_consensus_wins: number;
    smart_money_score: number;
    confidence: number;
    breakdown: string;
    wallet_type: WalletType;
    first_trade_at: number;
    last_trade_at: number;
  };
  bets: WalletBetRow[];
  categories: {
    category: string;
    bets: number;
    resolved_bets: number;
    wins: number;
    win_rate: number | null;
    global_win_rate: number | null;
    edge: number | null;
    pnl: number;
    volume: number;
    counter_consensus_wins: number;
  }[];
  timing: string;
}

/**
 * One wallet's read-model rows from its fills, which must come in time order (the PnL ledger
 * depends on it). Ledger PnL is stored with a null as-of: it is exact as of the latest refresh,
 * which the read layer supplies, so an incremental refresh need not touch unchanged wallets.
 */
export function walletModel(
  address: string,
  fills: readonly Fill[],
  ctx: WalletContext,
): WalletModel {
  const tallies = new Map<number, BetTally>();
  const positions = new Map<number, PositionState>();
  for (const fill of fills) {
    let tally = tallies.get(fill.marketId);
    if (!tally) {
      tally = newBetTally(address, fill.marketId);
      tallies.set(fill.marketId, tally);
    }
    addFillToBet(tally, fill);
    const key = fill.marketId * 2 + (fill.outcome === "YES" ? 0 : 1);
    let position = positions.get(key);
    if (!position) {
      position = newPosition();
      positions.set(key, position);
    }
    applyFillToPosition(position, fill);
  }

  const pnlByMarket = new Map<number, number>();
  const sharesByMarket = new Map<number, [number, number]>();
  for (const [key, position] of positions) {
    const marketId = Math.floor(key / 2);
    const outcome: Outcome = key % 2 === 0 ? "YES" : "NO";
    const market = ctx.market(marketId);
    const valuation = valuationFor(
      outcome,
      market?.resolvedOutcome ?? null,
      ctx.prices.lastPrice(marketId, outcome),
    );
    pnlByMarket.set(
      marketId,
      (pnlByMarket.get(marketId) ?? 0) + valuePosition(position, valuation).total,
    );
    const shares = sharesByMarket.get(marketId) ?? [0, 0];
    shares[outcome === "YES" ? 0 : 1] = position.shares;
    sharesByMarket.set(marketId, shares);
  }

  const bets: ScoredBet[] = [];
  for (const tally of tallies.values()) {
    const bet: ScoredBet = settleBet(tally, ctx.market(tally.marketId));
    bet.priceAfter24h = priceAfter24h(bet, ctx);
    bets.push(bet);
  }
  bets.sort((a, b) => a.marketId - b.marketId);

  const totals = walletBetStats(bets);
  const ledgerPnl = [...pnlByMarket.values()].reduce((a, b) => a + b, 0);
  const marketMaker = isMarketMaker(totals);
  const platform = ctx.platform(address);
  const routed = routePnl({
    platformPnl: platform?.pnl ?? null,
    platformPnlAsOf: platform?.asOf ?? null,
    isMarketMaker: marketMaker,
    isWhale: isWhale(totals.totalVolume),
    ledgerPnl,
    refreshedAt: ctx.now,
  });
  const facts = smartMoneyFacts(bets, { totalPnl: routed.totalPnl });
  const score = smartMoneyScore(facts);
  const priced = bets.filter((b) => b.won !== null && b.entryPrice !== null);
  const prices = priced.map((b) => b.entryPrice!);
  const pricedWins = priced.filter((b) => b.won === true).length;
  const categories = walletCategoryStats(bets, { pnlOfMarket: (id) => pnlByMarket.get(id) ?? 0 });

  return {
    stats: {
      address,
      platform_name: platform?.name ?? null,
      trade_count: totals.tradeCount,
      total_bets: totals.totalBets,
      resolved_bets: totals.resolvedBets,
      wins: totals.wins,
      win_rate: totals.winRate,
      bayesian_win_rate: bayesianWinRate(totals.wins, totals.resolvedBets),
      total_volume: totals.totalVolume,
      ledger_pnl: ledgerPnl,
      total_pnl: routed.totalPnl,
      pnl_source: routed.pnlSource,
      // Ledger figures are as of the latest refresh: the read layer fills that in.
      pnl_as_of: routed.pnlSource === "ledger" ? null : routed.pnlAsOf,
      markets_traded: totals.marketsTraded,
      expected_wins: prices.reduce((a, b) => a + b, 0),
      p_value: facts.log10PValue === null ? null : 10 ** facts.log10PValue,
      z_score: winsZScore(prices, pricedWins),
      counter_consensus_wins: facts.counterConsensusWins,
      smart_money_score: score.score,
      confidence: score.confidence,
      breakdown: JSON.stringify(score.breakdown),
      wallet_type: classifyWallet({
        tradeCount: totals.tradeCount,
        marketsTraded: totals.marketsTraded,
        twoSidedMarkets: totals.twoSidedMarkets,
        inOpenInvestigation: ctx.inOpenInvestigation(address),
        maxInsiderScore: ctx.maxInsiderScore(address),
        totalVolume: totals.totalVolume,
        smartMoneyScore: score.score,
        confidence: score.confidence,
      }),
      first_trade_at: fills[0]?.ts ?? 0,
      last_trade_at: fills.at(-1)?.ts ?? 0,
    },
    bets: bets.map((bet) => betRow(bet, pnlByMarket, sharesByMarket)),
    categories: categories.map((c) => ({
      category: c.category,
      bets: c.bets,
      resolved_bets: c.resolvedBets,
      wins: c.wins,
      win_rate: c.winRate,
      global_win_rate: totals.winRate,
      edge: c.edge,
      pnl: c.pnl ?? 0,
      volume: c.volume,
      counter_consensus_wins: c.counterConsensusWins,
    })),
    timing: JSON.stringify(
      timingBuckets(resolvedTrades(fills, ctx)).map((b) => ({
        label: b.label,
        count: b.count,
        win_rate: b.winRate,
      })),
    ),
  };
}

/**
 * The price of the bet's side 24 h after entry: the payout when the market resolved sooner, the
 * last trade at or before entry + 24 h otherwise, and unknown while those 24 h have not passed.
 */
function priceAfter24h(bet: Bet, ctx: WalletContext): number | null {
  const entry = bet.entryTs ?? bet.firstTs;
  const at = entry + DAY_MS;
  if (bet.resolvedAt !== null && bet.resolvedAt <= at) return bet.won ? 1 : 0;
  if (at > ctx.now) return null;
  const yes = ctx.prices.yesPriceAt(bet.marketId, at);
  if (yes === null) return null;
  return bet.side === "YES" ? yes : 1 - yes;
}

function resolvedTrades(fills: readonly Fill[], ctx: WalletContext): ResolvedTrade[] {
  const out: ResolvedTrade[] = [];
  for (const fill of fills) {
    const market = ctx.market(fill.marketId);
    if (!market?.resolvedOutcome || market.resolvedAt === null) continue;
    out.push({
      outcome: fill.outcome,
      side: fill.side,
      ts: fill.ts,
      resolvedOutcome: market.resolvedOutcome,
      resolvedAt: market.resolvedAt,
    });
  }
  return out;
}

function betRow(
  bet: ScoredBet,
  pnlByMarket: Map<number, number>,
  sharesByMarket: Map<number, [number, number]>,
): WalletBetRow {
  const shares = sharesByMarket.get(bet.marketId) ?? [0, 0];
  return {
    market_id: bet.marketId,
    category: bet.category,
    side: bet.side,
    entry_price: bet.entryPrice,
    buy_usd: bet.buyUsd,
    volume: bet.volume,
    yes_flow: bet.yesFlowUsd,
    no_flow: bet.noFlowUsd,
    yes_shares: shares[0],
    no_shares: shares[1],
    trade_count: bet.fills,
    two_sided: bet.twoSided ? 1 : 0,
    first_ts: bet.firstTs,
    entry_ts: bet.entryTs ?? bet.firstTs,
    last_ts: bet.lastTs,
    resolved: bet.won === null ? 0 : 1,
    won: bet.won === null ? null : bet.won ? 1 : 0,
    pnl: pnlByMarket.get(bet.marketId) ?? 0,
    move_24h:
      bet.priceAfter24h === null || bet.priceAfter24h === undefined || bet.entryPrice === null
        ? null
        : bet.priceAfter24h - bet.entryPrice,
  };
}
