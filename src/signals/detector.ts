import { DAY_MS, HOUR_MS } from "../analytics/fill";
import { explainInsiderSignal, type InsiderFacts, insiderScore } from "../analytics/insider";
import { fallbackScore } from "../analytics/score";
import { explainWhaleSignal, whaleSignalScore } from "../analytics/whale";
import type { Db } from "../db/open";
import { decodedSql } from "../ingest/fill-codec";
import type { IngestHooks, Trade } from "../ingest/ingest";
import type { NewSignal } from "../webhooks/outbox";
import { createFundingFacts, type FundingFacts } from "./funding-facts";

const WINDOW_MS = 30 * DAY_MS;
const FRESH_MS = 7 * DAY_MS;
const INSIDER_FIRES_AT = 65;

export interface DetectorOptions {
  /** A trade of at least this much USD fires a whale signal. */
  whaleMinUsd: number;
  /** Writes the signal and its deliveries; runs inside the ingest transaction. */
  enqueue(signal: NewSignal): void;
}

/** Ascending ts with running USD sums, for "volume in (t − 30 d, t]" by two binary searches. */
interface VolumeWindow {
  ts: number[];
  cumulative: number[];
}

function upperBound(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Sizes of one market's fills, sorted, and the sizes stored since they were sorted. */
interface MarketSizes {
  sorted: number[];
  pending: number[];
}

/**
 * One market's stored fills with `after < ts <= until`, in (ts, id) order (what a window
 * query returns), and the fills stored since then in that range, not merged yet.
 */
interface MarketFills {
  after: number;
  until: number;
  ts: number[];
  id: number[];
  usd: number[];
  pending: { ts: number; id: number; usd: number }[];
}

/** What a detector keeps between calls of one scope. */
interface Cache {
  funding: FundingFacts;
  sizes: Map<number, MarketSizes>;
  fills: Map<number, MarketFills>;
  /** True in a scope: a market's fills are read up to the end of time, once. */
  open: boolean;
  /** Values held in `sizes` and `fills`; past HELD_MAX both are dropped and read again on need. */
  held: number;
}

/** About 100 MB of cached sizes and fills (a few numbers each). */
const HELD_MAX = 4_000_000;
/** How much further back than asked a market's cached fills are extended when they must be. */
const LOOK_BACK_MS = DAY_MS;

/**
 * The detector as the ingest path calls it: `onNewTrades` alone reads everything afresh for
 * each call; `scope()` gives hooks whose caches last as long as the caller's transaction (an
 * import file), told of every write in it that could change what they cached.
 */
export interface SignalDetector extends IngestHooks {
  onNewTrades(trades: readonly Trade[]): void;
  scope(): IngestHooks;
}

/**
 * Whale and insider detection on every new trade (docs/methodology.md, Signals), called by the ingest
 * path inside the transaction that stored the trades, so a signal and its outbox rows commit
 * with them. Facts are read as of the trade: the market's 30-day volume up to it, the wallet's
 * prior trades and funding before it.
 *
 * An import streams millions of trades through here, so the insider score is first bounded from
 * the cheap facts (counting the timing cluster and concentration at their maximum) and the two
 * costly facts are only read when that bound can still reach the firing threshold. The cheap
 * facts (funding, the market's sizes for a whale's percentile) are cached for the scope: read
 * once per import file, not once per batch, and kept exact by the ingest path's reports of new
 * transfers, labels and trades.
 */
export function createSignalDetector(db: Db, options: DetectorOptions): SignalDetector {
  const w = db.writer;
  const fundingScope = createFundingFacts(db);
  // A market's fills straight from `fills` (the trades view would also join every fill's
  // wallet address, which these do not need), decoded as the view decodes them.
  const marketFills = w
    .prepare<[number, number, number], [number, number, number]>(
      `SELECT ts, id, ${decodedSql("usd_value")} FROM fills INDEXED BY fills_by_market
        WHERE market_id = +? AND ts > +? AND ts <= +? ORDER BY ts, id`,
    )
    .raw();
  const marketSizes = w
    .prepare(
      `SELECT ${decodedSql("usd_value")} AS usd FROM fills INDEXED BY fills_by_market
        WHERE market_id = ? ORDER BY usd`,
    )
    .pluck();
  const walletRow = w.prepare<[string], { score: number; type: string | null }>(
    "SELECT smart_money_score AS score, wallet_type AS type FROM wallet_stats WHERE address = ?",
  );
  // Straight from `fills` by the wallet's id, not through the `trades` view: the same rows (an
  // address has one id, and none when it has no fills), and a count does not depend on their
  // order. Through the view it cost 26 µs of CPU a call, 6 µs this way (5,000 wallets of the
  // medium world, warm); in a bulk import it was 3.7% of the profile.
  const priorTrades = w.prepare<[string, number, number, number], { n: number }>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM fills INDEXED BY fills_by_wallet
      WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?)
        AND (ts < ? OR (ts = ? AND id < ?)) LIMIT 20)`,
  );
  const walletVolumes = w.prepare<
    [number, string, number, number, number],
    { total: number | null; here: number | null }
  >(
    `SELECT sum(usd_value) AS total, sum(CASE WHEN market_id = ? THEN usd_value END) AS here
       FROM trades WHERE wallet = +? AND (ts < +? OR (ts = +? AND id <= +?))`,
  );
  // Fill retention (sql/0023) deletes a compacted market's fills but those signals name, and
  // keeps its bets frozen in wallet_bets: a wallet's prior trades and volume add its frozen bets
  // and take off the kept fills, which the stored fills already count. A frozen bet counts whole
  // when it began before the trade: compacted markets closed long before any new fill.
  const frozenBefore = w.prepare<
    [string, number],
    { trades: number | null; volume: number | null }
  >(
    `SELECT sum(b.trade_count) AS trades, sum(b.volume) AS volume
       FROM wallet_bets b JOIN markets m ON m.id = b.market_id
      WHERE b.wallet_id = (SELECT id FROM wallet_ids WHERE address = ?) AND b.first_ts < ?
        AND m.compacted_at IS NOT NULL`,
  );
  const keptBefore = w.prepare<[string, number], { n: number; usd: number | null }>(
    `SELECT count(*) AS n, sum(t.usd_value) AS usd FROM trades t JOIN markets m ON m.id = t.market_id
      WHERE t.wallet = ? AND t.ts < ? AND m.compacted_at IS NOT NULL`,
  );
  /** The wallet's trades and USD before `ts` in compacted markets, beyond the fills stored. */
  const compactedBefore = (wallet: string, ts: number) => {
    const frozen = frozenBefore.get(wallet, ts);
    if (!frozen?.trades) return { trades: 0, usd: 0 };
    const kept = keptBefore.get(wallet, ts);
    return {
      trades: frozen.trades - (kept?.n ?? 0),
      usd: (frozen.volume ?? 0) - (kept?.usd ?? 0),
    };
  };
  const recentBuyers = w.prepare<
    [number, string, number, number, string],
    { wallet: string; ts: number }
  >(
    `SELECT DISTINCT wallet, ts FROM trades WHERE market_id = +? AND outcome = +? AND side = 'BUY'
      AND ts >= +? AND ts < +? AND wallet <> +?`,
  );

  /** Sorted sizes of a market's stored fills: read once per scope, then kept up to date. */
  const sizesOf = (cache: Cache, marketId: number): number[] => {
    let entry = cache.sizes.get(marketId);
    if (!entry) {
      entry = { sorted: marketSizes.all(marketId) as number[], pending: [] };
      cache.sizes.set(marketId, entry);
      cache.held += entry.sorted.length;
    } else if (entry.pending.length > 0) {
      mergeSorted(
        entry.sorted,
        entry.pending.sort((a, b) => a - b),
      );
      entry.pending = [];
    }
    return entry.sorted;
  };

  /**
   * The market's fills with `from < ts <= to`, as the window query returns them: from the
   * cache when it covers the range (read again, wider, when it does not).
   */
  const fillsIn = (cache: Cache, marketId: number, from: number, to: number) => {
    let entry = cache.fills.get(marketId);
    if (entry && entry.after > from && entry.until >= to) {
      // Only older fills are missing, as when a file's lines are out of time order: read just
      // those, and LOOK_BACK_MS more for the batches to come, and put them in front (each sorts
      // before every cached one). Reading the whole range again each time the window's start
      // moved back took a shuffled import of 1M fills from 42k to 30k fills a second.
      if (entry.pending.length > 0) mergePending(entry);
      const after = from - LOOK_BACK_MS;
      const rows = marketFills.all(marketId, after, entry.after);
      entry.ts = rows.map((r) => r[0]).concat(entry.ts);
      entry.id = rows.map((r) => r[1]).concat(entry.id);
      entry.usd = rows.map((r) => r[2]).concat(entry.usd);
      entry.after = after;
      cache.held += rows.length * 3;
    } else if (!entry || entry.after > from || entry.until < to) {
      const after = Math.min(from, entry?.after ?? from);
      const until = cache.open ? Number.POSITIVE_INFINITY : Math.max(to, entry?.until ?? to);
      const rows = marketFills.all(marketId, after, until);
      entry = {
        after,
        until,
        ts: rows.map((r) => r[0]),
        id: rows.map((r) => r[1]),
        usd: rows.map((r) => r[2]),
        pending: [],
      };
      cache.fills.set(marketId, entry);
      cache.held += rows.length * 3;
    } else if (entry.pending.length > 0) {
      mergePending(entry);
    }
    return { entry, start: upperBound(entry.ts, from), end: upperBound(entry.ts, to) };
  };

  const remember = (cache: Cache, trades: readonly Trade[]) => {
    for (const t of trades) {
      const sizes = cache.sizes.get(t.market_id);
      if (sizes) {
        sizes.pending.push(t.usd_value);
        cache.held += 1;
      }
      const fills = cache.fills.get(t.market_id);
      if (fills && t.ts > fills.after && t.ts <= fills.until) {
        fills.pending.push({ ts: t.ts, id: t.id, usd: t.usd_value });
        cache.held += 3;
      }
    }
    if (cache.held > HELD_MAX) {
      cache.sizes.clear();
      cache.fills.clear();
      cache.held = 0;
    }
  };

  const detect = (trades: readonly Trade[], cache: Cache): void => {
    if (trades.length === 0) return;
    const { funding } = cache;
    // This batch is stored: it counts in every trade's facts, as a query would see it.
    remember(cache, trades);
    const windows = new Map<number, VolumeWindow>();
    const span = new Map<number, [number, number]>();
    for (const t of trades) {
      const s = span.get(t.market_id);
      span.set(t.market_id, s ? [Math.min(s[0], t.ts), Math.max(s[1], t.ts)] : [t.ts, t.ts]);
    }
    const marketVolume = (marketId: number, ts: number) => {
      let window = windows.get(marketId);
      if (!window) {
        // The batch's span of this market, as one window query: the same rows, summed in the
        // same order, so the figures are the same to the last bit.
        const [from, to] = span.get(marketId)!;
        const { entry, start, end } = fillsIn(cache, marketId, from - WINDOW_MS, to);
        let sum = 0;
        const cumulative = new Array<number>(end - start);
        for (let i = start; i < end; i++) cumulative[i - start] = sum += entry.usd[i]!;
        window = { ts: entry.ts.slice(start, end), cumulative };
        windows.set(marketId, window);
      }
      const end = upperBound(window.ts, ts);
      const start = upperBound(window.ts, ts - WINDOW_MS);
      const at = (i: number) => (i > 0 ? window.cumulative[i - 1]! : 0);
      return at(end) - at(start);
    };
    /** First funding as known at `ts`: a transfer dated after the trade does not count. */
    const fundedBy = (wallet: string, ts: number) => {
      const funded = funding.firstFundedAt(wallet);
      return funded !== null && funded <= ts ? funded : null;
    };
    const isFresh = (wallet: string, ts: number) => {
      const funded = fundedBy(wallet, ts);
      return funded !== null && ts - funded < FRESH_MS;
    };

    for (const trade of trades) {
      if (trade.usd_value >= options.whaleMinUsd) {
        const wallet = walletRow.get(trade.wallet);
        const all = sizesOf(cache, trade.market_id);
        const percentile = all.length > 0 ? upperBound(all, trade.usd_value) / all.length : 1;
        const smartMoneyScore = wallet?.score ?? fallbackScore(0, 0).score;
        const score = whaleSignalScore(smartMoneyScore, percentile);
        const facts = {
          side: trade.side,
          outcome: trade.outcome,
          price: trade.price,
          usd: trade.usd_value,
          smartMoneyScore,
          sizePercentile: percentile,
        };
        options.enqueue(
          signalOf(trade, "whale", score, explainWhaleSignal(facts, score), wallet?.type),
        );
      }

      // First a bound from the facts that cost nothing or are cached per batch: the market's
      // 30-day volume counts as tiny (full size and niche points), the wallet as having no
      // prior trades, and the timing cluster and concentration at their maximum. Most trades
      // cannot reach the threshold even so, and need no further reads.
      const cluster = funding.cluster(trade.wallet);
      const facts: InsiderFacts = {
        side: trade.side,
        outcome: trade.outcome,
        price: trade.price,
        usd: trade.usd_value,
        tradeTs: trade.ts,
        marketVolumeUsd: trade.usd_value,
        clusterSize: cluster.size,
        freshSameSideWallets: 3,
        firstFundedAt: fundedBy(trade.wallet, trade.ts),
        priorTrades: 0,
        walletVolumeUsd: 1,
        walletMarketVolumeUsd: 1,
        clusterResolvedBets: cluster.resolvedBets,
        clusterWins: cluster.wins,
        clusterUnderInvestigation: cluster.underInvestigation,
      };
      if (insiderScore(facts).score < INSIDER_FIRES_AT) continue;
      facts.marketVolumeUsd = marketVolume(trade.market_id, trade.ts);
      facts.priorTrades = priorTrades.get(trade.wallet, trade.ts, trade.ts, trade.id)?.n ?? 0;
      // The stored count stops at 20; below that, trades of compacted markets count too.
      const compacted = facts.priorTrades < 20 ? compactedBefore(trade.wallet, trade.ts) : null;
      if (compacted) facts.priorTrades = Math.min(20, facts.priorTrades + compacted.trades);
      if (insiderScore(facts).score < INSIDER_FIRES_AT) continue;
      const volumes = walletVolumes.get(
        trade.market_id,
        trade.wallet,
        trade.ts,
        trade.ts,
        trade.id,
      );
      facts.walletVolumeUsd =
        (volumes?.total ?? trade.usd_value) +
        (compacted ?? compactedBefore(trade.wallet, trade.ts)).usd;
      facts.walletMarketVolumeUsd = volumes?.here ?? trade.usd_value;
      facts.freshSameSideWallets = new Set(
        recentBuyers
          .all(trade.market_id, directionOutcome(trade), trade.ts - HOUR_MS, trade.ts, trade.wallet)
          .filter((r) => isFresh(r.wallet, r.ts))
          .map((r) => r.wallet),
      ).size;
      const result = insiderScore(facts);
      if (!result.fires) continue;
      const wallet = walletRow.get(trade.wallet);
      options.enqueue(
        signalOf(trade, "insider", result.score, explainInsiderSignal(facts, result), wallet?.type),
      );
    }
  };

  const newCache = (open: boolean): Cache => ({
    funding: fundingScope(),
    sizes: new Map(),
    fills: new Map(),
    open,
    held: 0,
  });

  return {
    onNewTrades: (trades) => detect(trades, newCache(false)),
    scope() {
      const cache = newCache(true);
      const { funding } = cache;
      return {
        onNewTrades: (trades) => detect(trades, cache),
        onNewTransfers: (transfers) => funding.transfersStored(transfers),
        onLabelChanged: (address) => funding.labelChanged(address),
      };
    },
  };
}

/**
 * Merges the fills stored since the entry was read into its (ts, id) order, in place: from the
 * back, into the arrays grown by the pending count. A new array per merge left the old one
 * behind as garbage, a whole market's fills for every batch that looked at the market, and
 * that churn is what grew the heap of a large import.
 */
function mergePending(entry: MarketFills): void {
  const add = entry.pending.sort((a, b) => a.ts - b.ts || a.id - b.id);
  const { ts, id, usd } = entry;
  let i = ts.length - 1;
  for (let n = 0; n < add.length; n++) {
    ts.push(0);
    id.push(0);
    usd.push(0);
  }
  let k = ts.length - 1;
  // Ids are unique, so no old fill and new fill are equal in (ts, id).
  for (let j = add.length - 1; j >= 0; k--) {
    const row = add[j]!;
    if (i >= 0 && (ts[i]! > row.ts || (ts[i] === row.ts && id[i]! > row.id))) {
      ts[k] = ts[i]!;
      id[k] = id[i]!;
      usd[k] = usd[i--]!;
    } else {
      ts[k] = row.ts;
      id[k] = row.id;
      usd[k] = row.usd;
      j--;
    }
  }
  entry.pending = [];
}

/** Merges ascending `add` into ascending `sorted`, in place (see mergePending). */
function mergeSorted(sorted: number[], add: readonly number[]): void {
  let i = sorted.length - 1;
  for (let n = 0; n < add.length; n++) sorted.push(0);
  let k = sorted.length - 1;
  for (let j = add.length - 1; j >= 0; k--) {
    if (i >= 0 && sorted[i]! > add[j]!) sorted[k] = sorted[i--]!;
    else sorted[k] = add[j--]!;
  }
}

/** The outcome a BUY of this trade's direction would have bought (docs/methodology.md, Signals: same side). */
function directionOutcome(trade: Trade): string {
  return trade.side === "BUY" ? trade.outcome : trade.outcome === "YES" ? "NO" : "YES";
}

function signalOf(
  trade: Trade,
  type: "whale" | "insider",
  score: number,
  explanation: string,
  walletType: string | null | undefined,
): NewSignal {
  return {
    type,
    wallet: trade.wallet,
    walletType: walletType ?? null,
    marketId: trade.market_id,
    tradeId: trade.id,
    score,
    betValue: trade.usd_value,
    side: trade.side,
    outcome: trade.outcome,
    price: trade.price,
    explanation,
    createdAt: trade.ts,
  };
}
