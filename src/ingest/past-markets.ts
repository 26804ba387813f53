/**
 * The bulk path into the fill history (docs/architecture.md, "The bulk path"): an import's
 * fills of markets that fill retention would compact at once go straight into a Parquet file of
 * the history, never through `fills`, and the markets' read-model rows are built from them as
 * they are written and stored frozen, as a compaction leaves a compacted market
 * (src/refresh/retention.ts). The next refresh counts their bets in each wallet's figures.
 *
 * A market's fills take this path when, as its first trade line is read, the market is known
 * and resolved before now − retention, is not compacted, and has no stored fill. Its trades are
 * then held (about 90 bytes each) until the file is read; if its last one, or its resolution as
 * the file left it, turns out to be at or after the cut, they are stored as any other trade.
 * Such fills record no signal: they are far older than SMARTMONEY_ALERT_MAX_AGE, and a signal
 * names a stored fill.
 */
import { mkdirSync } from "node:fs";
import type { Db } from "../db/open";
import { WHALE_VOLUME_USD } from "../domain";
import { historyDir, type WrittenPartition, writePartition } from "../history/store";
import { addToBaseRates } from "../refresh/incremental";
import {
  type MarketHourRow,
  type MarketStatsRow,
  marketModel,
  type WalletStanding,
} from "../refresh/market-model";
import { contextFor } from "../refresh/pass";
import { type PriceSeries, seriesLookup, seriesOfFills } from "../refresh/prices";
import { LIST_WALLET_SPANS, listSealed, removeWritten, withCopies } from "../refresh/retention";
import { keepRecent, packSealedTrades, sealedTradesReader } from "../refresh/sealed-trades";
import {
  betFromFills,
  type TradeFill,
  tradesToSeal,
  type WalletBetRow,
  type WalletContext,
} from "../refresh/wallet-model";
import { createModelWriter } from "../refresh/writer";
import { doubled } from "../typed-arrays";
import { hashBytes } from "./fill-codec";
import { FillKeyTable } from "./fill-key-table";
import type { NewTrade } from "./ingest";

export interface PastMarketsOptions {
  /** SMARTMONEY_FILL_RETENTION: markets resolved, and last traded, before now − this. */
  retentionMs: number;
  /** DuckDB's memory cap while the file is written, MB. */
  memoryMb: number;
}

export interface PastMarketsSummary {
  /** Markets written to the history, and their fills. */
  markets: number;
  fills: number;
}

/** A held trade as the import stores it: the ingest path's row and its line. */
export interface HeldTrade {
  trade: NewTrade;
  line: number;
}

const INITIAL = 1 << 14;

/** A held trade as the models read it, with its place in the held columns. */
type HeldFill = TradeFill & { at: number };

const inTimeOrder = (a: TradeFill, b: TradeFill) => a.ts - b.ts || a.id - b.id;

function append<T>(map: Map<string, T[]>, key: string, values: readonly T[]): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [...values]);
  else list.push(...values);
}

export type PastMarkets = ReturnType<typeof createPastMarkets>;

/**
 * Holds an import's trades of past markets (`hold`), stores through the ingest path those whose
 * market the rest of the file took out of the past (`release`), and writes the others to the
 * history (`write`): all in the import's transaction.
 */
