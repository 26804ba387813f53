/**
 * The average-cost PnL ledger (docs/methodology.md, "Profit and loss"), one position per (wallet, market,
 * outcome). It is an accumulator: feed fills in time order and each position keeps five numbers,
 * so the refresh job can stream millions of fills, and persist a position and resume it later.
 */

import type { Fill, Outcome } from "./fill";

/** A share sold that the ledger never saw bought came from a split: 1 USD for a YES and a NO. */
export const SPLIT_PRICE = 0.5;

/** Shares below this are rounding residue of a full exit, not a position. */
const DUST_SHARES = 1e-9;

export interface PositionState {
  shares: number;
  /** What the shares still held cost; average cost = costBasis / shares. */
  costBasis: number;
  realised: number;
  /** Shares sold beyond holdings over the position's life (each counted as bought at 0.50). */
  splitShares: number;
  /** The last price this position traded at: the mark when the caller has no market price. */
  lastPrice: number | null;
  lastTs: number;
}

export function newPosition(): PositionState {
  return {
    shares: 0,
    costBasis: 0,
    realised: 0,
    splitShares: 0,
    lastPrice: null,
    lastTs: Number.NEGATIVE_INFINITY,
  };
}

export function averageCost(pos: PositionState): number | null {
  return pos.shares > 0 ? pos.costBasis / pos.shares : null;
}

/** Applies one fill. Average cost depends on order, so an earlier fill after a later one is a bug. */
export function applyFillToPosition(
  pos: PositionState,
  fill: Pick<Fill, "side" | "price" | "size" | "ts">,
): void {
  if (fill.ts < pos.lastTs) {
    throw new RangeError(`ledger fill at ${fill.ts} arrived after one at ${pos.lastTs}`);
  }
  if (fill.side === "BUY") {
    pos.shares += fill.size;
    pos.costBasis += fill.price * fill.size;
  } else {
    const covered = Math.min(fill.size, pos.shares);
    if (covered > 0) {
      const avg = pos.costBasis / pos.shares;
      pos.realised += (fill.price - avg) * covered;
      pos.costBasis -= avg * covered;
      pos.shares -= covered;
    }
    const beyond = fill.size - covered;
    if (beyond > DUST_SHARES) {
      pos.realised += (fill.price - SPLIT_PRICE) * beyond;
      pos.splitShares += beyond;
    }
    if (pos.shares < DUST_SHARES) {
      pos.shares = 0;
      pos.costBasis = 0;
    }
  }
  pos.lastPrice = fill.price;
  pos.lastTs = fill.ts;
}

/** How the shares still held are valued: settled at 1 or 0, or marked at a price. */
export type PositionValuation =
  | { kind: "resolved"; payout: 0 | 1 }
  | { kind: "open"; markPrice: number | null };

/** The valuation of one outcome's shares given its market's resolution and last trade price. */
export function valuationFor(
  outcome: Outcome,
  resolvedOutcome: Outcome | null,
  lastTradePrice: number | null,
): PositionValuation {
  if (resolvedOutcome !== null)
    return { kind: "resolved", payout: resolvedOutcome === outcome ? 1 : 0 };
  return { kind: "open", markPrice: lastTradePrice };
}

export interface PnlParts {
  realised: number;
  settlement: number;
  mark: number;
  /** realised + settlement + mark */
  total: number;
}

export function valuePosition(pos: PositionState, valuation: PositionValuation): PnlParts {
  let settlement = 0;
  let mark = 0;
  if (pos.shares > 0) {
    if (valuation.kind === "resolved") {
      settlement = valuation.payout * pos.shares - pos.costBasis;
    } else {
      const price = valuation.markPrice ?? pos.lastPrice ?? pos.costBasis / pos.shares;
      mark = price * pos.shares - pos.costBasis;
    }
  }
  return { realised: pos.realised, settlement, mark, total: pos.realised + settlement + mark };
}

export function addPnl(a: PnlParts, b: PnlParts): PnlParts {
  return {
    realised: a.realised + b.realised,
    settlement: a.settlement + b.settlement,
    mark: a.mark + b.mark,
    total: a.total + b.total,
  };
}

export const ZERO_PNL: PnlParts = Object.freeze({ realised: 0, settlement: 0, mark: 0, total: 0 });

export interface LedgerPosition {
  wallet: string;
  marketId: number;
  outcome: Outcome;
  state: PositionState;
}

/** Many positions keyed by (wallet, market, outcome); memory grows with positions, not fills. */
export class PnlLedger {
  /** wallet → (market id × 2 + 0 for YES, 1 for NO) → position: no string building per fill. */
  readonly #byWallet = new Map<string, Map<number, LedgerPosition>>();

  apply(fill: Fill): void {
    let positions = this.#byWallet.get(fill.wallet);
    if (positions === undefined) {
      positions = new Map();
      this.#byWallet.set(fill.wallet, positions);
    }
    const key = fill.marketId * 2 + (fill.outcome === "YES" ? 0 : 1);
    let position = positions.get(key);
    if (position === undefined) {
      position = {
        wallet: fill.wallet,
        marketId: fill.marketId,
        outcome: fill.outcome,
        state: newPosition(),
      };
      positions.set(key, position);
    }
    applyFillToPosition(position.state, fill);
  }

  *positions(): IterableIterator<LedgerPosition> {
    for (const positions of this.#byWallet.values()) yield* positions.values();
  }

  /** Ledger PnL per wallet, each position valued by the caller (resolution or last price). */
  walletPnl(
    valuationOf: (marketId: number, outcome: Outcome) => PositionValuation,
  ): Map<string, PnlParts> {
    const totals = new Map<string, PnlParts>();
    for (const [wallet, positions] of this.#byWallet) {
      let total = ZERO_PNL;
      for (const p of positions.values()) {
        total = addPnl(total, valuePosition(p.state, valuationOf(p.marketId, p.outcome)));
      }
      totals.set(wallet, total);
    }
    return totals;
  }
}
