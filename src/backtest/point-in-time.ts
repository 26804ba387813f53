/**
 * The history as it stood at a cutoff (docs/methodology.md, "Backtest"): every question here is
 * answered from fills strictly before the cutoff and from resolutions strictly before it, so a
 * bet counts as won or lost only if its market had resolved by then. The product's own pure
 * functions (betFromFills and walletFromBets' stats, which walletModel is made of, and
 * marketModel) are fed these views; nothing here re-states a formula.
 */

import { DAY_MS, WHALE_VOLUME_USD } from "../analytics/fill";
import type { ScoredBet } from "../analytics/score";
import { walletWinsTest } from "../analytics/wins-test";
import { kindOf, outcomeOfKind, sideOfKind } from "../ingest/fill-codec";
import type { PriceLookup } from "../refresh/prices";
import {
  betFromFills,
  type MarketInfo,
  scoredBet,
  type WalletBetRow,
  type WalletContext,
  type WalletStatsRow,
  walletStatsFromBets,
} from "../refresh/wallet-model";
import type { HistoryFill, HistoryMarket } from "./history";

export interface HistoryIndex {
  markets: readonly HistoryMarket[];
  market(id: number): HistoryMarket | undefined;
  /** The market's fills before the cutoff, in (ts, id) order. */
  marketFillsBefore(marketId: number, cutoff: number): HistoryFill[];
  /**
   * Whether the wallet's USD volume over its fills before the cutoff may exceed the whale line:
   * false means it certainly does not. The sum is kept in stream order, the wallet model's in
   * another, so a caller that needs the exact answer asks walletAt when this says true.
   */
  mayBeWhale(wallet: string, cutoff: number): boolean;
  /**
   * Whether the wallet had a bet in a market resolved before the cutoff. Without one its score's
   * confidence is 0, so MarketAnalysis weighs it at nothing and its model need not be built.
   */
  hasResolvedBet(wallet: string, cutoff: number): boolean;
  /** The wallet's read-model stats (score, win rates, type) as a refresh at the cutoff saw them. */
  walletAt(wallet: string, cutoff: number): WalletStatsRow;
  /** What the product's wallet model knows of the world at the cutoff. */
  context(cutoff: number): WalletContext;
  fillCount: number;
}

/** The bets computed for one wallet at earlier cutoffs. */
interface WalletCache {
  /** By the wallet's bets in market id order (see buildIndex: betStart): undefined until asked. */
  bets: (CachedBet | undefined)[];
  /** The wins-versus-prices test of its resolved bets last computed, and what it was computed from. */
  winsTest: { prices: number[]; wins: boolean[]; log10PValue: number | null } | null;
}

/** Room for two summation orders of the same fills to differ, USD. */
const VOLUME_SLACK_USD = 1;

/** A bet row as computed at an earlier cutoff, with what it was computed from. */
interface CachedBet {
  fills: number;
  resolved: boolean;
  mark: number;
  row: WalletBetRow;
  /** What the wallet's score reads of it (scoredBet). */
  scored: ScoredBet;
  /** The time of the bet's next fill after those it was computed from, +∞ when none. */
  nextTs: number;
}

/**
 * Bets of the cached wallets, counted whether asked about yet or not: about 300 bytes each when
 * computed, so the cache stays near 60 MB. (500,000 takes the large world over the memory cap.)
 */
const MAX_CACHED_BETS = 200_000;

const MARK_PENDING = 0;
const MARK_AT_CUTOFF = 1;
const MARK_PASSED = 2;

/**
 * Where the bet's 24-hour mark (entry + 24 h, the timing signal's price) stands at the cutoff:
 * still ahead, exactly at it (its price then leaves out fills at the cutoff, so the row is not
 * reused), or passed (its price is fixed by fills well before the cutoff).
 */