export function createPastMarkets(db: Db, now: number, options: PastMarketsOptions) {
  const w = db.writer;
  const cutoff = now - options.retentionMs;
  const marketFacts = w.prepare<
    [number],
    { resolved: number; resolved_at: number | null; compacted_at: number | null; rows: number }
  >(
    `SELECT resolved_outcome IS NOT NULL AS resolved, resolved_at, compacted_at,
            EXISTS (SELECT 1 FROM fills INDEXED BY fills_by_market WHERE market_id = m.id)
              OR EXISTS (SELECT 1 FROM market_stats s WHERE s.market_id = m.id) AS rows
       FROM markets m WHERE id = ?`,
  );
  const past = (marketId: number): boolean => {
    const m = marketFacts.get(marketId);
    return (
      m !== undefined &&
      m.resolved === 1 &&
      m.resolved_at !== null &&
      m.resolved_at < cutoff &&
      m.compacted_at === null &&
      m.rows === 0
    );
  };
  /** Per market: whether its trades are held, decided at its first trade line. */
  const holding = new Map<number, boolean>();
  /** The markets whose held trades go to the history (`release`). */
  const sealing = new Set<number>();

  // The held trades, column by column.
  let hashes = new Uint8Array(INITIAL * 32);
  let logIndexes = new Float64Array(INITIAL);
  let prices = new Float64Array(INITIAL);
  let sizes = new Float64Array(INITIAL);
  let usds = new Float64Array(INITIAL);
  let times = new Float64Array(INITIAL);
  let wallets = new Int32Array(INITIAL);
  let markets = new Int32Array(INITIAL);
  let kinds = new Int32Array(INITIAL);
  let lines = new Int32Array(INITIAL);
  let count = 0;
  const walletIndex = new Map<string, number>();
  const addresses: string[] = [];
  const keys = new FillKeyTable();
  const hashAt = (i: number) => hashes.subarray(i * 32, i * 32 + 32);
  const sameHash = (i: number, hash: Uint8Array) => {
    for (let b = 0; b < 32; b++) if (hashes[i * 32 + b] !== hash[b]) return false;
    return true;
  };

  const grow = () => {
    const grown = new Uint8Array(hashes.length * 2);
    grown.set(hashes);
    hashes = grown;
    logIndexes = doubled(logIndexes);
    prices = doubled(prices);
    sizes = doubled(sizes);
    usds = doubled(usds);
    times = doubled(times);
    wallets = doubled(wallets);
    markets = doubled(markets);
    kinds = doubled(kinds);
    lines = doubled(lines);
  };

  const tradeAt = (i: number): NewTrade => ({
    tx_hash: `0x${Buffer.from(hashAt(i)).toString("hex")}`,
    log_index: logIndexes[i]!,
    wallet: addresses[wallets[i]!]!,
    market_id: markets[i]!,
    outcome: kinds[i]! & 1 ? "NO" : "YES",
    side: kinds[i]! & 2 ? "SELL" : "BUY",
    price: prices[i]!,
    size: sizes[i]!,
    usd_value: usds[i]!,
    ts: times[i]!,
  });

  return {
    /** Whether this trade's market is a past one whose trades are held rather than stored. */
    holds(marketId: number): boolean {
      let held = holding.get(marketId);
      if (held === undefined) {
        held = past(marketId);
        holding.set(marketId, held);
      }
      return held;
    },

    /**
     * Holds a trade of a market `holds` took. Returns the line of an earlier held trade with the
     * same key (the line is then refused), else undefined.
     *
     * A key is one log of one transaction, so it belongs to one market: a past market has no
     * stored fill, so no stored fill can have a held trade's key, and only the file's own held
     * trades are compared.
     */
    hold(trade: NewTrade, line: number): number | undefined {
      const hash = hashBytes(trade.tx_hash);
      const earlier = keys.find(
        hash,
        trade.log_index,
        (id) => logIndexes[id - 1] === trade.log_index && sameHash(id - 1, hash),
      );
      if (earlier !== undefined) return lines[earlier - 1];
      if (count === logIndexes.length) grow();
      const i = count++;
      hashes.set(hash, i * 32);
      logIndexes[i] = trade.log_index;
      prices[i] = trade.price;
      sizes[i] = trade.size;
      usds[i] = trade.usd_value;
      times[i] = trade.ts;
      let wallet = walletIndex.get(trade.wallet);
      if (wallet === undefined) {
        wallet = addresses.length;
        addresses.push(trade.wallet);
        walletIndex.set(trade.wallet, wallet);
      }
      wallets[i] = wallet;
      markets[i] = trade.market_id;
      kinds[i] = (trade.outcome === "NO" ? 1 : 0) | (trade.side === "SELL" ? 2 : 0);
      lines[i] = line;
      keys.add(hash, trade.log_index, i + 1);
      return undefined;
    },

    get held(): number {
      return count;
    },

    /**
     * Hands the held trades of markets no longer past the cut (their last trade, or their
     * resolution as the file left it, at or after it) to `store`, the ingest path, in file
     * order. Call once the file is read, in its transaction.
     */
    release(store: (trades: HeldTrade[]) => void): void {
      const lastTs = new Map<number, number>();
      for (let i = 0; i < count; i++) {
        const m = markets[i]!;
        lastTs.set(m, Math.max(lastTs.get(m) ?? Number.NEGATIVE_INFINITY, times[i]!));
      }
      for (const [marketId, last] of lastTs) {
        if (last < cutoff && past(marketId)) sealing.add(marketId);
      }
      const others: HeldTrade[] = [];
      for (let i = 0; i < count; i++) {
        if (!sealing.has(markets[i]!)) others.push({ trade: tradeAt(i), line: lines[i]! });
      }
      keys.release();
      if (others.length > 0) store(others);
    },

    /**
     * Writes the trades `release` kept to one file of the history, and their markets' rows, in
     * the file's transaction, once the file is accepted: the file is listed in it, and removed
     * if this throws.
     */
    async write(): Promise<PastMarketsSummary> {
      if (sealing.size === 0) return { markets: 0, fills: 0 };
      return writeToHistory(sealing);
    },
  };

  async function writeToHistory(sealing: ReadonlySet<number>): Promise<PastMarketsSummary> {
    // Ids in file order, from the first no fill has had (sql/0040), as insertTrades gives them.
    const first = w
      .prepare(
        "SELECT max(next_id, (SELECT coalesce(max(id), 0) + 1 FROM fills)) FROM fill_id_floor",
      )
      .pluck()
      .get() as number;
    const order: number[] = [];
    for (let i = 0; i < count; i++) if (sealing.has(markets[i]!)) order.push(i);
    w.prepare("UPDATE fill_id_floor SET next_id = ?").run(first + order.length);
    const walletIds = storeWalletIds(order);

    // Each market's fills in (ts, id) order, the order every model reads them in; `at` is the
    // held trade's place in the columns.
    const byMarket = new Map<number, HeldFill[]>();
    order.forEach((i, k) => {
      const fill: HeldFill = {
        wallet: addresses[wallets[i]!]!,
        marketId: markets[i]!,
        outcome: kinds[i]! & 1 ? "NO" : "YES",
        side: kinds[i]! & 2 ? "SELL" : "BUY",
        price: prices[i]!,
        size: sizes[i]!,
        usd: usds[i]!,
        ts: times[i]!,
        id: first + k,
        at: i,
      };
      const group = byMarket.get(fill.marketId);
      if (group === undefined) byMarket.set(fill.marketId, [fill]);
      else group.push(fill);
    });
    const marketIds = [...byMarket.keys()].sort((a, b) => a - b);
    const series = new Map<number, PriceSeries>();
    for (const [marketId, fills] of byMarket) {
      fills.sort(inTimeOrder);
      series.set(marketId, seriesOfFills(fills));
    }
    // A bet's price 24 hours after its entry comes from its market's own fills: none is stored.
    const ctx = contextFor(db, now, seriesLookup(series));

    // Each wallet's bet in each market, and its fills in them (for its sealed trades).
    const betsOf = new Map<string, WalletBetRow[]>();
    const fillsOf = new Map<string, TradeFill[]>();
    for (const marketId of marketIds) {
      const perWallet = new Map<string, TradeFill[]>();
      for (const fill of byMarket.get(marketId)!) {
        const group = perWallet.get(fill.wallet);
        if (group === undefined) perWallet.set(fill.wallet, [fill]);
        else group.push(fill);
      }
      for (const [wallet, walletFills] of perWallet) {
        append(betsOf, wallet, [betFromFills(wallet, marketId, walletFills, ctx)]);
        append(fillsOf, wallet, walletFills);
      }
    }
    const standing = whalesAmong(betsOf, walletIds);
    const models = marketIds.map((marketId) => {
      const model = marketModel(byMarket.get(marketId)!, now, standing);
      return { marketId, stats: model.stats, hours: model.hours };
    });

    const dir = historyDir(db.path);
    mkdirSync(dir, { recursive: true });
    const rows = function* () {
      for (const marketId of marketIds) {
        for (const f of byMarket.get(marketId)!) {
          yield [
            f.id,
            hashAt(f.at),
            logIndexes[f.at],
            walletIds.get(f.wallet),
            marketId,
            f.outcome,
            f.side,
            f.price,
            f.size,
            f.usd,
            f.ts,
          ];
        }
      }
    };
    const sealed = await writePartition(dir, rows, { memoryMb: options.memoryMb, now: Date.now() });
    if (sealed === null) throw new Error("no fill was written to the history");
    try {
      list(sealed, sealing, marketIds, models, betsOf, fillsOf, walletIds, ctx);
    } catch (error) {
      removeWritten(withCopies(sealed, sealed));
      throw error;
    }
    return { markets: marketIds.length, fills: order.length };
  }

  /**
   * Lists the file as a compaction lists its own (retention.ts) and stores the markets' rows,
   * frozen: the markets are compacted, and the refresh recounts their holders from their bets
   * (dirty_markets.changed), the category base rates moved by them here.
   */
  function list(
    sealed: WrittenPartition,
    sealing: ReadonlySet<number>,
    marketIds: readonly number[],
    models: readonly { marketId: number; stats: MarketStatsRow; hours: MarketHourRow[] }[],
    betsOf: ReadonlyMap<string, WalletBetRow[]>,
    fillsOf: ReadonlyMap<string, TradeFill[]>,
    walletIds: ReadonlyMap<string, number>,
    ctx: WalletContext,
  ): void {
    const partitionId = listSealed(w, sealed, now);
    const writer = createModelWriter(db);
    const baseRates = new Map<string, { bets: number; wins: number }>();
    for (const [wallet, bets] of betsOf) {
      writer.newBets(walletIds.get(wallet)!, bets);
      for (const bet of bets) {
        if (bet.resolved !== 1 || bet.category === null) continue;
        const rate = baseRates.get(bet.category) ?? { bets: 0, wins: 0 };
        rate.bets += 1;
        rate.wins += bet.won ?? 0;
        baseRates.set(bet.category, rate);
      }
    }
    for (const { marketId, stats, hours } of models) writer.market(marketId, stats, hours);
    // Each wallet's trades here join its sealed trades (sql/0033), for its timing buckets.
    const sealedOf = sealedTradesReader(w);
    const storeSealed = w.prepare<[number, Buffer]>(
      "INSERT OR REPLACE INTO wallet_sealed_trades (wallet_id, trades) VALUES (?, ?)",
    );
    for (const [wallet, fills] of fillsOf) {
      const walletId = walletIds.get(wallet)!;
      const trades = keepRecent(
        sealedOf(walletId),
        tradesToSeal(fills.sort(inTimeOrder), ctx, sealing),
      );
      if (trades.length > 0) storeSealed.run(walletId, packSealedTrades(trades));
    }
    const markSealed = w.prepare<[number, number]>(
      "INSERT INTO history_markets (partition_id, market_id) VALUES (?, ?)",
    );
    const markCompacted = w.prepare<[number, number]>(
      "UPDATE markets SET compacted_at = ? WHERE id = ?",
    );
    const markChanged = w.prepare<[number]>(
      "INSERT INTO dirty_markets (market_id, changed) VALUES (?, 1) ON CONFLICT DO UPDATE SET changed = 1",
    );
    for (const marketId of marketIds) {
      markSealed.run(partitionId, marketId);
      markCompacted.run(now, marketId);
      markChanged.run(marketId);
    }
    w.prepare<[number, string]>(LIST_WALLET_SPANS).run(partitionId, JSON.stringify(marketIds));
    addToBaseRates(w, baseRates);
  }

  /**
   * The whales among the markets' wallets, as the refresh will count them: their stored bets'
   * volume and these bets', summed in market order (walletBetStats), over WHALE_VOLUME_USD. Only
   * `whale` matters here: the markets' hours count whale volume, and their sentiment, which
   * weighs insiders and win rates, covers 30 days these markets last traded before.
   */
  function whalesAmong(
    betsOf: ReadonlyMap<string, WalletBetRow[]>,
    walletIds: ReadonlyMap<string, number>,
  ): (wallet: string) => WalletStanding | undefined {
    const storedVolumes = w
      .prepare<[number], [number, number]>(
        "SELECT market_id, volume FROM wallet_bets WHERE wallet_id = ? ORDER BY market_id",
      )
      .raw();
    const whales = new Map<string, WalletStanding>();
    for (const [wallet, bets] of betsOf) {
      const walletId = walletIds.get(wallet)!;
      const volumes = [
        ...storedVolumes.all(walletId),
        ...bets.map((b): [number, number] => [b.market_id, b.volume]),
      ].sort((a, b) => a[0] - b[0]);
      let total = 0;
      for (const [, volume] of volumes) total += volume;
      if (total > WHALE_VOLUME_USD) {
        whales.set(wallet, { bayesianWinRate: null, whale: true, insider: false });
      }
    }
    return (wallet) => whales.get(wallet);
  }

  /** The wallets' ids, new addresses stored in sorted order (as insertTrades does). */
  function storeWalletIds(order: readonly number[]): Map<string, number> {
    const idOf = w.prepare<[string], number>("SELECT id FROM wallet_ids WHERE address = ?").pluck();
    const add = w.prepare<[string]>("INSERT INTO wallet_ids (address) VALUES (?)");
    const used = new Set<number>();
    for (const i of order) used.add(wallets[i]!);
    const ids = new Map<string, number>();
    for (const address of [...used].map((k) => addresses[k]!).sort()) {
      ids.set(address, idOf.get(address) ?? Number(add.run(address).lastInsertRowid));
    }
    return ids;
  }
}
