/**
 * The history as it stood at a cutoff (docs/methodology.md, "Backtest"): every question here is
 * answered from fills strictly before the cutoff and from resolutions strictly before it, so a
 * bet counts as won or lost only if its market had resolved by then. The product's own pure
 * functions (walletModel, marketModel) are fed these views; nothing here re-states a formula.
 */

import type { Outcome } from "../analytics/fill";
import type { PriceLookup } from "../refresh/prices";
import type { MarketInfo, WalletContext, WalletStatsRow } from "../refresh/wallet-model";
import { walletModel } from "../refresh/wallet-model";
import type { HistoryFill, HistoryMarket } from "./history";

/** One market's fills in (ts, id) order, as columns for binary search. */
interface MarketSeries {
  fills: HistoryFill[];
  ts: Float64Array;
}

/** One wallet's fills in (ts, id) order and the running USD volume before each. */
interface WalletSeries {
  fills: HistoryFill[];
  ts: Float64Array;
  /** volumeBefore[i] = Σ usd of fills[0..i), so volume before a cutoff is one lookup. */
  volumeBefore: Float64Array;
}

/** Index of the first entry of `ts` at or after `cutoff`: the count of entries before it. */
export function countBefore(ts: Float64Array, cutoff: number): number {
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ts[mid] as number) < cutoff) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface HistoryIndex {
  markets: readonly HistoryMarket[];
  market(id: number): HistoryMarket | undefined;
  /** The market's fills before the cutoff, in (ts, id) order. */
  marketFillsBefore(marketId: number, cutoff: number): HistoryFill[];
  /** The wallet's USD volume over its fills before the cutoff. */
  volumeBefore(wallet: string, cutoff: number): number;
  /** The wallet's read-model stats (score, win rates, type) as a refresh at the cutoff saw them. */
  walletAt(wallet: string, cutoff: number): WalletStatsRow;
  /** What the product's wallet model knows of the world at the cutoff. */
  context(cutoff: number): WalletContext;
  fillCount: number;
}

/**
 * Holds every fill in memory, grouped by market and by wallet (about 200 bytes a fill): the
 * backtest asks about thousands of cutoffs, each touching a few hundred wallets' whole records.
 * Wallet strings are interned, so a wallet's address is stored once however many fills it has.
 */
export function indexHistory(
  fills: Iterable<HistoryFill>,
  markets: readonly HistoryMarket[],
): HistoryIndex {
  const byMarket = new Map<number, HistoryFill[]>();
  const byWallet = new Map<string, HistoryFill[]>();
  let fillCount = 0;
  let lastTs = Number.NEGATIVE_INFINITY;
  let lastId = Number.NEGATIVE_INFINITY;
  for (const fill of fills) {
    if (fill.ts < lastTs || (fill.ts === lastTs && fill.id <= lastId)) {
      throw new Error("indexHistory needs fills in (ts, id) order");
    }
    lastTs = fill.ts;
    lastId = fill.id;
    fillCount += 1;
    let mine = byWallet.get(fill.wallet);
    if (mine === undefined) {
      mine = [];
      byWallet.set(fill.wallet, mine);
    } else {
      fill.wallet = (mine[0] as HistoryFill).wallet;
    }
    mine.push(fill);
    let theirs = byMarket.get(fill.marketId);
    if (theirs === undefined) {
      theirs = [];
      byMarket.set(fill.marketId, theirs);
    }
    theirs.push(fill);
  }
  const marketSeries = new Map<number, MarketSeries>();
  for (const [id, list] of byMarket) {
    marketSeries.set(id, { fills: list, ts: Float64Array.from(list, (f) => f.ts) });
  }
  const walletSeries = new Map<string, WalletSeries>();
  for (const [wallet, list] of byWallet) {
    const volumeBefore = new Float64Array(list.length + 1);
    for (let i = 0; i < list.length; i += 1) {
      volumeBefore[i + 1] = (volumeBefore[i] as number) + (list[i] as HistoryFill).usd;
    }
    walletSeries.set(wallet, {
      fills: list,
      ts: Float64Array.from(list, (f) => f.ts),
      volumeBefore,
    });
  }
  const marketById = new Map(markets.map((m) => [m.id, m]));

  /** The cutoff whose wallet models are cached: cutoffs are asked about one after another. */
  let cachedCutoff = Number.NaN;
  let cachedWallets = new Map<string, WalletStatsRow>();
  let cachedContext: WalletContext | null = null;

  function contextAt(cutoff: number): WalletContext {
    const known = new Map<number, MarketInfo>();
    const market = (id: number): MarketInfo | undefined => {
      let info = known.get(id);
      if (info === undefined) {
        const m = marketById.get(id);
        if (m === undefined) return undefined;
        // A resolution counts only once it happened: before the cutoff.
        const resolved = m.resolvedAt !== null && m.resolvedAt < cutoff;
        info = {
          id,
          category: m.category,
          resolvedOutcome: resolved ? m.resolvedOutcome : null,
          resolvedAt: resolved ? m.resolvedAt : null,
          compacted: false,
        };
        known.set(id, info);
      }
      return info;
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

  function pricesAt(cutoff: number): PriceLookup {
    const lastOf = (marketId: number, outcome: Outcome, before: number): number | null => {
      const series = marketSeries.get(marketId);
      if (series === undefined) return null;
      for (let i = countBefore(series.ts, before) - 1; i >= 0; i -= 1) {
        const fill = series.fills[i] as HistoryFill;
        if (fill.outcome === outcome) return fill.price;
      }
      return null;
    };
    return {
      lastPrice: (marketId, outcome) => lastOf(marketId, outcome, cutoff),
      yesPriceAt(marketId, ts) {
        const series = marketSeries.get(marketId);
        if (series === undefined) return null;
        // The last fill at or before ts, and never one at or after the cutoff.
        const end = Math.min(countBefore(series.ts, ts + 1), countBefore(series.ts, cutoff));
        if (end === 0) return null;
        const fill = series.fills[end - 1] as HistoryFill;
        return fill.outcome === "YES" ? fill.price : 1 - fill.price;
      },
    };
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
      const series = marketSeries.get(marketId);
      if (series === undefined) return [];
      return series.fills.slice(0, countBefore(series.ts, cutoff));
    },
    volumeBefore(wallet, cutoff) {
      const series = walletSeries.get(wallet);
      if (series === undefined) return 0;
      return series.volumeBefore[countBefore(series.ts, cutoff)] as number;
    },
    context: at,
    walletAt(wallet, cutoff) {
      at(cutoff);
      let stats = cachedWallets.get(wallet);
      if (stats === undefined) {
        const series = walletSeries.get(wallet);
        const before = series ? series.fills.slice(0, countBefore(series.ts, cutoff)) : [];
        stats = walletModel(wallet, before, cachedContext as WalletContext).stats;
        cachedWallets.set(wallet, stats);
      }
      return stats;
    },
  };
}