function markState(row: WalletBetRow, cutoff: number): number {
  const mark = row.entry_ts + DAY_MS;
  return mark > cutoff ? MARK_PENDING : mark === cutoff ? MARK_AT_CUTOFF : MARK_PASSED;
}

/** Growable columns of fills, in stream order until laid out by market: 41 bytes a fill. */
class FillColumns {
  length = 0;
  ts: Float64Array;
  price: Float64Array;
  size: Float64Array;
  usd: Float64Array;
  wallet: Int32Array;
  market: Int32Array;
  /** Bit 0: outcome NO; bit 1: side SELL. */
  kind: Uint8Array;

  constructor(capacity: number) {
    this.ts = new Float64Array(capacity);
    this.price = new Float64Array(capacity);
    this.size = new Float64Array(capacity);
    this.usd = new Float64Array(capacity);
    this.wallet = new Int32Array(capacity);
    this.market = new Int32Array(capacity);
    this.kind = new Uint8Array(capacity);
  }

  push(
    wallet: number,
    marketId: number,
    kind: number,
    price: number,
    size: number,
    usd: number,
    ts: number,
  ): void {
    if (this.length === this.ts.length) this.grow(Math.max(1024, this.length * 2));
    const i = this.length;
    this.ts[i] = ts;
    this.price[i] = price;
    this.size[i] = size;
    this.usd[i] = usd;
    this.wallet[i] = wallet;
    this.market[i] = marketId;
    this.kind[i] = kind;
    this.length += 1;
  }

  /**
   * Lays the fills out market by market (markets 0..markets-1), each market's in their present
   * order, and moves `pointers` (positions of fills) with them: the start of each market's run.
   */
  sortByMarket(markets: number, pointers: Int32Array): Int32Array {
    const n = this.length;
    let place: Int32Array;
    let start: Int32Array;
    {
      const grouped = groupBy(this.market, markets, n);
      start = grouped.start;
      // Where each fill goes: place[i] = its new position.
      place = new Int32Array(n);
      for (let k = 0; k < n; k += 1) place[grouped.order[k] as number] = k;
    }
    // In place, cycle by cycle: no second copy of the columns.
    const { ts, price, size, usd, wallet, market, kind } = this;
    const done = new Uint8Array(n);
    for (let first = 0; first < n; first += 1) {
      if (done[first] === 1) continue;
      // Carry the fill at `first` to its place, pick up the one there, and so on round the cycle.
      let cTs = ts[first] as number;
      let cPrice = price[first] as number;
      let cSize = size[first] as number;
      let cUsd = usd[first] as number;
      let cWallet = wallet[first] as number;
      let cMarket = market[first] as number;
      let cKind = kind[first] as number;
      let j = place[first] as number;
      for (;;) {
        const t = ts[j] as number;
        ts[j] = cTs;
        cTs = t;
        const p = price[j] as number;
        price[j] = cPrice;
        cPrice = p;
        const z = size[j] as number;
        size[j] = cSize;
        cSize = z;
        const u = usd[j] as number;
        usd[j] = cUsd;
        cUsd = u;
        const w = wallet[j] as number;
        wallet[j] = cWallet;
        cWallet = w;
        const m = market[j] as number;
        market[j] = cMarket;
        cMarket = m;
        const k = kind[j] as number;
        kind[j] = cKind;
        cKind = k;
        done[j] = 1;
        if (j === first) break;
        j = place[j] as number;
      }
    }
    for (let k = 0; k < pointers.length; k += 1)
      pointers[k] = place[pointers[k] as number] as number;
    return start;
  }

  private grow(capacity: number): void {
    const grow = <T extends Float64Array | Int32Array | Uint8Array>(
      a: T,
      make: (n: number) => T,
    ) => {
      const b = make(capacity);
      b.set(a);
      return b;
    };
    this.ts = grow(this.ts, (n) => new Float64Array(n));
    this.price = grow(this.price, (n) => new Float64Array(n));
    this.size = grow(this.size, (n) => new Float64Array(n));
    this.usd = grow(this.usd, (n) => new Float64Array(n));
    this.wallet = grow(this.wallet, (n) => new Int32Array(n));
    this.market = grow(this.market, (n) => new Int32Array(n));
    this.kind = grow(this.kind, (n) => new Uint8Array(n));
  }
}

