/**
 * A wallet's PnL over time, replayed from its fills by the ledger's rules (docs/methodology.md,
 * The ledger): an average-cost position per market and outcome; a sell realises (price − average
 * cost) × shares, shares sold beyond the holding count as bought at 0.50; at resolution the
 * shares left settle at 1 or 0. Between fills, open positions are marked at the last price the
 * wallet traded that outcome at; the last point marks them as the API does, at the outcome's last
 * trade price in the market, so it lands on the ledger's total_pnl. Pure (no DOM): the tests run
 * it on the methodology's worked example.
 */
export type Outcome = "YES" | "NO";

export interface LedgerFill {
  market: string;
  outcome: Outcome;
  side: "BUY" | "SELL";
  price: number;
  size: number;
  /** Unix milliseconds. */
  ts: number;
}

export interface MarketEnd {
  resolvedOutcome: Outcome | null;
  /** Unix milliseconds; null while open. */
  resolvedAt: number | null;
  /** Each outcome's last trade price in the market: the marks of open positions at the end. */
  lastTrade: Record<Outcome, number | null>;
}

export interface PnlSeries {
  /** Unix milliseconds, ascending. */
  at: number[];
  pnl: number[];
}

/** The split rule's price: shares sold that the fills never showed bought. */
const SPLIT_PRICE = 0.5;

interface Position {
  shares: number;
  cost: number;
  lastPrice: number;
  settled: boolean;
}

export function pnlOverTime(
  fills: readonly LedgerFill[],
  markets: ReadonlyMap<string, MarketEnd>,
  now: number,
): PnlSeries {
  const ordered = [...fills].sort((a, b) => a.ts - b.ts);
  const positions = new Map<string, Position>();
  const keyOf = (market: string, outcome: Outcome) => `${market}\u0000${outcome}`;
  let realised = 0;
  // Resolutions inside the fills' span, in time order, interleaved with the fills.
  const resolutions = [...markets.entries()]
    .filter(([, m]) => m.resolvedAt !== null && m.resolvedOutcome !== null && m.resolvedAt <= now)
    .sort((a, b) => (a[1].resolvedAt ?? 0) - (b[1].resolvedAt ?? 0));
  const series: PnlSeries = { at: [], pnl: [] };

  const settle = (market: string, end: MarketEnd) => {
    for (const outcome of ["YES", "NO"] as const) {
      const position = positions.get(keyOf(market, outcome));
      if (!position || position.settled) continue;
      const payout = outcome === end.resolvedOutcome ? 1 : 0;
      realised += payout * position.shares - position.cost;
      position.shares = 0;
      position.cost = 0;
      position.settled = true;
    }
  };
  const marked = () => {
    let open = 0;
    for (const position of positions.values()) {
      if (!position.settled) open += position.lastPrice * position.shares - position.cost;
    }
    return realised + open;
  };
  const point = (at: number, pnl: number) => {
    series.at.push(at);
    series.pnl.push(Math.round(pnl * 100) / 100);
  };

  let r = 0;
  for (const fill of ordered) {
    while (r < resolutions.length && (resolutions[r]?.[1].resolvedAt ?? 0) < fill.ts) {
      const [market, end] = resolutions[r++] as [string, MarketEnd];
      settle(market, end);
      point(end.resolvedAt ?? fill.ts, marked());
    }
    const key = keyOf(fill.market, fill.outcome);
    const position = positions.get(key) ?? {
      shares: 0,
      cost: 0,
      lastPrice: fill.price,
      settled: false,
    };
    positions.set(key, position);
    position.lastPrice = fill.price;
    if (fill.side === "BUY") {
      position.shares += fill.size;
      position.cost += fill.price * fill.size;
    } else {
      const held = Math.min(fill.size, position.shares);
      const beyond = fill.size - held;
      if (held > 0) {
        const average = position.cost / position.shares;
        realised += (fill.price - average) * held;
        position.cost -= average * held;
        position.shares -= held;
      }
      if (beyond > 0) realised += (fill.price - SPLIT_PRICE) * beyond;
    }
    point(fill.ts, marked());
  }
  while (r < resolutions.length) {
    const [market, end] = resolutions[r++] as [string, MarketEnd];
    settle(market, end);
    point(end.resolvedAt ?? now, marked());
  }
  // The end: open positions at the outcome's last trade price in the market, as the API marks.
  for (const [key, position] of positions) {
    if (position.settled) continue;
    const [market, outcome] = key.split("\u0000") as [string, Outcome];
    const last = markets.get(market)?.lastTrade[outcome];
    if (last !== null && last !== undefined) position.lastPrice = last;
  }
  if (ordered.length > 0) point(Math.max(now, series.at[series.at.length - 1] ?? now), marked());
  return series;
}
