/**
 * Bets: a wallet's position in one market, folded from its fills (docs/methodology.md, "Bets").
 * A tally keeps a fixed handful of numbers per (wallet, market), so the refresh job
 * can stream fills in any order without holding them.
 */

import { directionOf, type Fill, type Outcome } from "./fill";
import { bayesianWinRate, winRate } from "./rates";

interface OutcomeTally {
  buyUsd: number;
  sellUsd: number;
  buyShares: number;
  /** Σ price × size over BUYs: with buyShares, the share-weighted (VWAP) BUY price. */
  buyNotional: number;
  sellShares: number;
  sellNotional: number;
  firstBuyTs: number | null;
  firstSellTs: number | null;
}

export interface BetTally {
  wallet: string;
  marketId: number;
  yes: OutcomeTally;
  no: OutcomeTally;
  fills: number;
  volume: number;
  /** Earliest fill seen and the outcome it bet on: breaks a tie between equal net buys. */
  firstTs: number;
  firstDirection: Outcome;
  lastTs: number;
}

/** What a bet needs to know about its market. */
export interface MarketFacts {
  category: string | null;
  resolvedOutcome: Outcome | null;
  resolvedAt: number | null;
}

export interface Bet {
  wallet: string;
  marketId: number;
  category: string | null;
  /** The outcome with the larger net BUY USD (buys minus sells). */
  side: Outcome;
  /** VWAP of the BUYs on `side`; null only when the wallet never took that side at a price. */
  entryPrice: number | null;
  /** First BUY on `side` (or first SELL of the other outcome when it never bought `side`). */
  entryTs: number | null;
  /** BUY USD on `side`. */
  buyUsd: number;
  /** BUY USD minus SELL USD on `side`. */
  netBuyUsd: number;
  /** BUY YES + SELL NO and BUY NO + SELL YES, USD. */
  yesFlowUsd: number;
  noFlowUsd: number;
  volume: number;
  fills: number;
  /** Bet on both outcomes (YES direction and NO direction): a market maker's footprint. */
  twoSided: boolean;
  firstTs: number;
  lastTs: number;
  resolvedOutcome: Outcome | null;
  resolvedAt: number | null;
  won: boolean | null;
  hoursBeforeResolution: number | null;
}

function emptyOutcomeTally(): OutcomeTally {
  return {
    buyUsd: 0,
    sellUsd: 0,
    buyShares: 0,
    buyNotional: 0,
    sellShares: 0,
    sellNotional: 0,
    firstBuyTs: null,
    firstSellTs: null,
  };
}

export function newBetTally(wallet: string, marketId: number): BetTally {
  return {
    wallet,
    marketId,
    yes: emptyOutcomeTally(),
    no: emptyOutcomeTally(),
    fills: 0,
    volume: 0,
    firstTs: Number.POSITIVE_INFINITY,
    firstDirection: "YES",
    lastTs: Number.NEGATIVE_INFINITY,
  };
}

const earlier = (a: number | null, b: number): number => (a === null || b < a ? b : a);

/** Adds one fill to its (wallet, market) tally. Order of fills does not matter. */
export function addFillToBet(tally: BetTally, fill: Fill): void {
  const t = fill.outcome === "YES" ? tally.yes : tally.no;
  if (fill.side === "BUY") {
    t.buyUsd += fill.usd;
    t.buyShares += fill.size;
    t.buyNotional += fill.price * fill.size;
    t.firstBuyTs = earlier(t.firstBuyTs, fill.ts);
  } else {
    t.sellUsd += fill.usd;
    t.sellShares += fill.size;
    t.sellNotional += fill.price * fill.size;
    t.firstSellTs = earlier(t.firstSellTs, fill.ts);
  }
  tally.fills += 1;
  tally.volume += fill.usd;
  if (fill.ts < tally.firstTs) {
    tally.firstTs = fill.ts;
    tally.firstDirection = directionOf(fill);
  }
  if (fill.ts > tally.lastTs) tally.lastTs = fill.ts;
}

function sideOf(tally: BetTally): Outcome {
  const netYes = tally.yes.buyUsd - tally.yes.sellUsd;
  const netNo = tally.no.buyUsd - tally.no.sellUsd;
  if (netYes !== netNo) return netYes > netNo ? "YES" : "NO";
  return tally.firstDirection;
}

