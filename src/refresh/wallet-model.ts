import {
  addFillToBet,
  type Bet,
  type MarketFacts,
  newBetTally,
  settleBet,
  walletBetStats,
} from "../analytics/bets";
import { walletCategoryStats } from "../analytics/categories";
import { DAY_MS, directionOf, type Fill, type Outcome } from "../analytics/fill";
import { applyFillToPosition, newPosition } from "../analytics/ledger";
import { routePnl } from "../analytics/pnl-source";
import { bayesianWinRate } from "../analytics/rates";
import { type ScoredBet, smartMoneyFacts, smartMoneyScore } from "../analytics/score";
import { favourableMove, storedTiming, timingBucketOf, timingBuckets } from "../analytics/timing";
import { classifyWallet, isMarketMaker, isWhale, type WalletType } from "../analytics/wallet-type";
import { winsZScore } from "../analytics/wins-test";
import type { PriceLookup } from "./prices";
import { type IdTimedTrade, mergeInTimeOrder } from "./sealed-trades";

export interface MarketInfo extends MarketFacts {
  id: number;
  /**
   * Compacted by fill retention (src/refresh/retention.ts): its bets, stats and hours are frozen
   * as they were, and the fills it kept (those a signal names) count in no read model.
   */
  compacted: boolean;
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
  /** Realised PnL minus the cost of the shares still held: the bet's PnL before its mark. */
  pnl_base: number;
  move_24h: number | null;
}

export interface WalletStatsRow {
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
  log10_p_value: number | null;
  z_score: number | null;
  counter_consensus_wins: number;
  smart_money_score: number;
  confidence: number;
  breakdown: string;
  wallet_type: WalletType;
  first_trade_at: number;
  last_trade_at: number;
  refreshed_at: number;
}

export interface WalletCategoryRow {
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
}

/**
 * The fields of a bet that the wallet's model reads (walletFromBets): its PnL, its counts, its
 * score's measures. The incremental refresh reads only these of a wallet's unchanged bets.
 */
export type ModelBetRow = Pick<
  WalletBetRow,
  | "market_id"
  | "category"
  | "entry_price"
  | "won"
  | "volume"
  | "trade_count"
  | "two_sided"
  | "move_24h"
  | "pnl_base"
  | "yes_shares"
  | "no_shares"
  | "first_ts"
  | "last_ts"
>;

export interface WalletModel<Bet extends ModelBetRow = WalletBetRow> {
  stats: WalletStatsRow;
  /** Every bet of the wallet, by market id. */
  bets: Bet[];
  categories: WalletCategoryRow[];
  /** The timing buckets as stored (timingOf), or null when the caller keeps the stored ones. */
  timing: string | null;
}

/** A fill with its trade id, which orders fills of the same moment. */
export type TradeFill = Fill & { id: number };

/**
 * One wallet's read-model rows from its fills, each market's in time order (the PnL ledger
 * depends on it): grouped by market, as the full rebuild reads them, or all in time order. Each
 * market's fills make a bet (betFromFills), the bets make the wallet (walletFromBets).
 * `frozen` are its bets in compacted markets (fill retention), taken as they are, and `sealed`
 * its trades there (sql/0033) for the timing buckets; the fills those markets kept (named by
 * signals) are left out, as their bets are frozen and their trades sealed.
 */
export function walletModel(
  address: string,
  fills: readonly TradeFill[],
  ctx: WalletContext,
  frozen: readonly WalletBetRow[] = [],
  sealed: readonly IdTimedTrade[] = [],
): WalletModel {
  const byMarket = new Map<number, TradeFill[]>();
  const counted: TradeFill[] = [];
  for (const fill of fills) {
    if (ctx.market(fill.marketId)?.compacted) continue;
    counted.push(fill);
    const group = byMarket.get(fill.marketId);
    if (group === undefined) byMarket.set(fill.marketId, [fill]);
    else group.push(fill);
  }
  const bets = [...byMarket].map(([marketId, group]) =>
    betFromFills(address, marketId, group, ctx),
  );
  bets.push(...frozen);
  bets.sort((a, b) => a.market_id - b.market_id);
  const inTimeOrder = counted.sort((a, b) => a.ts - b.ts || a.id - b.id);
  return walletFromBets(address, bets, ctx, { timing: timingOf(inTimeOrder, ctx, sealed) });
}

/**
 * One bet from the wallet's fills in that market, in time order: its tally (side, entry, flows),
 * its two ledger positions reduced to the part of their PnL that no later price can change, and
 * its favourable 24-hour move.
 */