/** Fills grouped by a key (market or wallet), each group in stream order, as offsets into one array. */
interface Groups {
  /** Group g's fills are order[start[g] .. start[g + 1]). */
  start: Int32Array;
  order: Int32Array;
}

function groupBy(keys: Int32Array, groups: number, length: number): Groups {
  const start = new Int32Array(groups + 1);
  for (let i = 0; i < length; i += 1) {
    const g = (keys[i] as number) + 1;
    start[g] = (start[g] as number) + 1;
  }
  for (let g = 0; g < groups; g += 1)
    start[g + 1] = (start[g + 1] as number) + (start[g] as number);
  const next = start.slice(0, groups);
  const order = new Int32Array(length);
  for (let i = 0; i < length; i += 1) {
    const at = (next[keys[i] as number] as number)++;
    order[at] = i;
  }
  return { start, order };
}

/**
 * Where the history's fills go, one at a time in (ts, id) order: a fill's wallet is first made a
 * number (once per wallet), so a reader that has numbered its wallets itself (history.ts
 * readFills) never makes a string per fill.
 */
export interface FillSink {
  /** The wallet's number in this index, given at its first sight. */
  wallet(address: string): number;
  /** kind: bit 0 outcome NO, bit 1 side SELL (the fills table's own encoding). */
  push(
    id: number,
    wallet: number,
    marketId: number,
    kind: number,
    price: number,
    size: number,
    usd: number,
    ts: number,
  ): void;
}

/** One fill, as the history's reader gives it, into the sink. */
export function pushFill(sink: FillSink, fill: HistoryFill): void {
  sink.push(
    fill.id,
    sink.wallet(fill.wallet),
    fill.marketId,
    kindOf(fill.outcome, fill.side),
    fill.price,
    fill.size,
    fill.usd,
    fill.ts,
  );
}

/** Every fill, oldest first, into the index (indexHistory). */
export function indexHistory(
  fills: Iterable<HistoryFill>,
  markets: readonly HistoryMarket[],
  expectedFills = 0,
): HistoryIndex {
  return buildIndex(
    (sink) => {
      for (const fill of fills) pushFill(sink, fill);
    },
    markets,
    expectedFills,
  );
}

/**
 * Holds every fill in memory as columns (about 45 bytes a fill with the wallets' grouping: 450 MB
 * for 10M fills), laid out market by market and grouped by wallet: the backtest asks about
 * thousands of cutoffs, each touching a few hundred wallets' whole records. `read` gives it the
 * fills in (ts, id) order, and every list of fills it answers with (a market's, a wallet's bet's)
 * keeps that order. The fills a question needs are made into objects only while it is answered;
 * a fill's id here is its place in the columns.
 */