/**
 * Entry price on `side`: the VWAP of its BUYs. A wallet that only ever sold the other outcome
 * (it split and sold one leg) holds `side` at 1 − the price it sold the other leg for.
 */
function entryOf(side: OutcomeTally, other: OutcomeTally): { price: number; ts: number } | null {
  if (side.buyShares > 0 && side.firstBuyTs !== null) {
    return { price: side.buyNotional / side.buyShares, ts: side.firstBuyTs };
  }
  if (other.sellShares > 0 && other.firstSellTs !== null) {
    return { price: 1 - other.sellNotional / other.sellShares, ts: other.firstSellTs };
  }
  return null;
}

/** Turns a finished tally into a bet, judged against what is known about its market. */
export function settleBet(tally: BetTally, market: MarketFacts | undefined): Bet {
  const side = sideOf(tally);
  const [mine, theirs] = side === "YES" ? [tally.yes, tally.no] : [tally.no, tally.yes];
  const entry = entryOf(mine, theirs);
  const resolvedOutcome = market?.resolvedOutcome ?? null;
  const resolvedAt = market?.resolvedAt ?? null;
  const yesFlowUsd = tally.yes.buyUsd + tally.no.sellUsd;
  const noFlowUsd = tally.no.buyUsd + tally.yes.sellUsd;
  return {
    wallet: tally.wallet,
    marketId: tally.marketId,
    category: market?.category ?? null,
    side,
    entryPrice: entry?.price ?? null,
    entryTs: entry?.ts ?? null,
    buyUsd: mine.buyUsd,
    netBuyUsd: mine.buyUsd - mine.sellUsd,
    yesFlowUsd,
    noFlowUsd,
    volume: tally.volume,
    fills: tally.fills,
    twoSided: yesFlowUsd > 0 && noFlowUsd > 0,
    firstTs: tally.firstTs,
    lastTs: tally.lastTs,
    resolvedOutcome,
    resolvedAt,
    won: resolvedOutcome === null ? null : resolvedOutcome === side,
    hoursBeforeResolution:
      resolvedAt !== null && entry !== null ? (resolvedAt - entry.ts) / 3_600_000 : null,
  };
}

/** Groups fills by (wallet, market) and settles each group. Fills may come in any order. */
export function betsFromFills(
  fills: Iterable<Fill>,
  marketOf: (marketId: number) => MarketFacts | undefined,
): Bet[] {
  const tallies = new Map<string, BetTally>();
  for (const fill of fills) {
    const key = `${fill.wallet}\u0000${fill.marketId}`;
    let tally = tallies.get(key);
    if (tally === undefined) {
      tally = newBetTally(fill.wallet, fill.marketId);
      tallies.set(key, tally);
    }
    addFillToBet(tally, fill);
  }
  return [...tallies.values()].map((t) => settleBet(t, marketOf(t.marketId)));
}

/** What a wallet's counts, score and categories read of each bet (all a stored bet keeps). */
export type BetRecord = Pick<
  Bet,
  "marketId" | "category" | "entryPrice" | "won" | "volume" | "fills" | "twoSided"
>;

export interface WalletBetStats {
  totalBets: number;
  resolvedBets: number;
  wins: number;
  winRate: number | null;
  bayesianWinRate: number | null;
  marketsTraded: number;
  totalVolume: number;
  tradeCount: number;
  twoSidedMarkets: number;
}

/** The WalletStats counts for one wallet's bets (total_bets = markets traded). */
export function walletBetStats(bets: readonly BetRecord[]): WalletBetStats {
  let resolvedBets = 0;
  let wins = 0;
  let totalVolume = 0;
  let tradeCount = 0;
  let twoSidedMarkets = 0;
  for (const bet of bets) {
    if (bet.won !== null) resolvedBets += 1;
    if (bet.won === true) wins += 1;
    totalVolume += bet.volume;
    tradeCount += bet.fills;
    if (bet.twoSided) twoSidedMarkets += 1;
  }
  return {
    totalBets: bets.length,
    resolvedBets,
    wins,
    winRate: winRate(wins, resolvedBets),
    bayesianWinRate: bayesianWinRate(wins, resolvedBets),
    marketsTraded: bets.length,
    totalVolume,
    tradeCount,
    twoSidedMarkets,
  };
}