export function betFromFills(
  address: string,
  marketId: number,
  fills: readonly Fill[],
  ctx: WalletContext,
): WalletBetRow {
  const tally = newBetTally(address, marketId);
  const yes = newPosition();
  const no = newPosition();
  for (const fill of fills) {
    addFillToBet(tally, fill);
    applyFillToPosition(fill.outcome === "YES" ? yes : no, fill);
  }
  const bet = settleBet(tally, ctx.market(marketId));
  return {
    market_id: marketId,
    category: bet.category,
    side: bet.side,
    entry_price: bet.entryPrice,
    buy_usd: bet.buyUsd,
    volume: bet.volume,
    yes_flow: bet.yesFlowUsd,
    no_flow: bet.noFlowUsd,
    yes_shares: yes.shares,
    no_shares: no.shares,
    trade_count: bet.fills,
    two_sided: bet.twoSided ? 1 : 0,
    first_ts: bet.firstTs,
    entry_ts: bet.entryTs ?? bet.firstTs,
    last_ts: bet.lastTs,
    resolved: bet.won === null ? 0 : 1,
    won: bet.won === null ? null : bet.won ? 1 : 0,
    // A position with no shares left has no cost left either (the ledger zeroes both).
    pnl_base: yes.realised - yes.costBasis + (no.realised - no.costBasis),
    move_24h: favourableMove(bet.entryPrice, priceAfter24h(bet, ctx)),
  };
}

/**
 * The bet's ledger PnL (docs/methodology.md, Profit and loss: realised + settlement + mark): the shares still held
 * valued at the payout once the market resolved, else at each outcome's last trade price. A
 * wallet holding shares of an outcome bought them in this market, so that outcome has traded.
 */
export function betPnl(
  bet: Pick<ModelBetRow, "pnl_base" | "yes_shares" | "no_shares">,
  resolvedOutcome: Outcome | null,
  lastYes: number | null,
  lastNo: number | null,
): number {
  const yes = resolvedOutcome === null ? (lastYes ?? 0) : resolvedOutcome === "YES" ? 1 : 0;
  const no = resolvedOutcome === null ? (lastNo ?? 0) : resolvedOutcome === "NO" ? 1 : 0;
  return bet.pnl_base + bet.yes_shares * yes + bet.no_shares * no;
}

/** What walletFromBets can take from the caller instead of computing it again. */
export interface KnownWalletFacts {
  /** The timing buckets as stored, from the wallet's fills, or null to keep the stored ones. */
  timing: string | null;
  /** The wins-versus-prices test of these same resolved bets, when they have not changed. */
  winsTest?: { log10PValue: number | null };
}

/**
 * A wallet's stats, score, type and category rows from its bets (by market id), its open
 * positions marked at the current last trade prices: ctx.now is the as-of of its ledger PnL.
 */
export function walletFromBets<Bet extends ModelBetRow>(
  address: string,
  rows: readonly Bet[],
  ctx: WalletContext,
  known: KnownWalletFacts,
): WalletModel<Bet> {
  const { stats, bets, pnls, winRate } = walletStats(address, rows, ctx, known);
  const pnlByMarket = new Map(rows.map((row, i) => [row.market_id, pnls[i] as number]));
  const categories = walletCategoryStats(bets, { pnlOfMarket: (id) => pnlByMarket.get(id) ?? 0 });
  return {
    stats,
    bets: [...rows],
    categories: categories.map((c) => ({
      category: c.category,
      bets: c.bets,
      resolved_bets: c.resolvedBets,
      wins: c.wins,
      win_rate: c.winRate,
      global_win_rate: winRate,
      edge: c.edge,
      pnl: c.pnl ?? 0,
      volume: c.volume,
      counter_consensus_wins: c.counterConsensusWins,
    })),
    timing: known.timing,
  };
}

/**
 * walletFromBets' stats row alone, for a caller that reads nothing else of the model (the
 * backtest asks for a wallet's score at thousands of moments): the same numbers, without the
 * category rows. `scored`, when given, is scoredBet of each row, kept by a caller that asks
 * about the same rows again.
 */
export function walletStatsFromBets(
  address: string,
  rows: readonly ModelBetRow[],
  ctx: WalletContext,
  known: KnownWalletFacts,
  scored?: readonly ScoredBet[],
): WalletStatsRow {
  return walletStats(address, rows, ctx, known, scored).stats;
}