export function buildIndex(
  read: (sink: FillSink) => void,
  markets: readonly HistoryMarket[],
  expectedFills = 0,
): HistoryIndex {
  const columns = new FillColumns(expectedFills);
  const walletIds = new Map<string, number>();
  const wallets: string[] = [];
  let lastTs = Number.NEGATIVE_INFINITY;
  let lastId = Number.NEGATIVE_INFINITY;
  let maxMarket = 0;
  read({
    wallet(address) {
      let wallet = walletIds.get(address);
      if (wallet === undefined) {
        wallet = wallets.length;
        wallets.push(address);
        walletIds.set(address, wallet);
      }
      return wallet;
    },
    push(id, wallet, marketId, kind, price, size, usd, ts) {
      if (ts < lastTs || (ts === lastTs && id <= lastId)) {
        throw new Error("indexHistory needs fills in (ts, id) order");
      }
      lastTs = ts;
      lastId = id;
      if (marketId > maxMarket) maxMarket = marketId;
      columns.push(wallet, marketId, kind, price, size, usd, ts);
    },
  });
  const fillCount = columns.length;
  const byWallet = groupBy(columns.wallet, wallets.length, fillCount);
  // One number per wallet instead of a running sum per fill: when its volume in stream order
  // first passed the whale line (less a dollar of slack for the other summation order), or +∞.
  const volumeThreshold = WHALE_VOLUME_USD - VOLUME_SLACK_USD;
  const passedAt = new Float64Array(wallets.length).fill(Number.POSITIVE_INFINITY);
  for (let w = 0; w < wallets.length; w += 1) {
    let sum = 0;
    for (let k = byWallet.start[w] as number; k < (byWallet.start[w + 1] as number); k += 1) {
      const i = byWallet.order[k] as number;
      sum += columns.usd[i] as number;
      if (sum > volumeThreshold) {
        passedAt[w] = columns.ts[i] as number;
        break;
      }
    }
  }

  // A wallet has a resolved bet at c when one of its fills (ts < c) is in a market resolved
  // before c: when min over its fills of max(fill ts, market's resolution) < c.
  const marketById = new Map(markets.map((m) => [m.id, m]));
  const resolvedBetFrom = new Float64Array(wallets.length).fill(Number.POSITIVE_INFINITY);
  for (let i = 0; i < fillCount; i += 1) {
    const resolvedAt = marketById.get(columns.market[i] as number)?.resolvedAt ?? null;
    if (resolvedAt === null) continue;
    const from = Math.max(columns.ts[i] as number, resolvedAt);
    const w = columns.wallet[i] as number;
    if (from < (resolvedBetFrom[w] as number)) resolvedBetFrom[w] = from;
  }

  // The columns are then laid out market by market, each market's fills in stream order: a
  // market's fills before a cutoff are one contiguous run, found by a binary search over its
  // own stretch of ts, and the wallets' groups point at the fills' new places.
  const marketStart = columns.sortByMarket(maxMarket + 1, byWallet.order);
  // Each wallet's fills, by place in the columns, are then its bets one after another in market
  // id order, each bet's fills in stream order: its bets are runs, bet b's fills at
  // byWallet.order[betStart[b] .. betStart[b + 1]), wallet w's bets walletBets[w] .. [w + 1).
  const walletBets = new Int32Array(wallets.length + 1);
  let betCount = 0;
  for (let w = 0; w < wallets.length; w += 1) {
    const from = byWallet.start[w] as number;
    const to = byWallet.start[w + 1] as number;
    const run = byWallet.order.subarray(from, to).sort();
    for (let k = 0; k < run.length; k += 1) {
      if (k === 0 || columns.market[run[k] as number] !== columns.market[run[k - 1] as number])
        betCount += 1;
    }
    walletBets[w + 1] = betCount;
  }
  const betStart = new Int32Array(betCount + 1);
  {
    let b = 0;
    for (let k = 0; k < fillCount; k += 1) {
      const i = byWallet.order[k] as number;
      const previous = k === 0 ? -1 : (byWallet.order[k - 1] as number);
      if (
        k === 0 ||
        columns.wallet[i] !== columns.wallet[previous] ||
        columns.market[i] !== columns.market[previous]
      ) {
        betStart[b] = k;
        b += 1;
      }
    }
    betStart[betCount] = fillCount;
  }
  const fillOrder = byWallet.order;

  const fillAt = (i: number): HistoryFill => {
    const kind = columns.kind[i] as number;
    return {
      id: i,
      wallet: wallets[columns.wallet[i] as number] as string,
      marketId: columns.market[i] as number,
      outcome: outcomeOfKind(kind),
      side: sideOfKind(kind),
      price: columns.price[i] as number,
      size: columns.size[i] as number,
      usd: columns.usd[i] as number,
      ts: columns.ts[i] as number,
    };
  };
  /** The end of the market's run of fills before the cutoff (binary search over its ts). */
  const marketEndBefore = (marketId: number, cutoff: number): number => {
    let lo = marketStart[marketId] as number;
    let hi = marketStart[marketId + 1] as number;
    const ts = columns.ts;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((ts[mid] as number) < cutoff) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const inMarkets = (id: number) => Number.isInteger(id) && id >= 0 && id <= maxMarket;
  /** The cutoff whose wallet models are cached: cutoffs are asked about one after another. */
  let cachedCutoff = Number.NaN;
  let cachedWallets = new Map<string, WalletStatsRow>();
  let cachedContext: WalletContext | null = null;

  // Each market as the wallet model sees it, before and after its resolution: made once, by
  // market id (ids are small integers: an array, not a map).
  interface MarketViews {
    resolvedAt: number | null;
    open: MarketInfo;
    resolved: MarketInfo;
  }
  const marketViews: (MarketViews | undefined)[] = [];
  for (const m of markets) {
    if (!Number.isInteger(m.id) || m.id < 0) continue;
    const open = {
      id: m.id,
      category: m.category,
      resolvedOutcome: null,
      resolvedAt: null,
      compacted: false,
    };
    const resolved = { ...open, resolvedOutcome: m.resolvedOutcome, resolvedAt: m.resolvedAt };
    marketViews[m.id] = { resolvedAt: m.resolvedAt, open, resolved };
  }

  function contextAt(cutoff: number): WalletContext {
    const market = (id: number): MarketInfo | undefined => {
      const views = marketViews[id];
      if (views === undefined) return undefined;
      // A resolution counts only once it happened: before the cutoff.
      return views.resolvedAt !== null && views.resolvedAt < cutoff ? views.resolved : views.open;
    };
    return {
      now: cutoff,
      market,
      prices: pricesAt(cutoff),
      // Imported platform PnL, insider signals and investigations are not kept with their dates
      // as of every past moment, so the backtest leaves them out rather than let them leak.
      platform: () => undefined,
      maxInsiderScore: () => null,
      inOpenInvestigation: () => false,
    };
  }

  /**
   * Each outcome's last price at the cutoff being asked about, by market id × 2 + (NO ? 1 : 0):
   * the open bets of every wallet modelled at one cutoff are marked at the same few prices.
   * lastPriceAt[k] holds for the cutoff numbered lastPriceOf[k] (NaN: no trade).
   */
  const lastPriceAt = new Float64Array(2 * (maxMarket + 1));
  const lastPriceOf = new Int32Array(2 * (maxMarket + 1)).fill(-1);
  let cutoffNumber = -1;

  function pricesAt(cutoff: number): PriceLookup {
    cutoffNumber += 1;
    const number = cutoffNumber;
    return {
      lastPrice(marketId, outcome) {
        if (!inMarkets(marketId)) return null;
        const want = outcome === "NO" ? 1 : 0;
        const key = 2 * marketId + want;
        if (lastPriceOf[key] === number) {
          const known = lastPriceAt[key] as number;
          return Number.isNaN(known) ? null : known;
        }
        const from = marketStart[marketId] as number;
        let found: number | null = null;
        for (let i = marketEndBefore(marketId, cutoff) - 1; i >= from; i -= 1) {
          if (((columns.kind[i] as number) & 1) === want) {
            found = columns.price[i] as number;
            break;
          }
        }
        lastPriceOf[key] = number;
        lastPriceAt[key] = found ?? Number.NaN;
        return found;
      },
      yesPriceAt(marketId, ts) {
        if (!inMarkets(marketId)) return null;
        // The last fill at or before ts, and never one at or after the cutoff.
        const i = marketEndBefore(marketId, Math.min(ts + 1, cutoff)) - 1;
        if (i < (marketStart[marketId] as number)) return null;
        const price = columns.price[i] as number;
        return (columns.kind[i] as number) & 1 ? 1 - price : price;
      },
    };
  }

  /**
   * Bets computed at earlier cutoffs, by wallet (least recently used first) and market. A bet
   * row depends on the cutoff only through its fills before it, whether its market had resolved
   * and whether its 24-hour mark had passed: while those three are the same, the row is the
   * same, as the incremental refresh keeps a stored bet that got no new fills.
   */
  const betCache = new Map<number, WalletCache>();
  let cachedBets = 0;

  /**
   * The wallet model (walletModel in src/refresh/wallet-model.ts) at the cutoff: a bet per market
   * from its fills before the cutoff, then the wallet from its bets, by market id. A bet's row is
   * reused from an earlier cutoff while its fills, resolution and 24-hour mark are unchanged.
   */
  function walletStatsAt(wallet: string, cutoff: number, ctx: WalletContext): WalletStatsRow {
    const w = walletIds.get(wallet);
    if (w === undefined) return walletStatsFromBets(wallet, [], ctx, { timing: null });
    const first = walletBets[w] as number;
    const last = walletBets[w + 1] as number;
    let cache = betCache.get(w);
    if (cache !== undefined) betCache.delete(w);
    else {
      cache = { bets: new Array(last - first), winsTest: null };
      cachedBets += last - first;
    }
    betCache.set(w, cache);
    const ts = columns.ts;
    const rows: WalletBetRow[] = [];
    const scored: ScoredBet[] = [];
    for (let b = first; b < last; b += 1) {
      const from = betStart[b] as number;
      const end = betStart[b + 1] as number;
      const hit = cache.bets[b - first];
      let fills: number;
      if (hit !== undefined && hit.row.last_ts < cutoff && hit.nextTs >= cutoff) {
        // The fills it was computed from are before the cutoff, the next one is not.
        fills = hit.fills;
      } else {
        // The bet's fills before the cutoff: a prefix of its run (binary search by time).
        let lo = from;
        let hi = end;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if ((ts[fillOrder[mid] as number] as number) < cutoff) lo = mid + 1;
          else hi = mid;
        }
        fills = lo - from;
        if (fills === 0) continue;
      }
      const m =
        hit !== undefined
          ? hit.row.market_id
          : (columns.market[fillOrder[from] as number] as number);
      const resolved = ctx.market(m)?.resolvedOutcome != null;
      if (
        hit !== undefined &&
        hit.fills === fills &&
        hit.resolved === resolved &&
        hit.mark !== MARK_AT_CUTOFF &&
        markState(hit.row, cutoff) === hit.mark
      ) {
        rows.push(hit.row);
        scored.push(hit.scored);
        continue;
      }
      const row = betFromFills(wallet, m, scratchFills(from, fills), ctx);
      const next =
        from + fills < end ? (ts[fillOrder[from + fills] as number] as number) : Infinity;
      const bet = {
        fills,
        resolved,
        mark: markState(row, cutoff),
        row,
        scored: scoredBet(row),
        nextTs: next,
      };
      cache.bets[b - first] = bet;
      rows.push(row);
      scored.push(bet.scored);
    }
    const winsTest = winsTestOf(cache, rows);
    // Bounded: the least recently asked-about wallets' bets go first.
    if (cachedBets > MAX_CACHED_BETS) {
      for (const [oldest, old] of betCache) {
        if (cachedBets <= MAX_CACHED_BETS || oldest === w) break;
        cachedBets -= old.bets.length;
        betCache.delete(oldest);
      }
    }
    // The timing buckets are not part of the stats: null keeps them out of the computation.
    return walletStatsFromBets(wallet, rows, ctx, { timing: null, winsTest }, scored);
  }

  /**
   * The bet's first `count` fills (from byWallet.order[from]), as objects reused from one bet to the next: betFromFills
   * folds them into its tallies and keeps none of them.
   */
  const scratch: HistoryFill[] = [];
  const scratchView: HistoryFill[] = [];
  function scratchFills(from: number, count: number): readonly HistoryFill[] {
    while (scratch.length < count) scratch.push(fillAt(0));
    scratchView.length = count;
    for (let k = 0; k < count; k += 1) {
      const i = fillOrder[from + k] as number;
      const fill = scratch[k] as HistoryFill;
      const kind = columns.kind[i] as number;
      fill.id = i;
      fill.wallet = wallets[columns.wallet[i] as number] as string;
      fill.marketId = columns.market[i] as number;
      fill.outcome = outcomeOfKind(kind);
      fill.side = sideOfKind(kind);
      fill.price = columns.price[i] as number;
      fill.size = columns.size[i] as number;
      fill.usd = columns.usd[i] as number;
      fill.ts = columns.ts[i] as number;
      scratchView[k] = fill;
    }
    return scratchView;
  }

  /**
   * The wins-versus-prices test of the wallet's resolved bets with an entry price, in market id
   * order (as the wallet model runs it: walletWinsTest), computed again only when that list of
   * prices and outcomes changed: the exact test is quadratic in resolved bets, and most cutoffs
   * resolve none of a wallet's markets.
   */
  function winsTestOf(
    cache: WalletCache,
    rows: readonly WalletBetRow[],
  ): { log10PValue: number | null } {
    const last = cache.winsTest;
    if (last !== null) {
      // Compared in place: a new list is made only when it changed.
      let k = 0;
      let same = true;
      for (const row of rows) {
        if (row.won === null || row.entry_price === null) continue;
        if (
          k >= last.prices.length ||
          !Object.is(last.prices[k], row.entry_price) ||
          last.wins[k] !== (row.won === 1)
        ) {
          same = false;
          break;
        }
        k += 1;
      }
      if (same && k === last.prices.length) return last;
    }
    const prices: number[] = [];
    const wins: boolean[] = [];
    for (const row of rows) {
      if (row.won === null || row.entry_price === null) continue;
      prices.push(row.entry_price);
      wins.push(row.won === 1);
    }
    const log10PValue =
      prices.length === 0
        ? null
        : walletWinsTest(prices.map((entryPrice, k) => ({ entryPrice, won: wins[k] as boolean })))
            .log10PValue;
    cache.winsTest = { prices, wins, log10PValue };
    return cache.winsTest;
  }

  function at(cutoff: number): WalletContext {
    if (cutoff !== cachedCutoff) {
      cachedCutoff = cutoff;
      cachedWallets = new Map();
      cachedContext = contextAt(cutoff);
    }
    return cachedContext as WalletContext;
  }

  return {
    markets,
    market: (id) => marketById.get(id),
    fillCount,
    marketFillsBefore(marketId, cutoff) {
      if (!inMarkets(marketId)) return [];
      const from = marketStart[marketId] as number;
      const out = new Array<HistoryFill>(marketEndBefore(marketId, cutoff) - from);
      for (let k = 0; k < out.length; k += 1) out[k] = fillAt(from + k);
      return out;
    },
    hasResolvedBet(wallet, cutoff) {
      const w = walletIds.get(wallet);
      return w !== undefined && (resolvedBetFrom[w] as number) < cutoff;
    },
    mayBeWhale(wallet, cutoff) {
      const w = walletIds.get(wallet);
      return w !== undefined && (passedAt[w] as number) < cutoff;
    },
    context: at,
    walletAt(wallet, cutoff) {
      const ctx = at(cutoff);
      let stats = cachedWallets.get(wallet);
      if (stats === undefined) {
        stats = walletStatsAt(wallet, cutoff, ctx);
        cachedWallets.set(wallet, stats);
      }
      return stats;
    },
  };
}