function walletStats(
  address: string,
  rows: readonly ModelBetRow[],
  ctx: WalletContext,
  known: KnownWalletFacts,
  scored?: readonly ScoredBet[],
): {
  stats: WalletStatsRow;
  bets: ScoredBet[];
  /** Each row's ledger PnL, in the rows' order. */
  pnls: number[];
  winRate: number | null;
} {
  const bets: ScoredBet[] = [];
  const pnls: number[] = [];
  let ledgerPnl = 0;
  let firstTrade = Number.POSITIVE_INFINITY;
  let lastTrade = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i] as ModelBetRow;
    const market = ctx.market(row.market_id);
    const resolvedOutcome = market?.resolvedOutcome ?? null;
    const open = resolvedOutcome === null;
    const pnl = betPnl(
      row,
      resolvedOutcome,
      open && row.yes_shares > 0 ? ctx.prices.lastPrice(row.market_id, "YES") : null,
      open && row.no_shares > 0 ? ctx.prices.lastPrice(row.market_id, "NO") : null,
    );
    pnls.push(pnl);
    ledgerPnl += pnl;
    if (row.first_ts < firstTrade) firstTrade = row.first_ts;
    if (row.last_ts > lastTrade) lastTrade = row.last_ts;
    bets.push(scored?.[i] ?? scoredBet(row));
  }

  const totals = walletBetStats(bets);
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
  const facts = smartMoneyFacts(bets, { totalPnl: routed.totalPnl }, known.winsTest);
  const score = smartMoneyScore(facts);
  const priced = bets.filter((b) => b.won !== null && b.entryPrice !== null);
  const prices = priced.map((b) => b.entryPrice!);
  const pricedWins = priced.filter((b) => b.won === true).length;

  return {
    bets,
    pnls,
    winRate: totals.winRate,
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
      // Ledger PnL is as of this computation, when the open positions were marked.
      pnl_as_of: routed.pnlAsOf,
      markets_traded: totals.marketsTraded,
      expected_wins: prices.reduce((a, b) => a + b, 0),
      p_value: facts.log10PValue === null ? null : 10 ** facts.log10PValue,
      log10_p_value: facts.log10PValue,
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
      first_trade_at: rows.length > 0 ? firstTrade : 0,
      last_trade_at: rows.length > 0 ? lastTrade : 0,
      refreshed_at: ctx.now,
    },
  };
}

/** The analytics view of a stored bet: what the counts, the score and the categories read. */
export function scoredBet(row: ModelBetRow): ScoredBet {
  return {
    marketId: row.market_id,
    category: row.category,
    entryPrice: row.entry_price,
    won: row.won === null ? null : row.won === 1,
    volume: row.volume,
    fills: row.trade_count,
    twoSided: row.two_sided === 1,
    move24h: row.move_24h,
  };
}

/**
 * The wallet's timing buckets (its last 500 trades in resolved markets) as stored (storedTiming),
 * from its fills in (time, id) order: that order breaks ties between trades of the same moment.
 */
export function timingOf(
  fills: readonly TradeFill[],
  ctx: WalletContext,
  sealed: readonly IdTimedTrade[] = [],
): string {
  return storedTiming(timingBuckets(mergeInTimeOrder(resolvedTrades(fills, ctx), sealed)));
}

/**
 * The trades among `fills` (in (ts, id) order) in the markets `sealing` that have resolved, for
 * the wallet's sealed trades (sql/0033), whether or not the markets are flagged compacted yet.
 */
export function tradesToSeal(
  fills: readonly TradeFill[],
  ctx: WalletContext,
  sealing: ReadonlySet<number>,
): IdTimedTrade[] {
  return resolvedTrades(
    fills.filter((f) => sealing.has(f.marketId)),
    ctx,
    true,
  );
}

/**
 * The timing buckets of a wallet with no resolved trades (every count 0). Not stored: readers
 * answer it for a wallet without a wallet_timing row, and most wallets have no resolved trade.
 */
export const EMPTY_TIMING = storedTiming(timingBuckets([]));

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

function resolvedTrades(
  fills: readonly TradeFill[],
  ctx: WalletContext,
  evenCompacted = false,
): IdTimedTrade[] {
  const out: IdTimedTrade[] = [];
  for (const fill of fills) {
    const market = ctx.market(fill.marketId);
    // A compacted market's trades are counted from the wallet's sealed trades (sql/0033), its
    // kept fills (named by signals) among them: not from the fills.
    if (!market?.resolvedOutcome || market.resolvedAt === null) continue;
    if (market.compacted && !evenCompacted) continue;
    out.push({
      ts: fill.ts,
      id: fill.id,
      bucket: timingBucketOf(fill.ts, market.resolvedAt),
      won: directionOf(fill) === market.resolvedOutcome,
    });
  }
  return out;
}
