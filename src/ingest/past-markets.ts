/**
 * The bulk path into the fill history (docs/architecture.md, "Past markets straight to the
 * history"): an import's fills of markets that fill retention would compact at once go straight
 * into a Parquet file of the history, never through `fills`, and the markets' read-model rows
 * are built from them as they are written and stored frozen, as a compaction leaves a compacted
 * market (src/refresh/retention.ts). The next refresh counts their bets in each wallet's figures.
 *
 * A market's fills take this path when, as its first trade line is read, the market is known
 * and resolved before now − retention, is not compacted, and has no stored fill. Its trades are
 * then held (heldFillsWithin bounds them) until the file is read; if its last one, or its
 * resolution as the file left it, turns out to be at or after the cut, they are stored as any
 * other trade.
 * A compacted market still past the cut takes new fills this way too: it is modelled again from
 * all its fills, stored and new, and its new ones add a file to the history (sql/0041).
 * Such fills record no signal: they are far older than SMARTMONEY_ALERT_MAX_AGE, and a signal
 * names a stored fill.
 */
import { mkdirSync } from "node:fs";
import type { Connection, Db } from "../db/open";
import type { Outcome, TradeSide } from "../domain";
import { WHALE_VOLUME_USD } from "../domain";
import { withEngine } from "../history/engine";
import type { HistoryReplica } from "../history/replica";
import {
  historyDir,
  historyFiles,
  newPartitionNames,
  type PartitionNames,
  partitionFileNames,
  sealedFilesOf,
  type WrittenPartition,
  writePartition,
} from "../history/store";
import { fullTableWriter, newRowPack, packValues } from "../refresh/full-rows";
import { addToBaseRates } from "../refresh/incremental";
import { marketModel, type WalletStanding } from "../refresh/market-model";
import { contextFor, FILL_COLUMNS, FILLS_BY_MARKET, type FillRow, toFill } from "../refresh/pass";
import { type PriceSeries, seriesLookup, seriesOfFills } from "../refresh/prices";
import {
  listSealed,
  putRecorded,
  recordUnlisted,
  removeWritten,
  withCopies,
} from "../refresh/retention";
import { keepRecent, packSealedTrades, sealedTradesReader } from "../refresh/sealed-trades";
import {
  betFromFills,
  type TradeFill,
  tradesToSeal,
  type WalletBetRow,
} from "../refresh/wallet-model";
import { betValues, createModelWriter, FULL_REBUILD_TABLES } from "../refresh/writer";
import { fail, ok, type Result } from "../result";
import { doubled } from "../typed-arrays";
import { hashBytes, kindOf, NEXT_FILL_ID_SQL, outcomeOfKind, sideOfKind } from "./fill-codec";
import { FillKeyTable } from "./fill-key-table";
import { MARK_MARKET_CHANGED, type NewTrade } from "./ingest";

export interface PastMarketsOptions {
  /** SMARTMONEY_FILL_RETENTION: markets resolved, and last traded, before now − this. */
  retentionMs: number;
  /** DuckDB's memory cap while the file is written, MB. */
  memoryMb: number;
  /**
   * The most trades one file may hold (heldFillsWithin): past it, the file is refused
   * (PastMarketsTooLarge) rather than take the process past its memory.
   */
  maxHeldFills: number;
  /**
   * The history's replica, with SMARTMONEY_REPLICA_URL (docs/operations.md, "Replicate"): the
   * file is put there before the import's transaction lists it, under the names
   * reserveHistoryFile recorded before that transaction began.
   */
  replica?: HistoryReplica;
}

/**
 * The trades of past markets one import may hold within SMARTMONEY_MEMORY_MB: 1,024 a MB, about
 * 1M at the default 1024 MB. A held trade costs about 220 bytes (its columns and key, its place
 * and id as the file is written, its share of the models and bets): 1M of them took an import to
 * about 960 MB on the medium world and 980 on the large one, 4M to 1,630 on the medium
 * (`npm run bench:bulk -- --variants past [--fills N]`). The rest is the page cache, DuckDB's and
 * V8's.
 */
export function heldFillsWithin(memoryMb: number): number {
  return memoryMb * 1024;
}

/** A file whose past markets hold more trades than `maxHeldFills`: refused whole. */
export class PastMarketsTooLarge extends Error {
  constructor(line: number, maxHeldFills: number) {
    const most = maxHeldFills.toLocaleString("en-US");
    super(
      `refused at line ${line}: the trades of its past markets (with the stored fills of those already in the history) pass ${most}, the most one import holds within SMARTMONEY_MEMORY_MB; nothing was imported from it: split it into files of whole markets (sorted by market) of fewer trades, or raise SMARTMONEY_MEMORY_MB`,
    );
  }
}

/**
 * Names the file an import with a replica may write to the history, and records them as on the
 * replica but not listed (history_replica_unlisted, sql/0035), committed: call before the
 * import's transaction begins. The file is put on the replica before that transaction lists it
 * and drops the record; put but never listed (the import refused or killed after the put), a
 * compaction's run deletes it from the replica in time, as it does a seal's. No compaction can
 * take the record meanwhile: the import holds the write lock from its first line to its commit.
 * A record whose file was never written is dropped by the import that wrote none, or deleted
 * later as an absent file.
 */
export function reserveHistoryFile(w: Connection, now: number): PartitionNames {
  const names = newPartitionNames(now);
  recordUnlisted(w, partitionFileNames(names), now);
  return names;
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

/**
 * How far from WHALE_VOLUME_USD a wallet's volume summed in any order decides its standing: the
 * rounding of a sum of n doubles is at most about n·2⁻⁵³ of their total, under a cent at that
 * line for any wallet with fewer than a billion bets.
 */
const WHALE_MARGIN_USD = 0.01;

/** Bets per multi-row batch handed to the table writer. */
const BET_ROWS_PER_PACK = 4096;

/** What `release` found: held lines whose fill the history holds, and lines to refuse. */
export interface Released {
  present: number;
  /** Lines of compacted markets with a new fill at or after the cut: refused, as before. */
  refused: { line: number; marketId: number }[];
}

/** Where one wallet's fills are in the file (history_wallets, sql/0036). */
interface WalletSpan {
  walletId: number;
  firstTs: number;
  lastTs: number;
  fills: number;
}

export type PastMarkets = ReturnType<typeof createPastMarkets>;

/**
 * Holds an import's trades of past markets (`hold`), stores through the ingest path those whose
 * market the rest of the file took out of the past (`release`), and writes the others to the
 * history (`write`): all in the import's transaction.
 */
export function createPastMarkets(
  db: Db,
  now: number,
  options: PastMarketsOptions,
  reserved: PartitionNames | null = null,
) {
  const w = db.writer;
  if (options.replica && reserved === null) {
    throw new Error(
      "an import with a replica reserves its history file first (reserveHistoryFile)",
    );
  }
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
  /**
   * How a market's fills take this path, as the database stands: `new`, a past market with no
   * stored fill or row; `append`, a compacted one still past the cut, whose new fills add a file
   * to the history; null, neither (resolved at or after the cut, or not at all).
   */
  const pathOf = (marketId: number): "new" | "append" | null => {
    const m = marketFacts.get(marketId);
    if (m === undefined || m.resolved !== 1 || m.resolved_at === null || m.resolved_at >= cutoff) {
      return null;
    }
    if (m.compacted_at !== null) return "append";
    return m.rows === 0 ? "new" : null;
  };
  /** Per market: its path as its first trade line found it. */
  const paths = new Map<number, "new" | "append" | null>();
  const firstPath = (marketId: number) => {
    let path = paths.get(marketId);
    if (path === undefined) {
      path = pathOf(marketId);
      paths.set(marketId, path);
    }
    return path;
  };
  /** The compacted markets whose new lines are held. */
  const appending = () => [...paths].filter(([, path]) => path === "append").map(([m]) => m);
  /** The markets whose held trades go to the history (`release`). */
  const sealing = new Set<number>();
  /** Compacted markets with a held trade, and how many fills they hold in all (hold). */
  const toReload = new Set<number>();
  let reloading = 0;
  const storedFillCount = w
    .prepare<[number], number>("SELECT trade_count FROM market_stats WHERE market_id = ?")
    .pluck();

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
  /** A stored fill's id, read back to model its market again (`loadStored`); 0 for a new one. */
  let storedIds = new Float64Array(INITIAL);
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
    storedIds = doubled(storedIds);
  };

  /** Appends a fill to the columns; its hash and key are the caller's. */
  const put = (fill: Omit<TradeFill, "id">, line: number, storedId: number): number => {
    if (count === logIndexes.length) grow();
    const i = count++;
    prices[i] = fill.price;
    sizes[i] = fill.size;
    usds[i] = fill.usd;
    times[i] = fill.ts;
    let wallet = walletIndex.get(fill.wallet);
    if (wallet === undefined) {
      wallet = addresses.length;
      addresses.push(fill.wallet);
      walletIndex.set(fill.wallet, wallet);
    }
    wallets[i] = wallet;
    markets[i] = fill.marketId;
    kinds[i] = kindOf(fill.outcome, fill.side);
    lines[i] = line;
    storedIds[i] = storedId;
    return i;
  };

  const outcomeAt = (i: number) => outcomeOfKind(kinds[i]!);
  const sideAt = (i: number) => sideOfKind(kinds[i]!);
  /** The held trade at `i` as the models read it, with the fill id `id`. */
  const fillAt = (i: number, id: number): TradeFill => ({
    wallet: addresses[wallets[i]!]!,
    marketId: markets[i]!,
    outcome: outcomeAt(i),
    side: sideAt(i),
    price: prices[i]!,
    size: sizes[i]!,
    usd: usds[i]!,
    ts: times[i]!,
    id,
  });
  /** The held trade at `i` as the ingest path stores it. */
  const tradeAt = (i: number): NewTrade => {
    const { marketId, usd, id: _, ...fill } = fillAt(i, 0);
    const hash = `0x${Buffer.from(hashAt(i)).toString("hex")}`;
    return {
      ...fill,
      tx_hash: hash,
      log_index: logIndexes[i]!,
      market_id: marketId,
      usd_value: usd,
    };
  };

  return {
    /** Whether this trade's market is a past one whose trades are held rather than stored. */
    holds(marketId: number): boolean {
      return firstPath(marketId) === "new";
    },

    /**
     * Whether a compacted market's lines are held (`hold`): it is still past the cut. `release`
     * then finds those its files hold (present), and the market is modelled again from all its
     * fills when the new ones are written, unless one is at or after the cut.
     */
    appends(marketId: number): boolean {
      return firstPath(marketId) === "append";
    },

    /**
     * Holds a trade of a market `holds` or `appends` took. Returns the line of an earlier held
     * trade with the same key (the line is then refused), else undefined.
     *
     * A key is one log of one transaction, so it belongs to one market: a new past market has no
     * stored fill, and a compacted one's are looked through by `release`; so only the file's own
     * held trades are compared here.
     */
    hold(trade: NewTrade, line: number): number | undefined {
      const hash = hashBytes(trade.tx_hash);
      const earlier = keys.find(
        hash,
        trade.log_index,
        (id) => logIndexes[id - 1] === trade.log_index && sameHash(id - 1, hash),
      );
      if (earlier !== undefined) return lines[earlier - 1];
      const { market_id: marketId, usd_value: usd, ...fill } = trade;
      // A market already in the history is modelled again from all its fills: they are loaded
      // into these columns too (loadStored), all of them counted in its frozen stats.
      if (paths.get(marketId) === "append" && !toReload.has(marketId)) {
        toReload.add(marketId);
        reloading += storedFillCount.get(marketId) ?? 0;
      }
      if (count + reloading >= options.maxHeldFills) {
        throw new PastMarketsTooLarge(line, options.maxHeldFills);
      }
      const i = put({ ...fill, marketId, usd }, line, 0);
      hashes.set(hash, i * 32);
      logIndexes[i] = trade.log_index;
      keys.add(hash, trade.log_index, i + 1);
      return undefined;
    },

    /**
     * Once the file is read, in its transaction: finds the compacted markets' held trades whose
     * fill the history holds (present), and hands the held trades of new markets no longer past
     * the cut (their last trade, or their resolution as the file left it, at or after it) to
     * `store`, the ingest path, in file order. A compacted market with a new fill past the cut
     * has its new lines refused, as they were before this path.
     */
    async release(store: (trades: HeldTrade[]) => void): Promise<Released> {
      const present = await markPresent();
      const lastTs = new Map<number, number>();
      for (let i = 0; i < count; i++) {
        if (storedIds[i] !== 0) continue;
        const m = markets[i]!;
        lastTs.set(m, Math.max(lastTs.get(m) ?? Number.NEGATIVE_INFINITY, times[i]!));
      }
      const refused: Released["refused"] = [];
      for (const [marketId, last] of lastTs) {
        // A new market as the file left it (its resolution may have come later); a compacted one
        // as its first line found it.
        const path = paths.get(marketId) === "append" ? "append" : pathOf(marketId);
        if (last < cutoff && path !== null) sealing.add(marketId);
      }
      const others: HeldTrade[] = [];
      for (let i = 0; i < count; i++) {
        if (storedIds[i] !== 0 || sealing.has(markets[i]!)) continue;
        // A compacted market's new fill at or after the cut: refused, as without this path.
        if (paths.get(markets[i]!) === "append") {
          refused.push({ line: lines[i]!, marketId: markets[i]! });
        } else others.push({ trade: tradeAt(i), line: lines[i]! });
      }
      keys.release();
      if (others.length > 0) store(others);
      return { present, refused };
    },

    /**
     * Writes the trades `release` kept to one file of the history, and their markets' rows, in
     * the file's transaction, once the file is accepted: the file is listed in it, and removed
     * if this throws.
     */
    async write(): Promise<Result<PastMarketsSummary>> {
      if (sealing.size === 0) {
        unreserve();
        return ok({ markets: 0, fills: 0 });
      }
      return writeToHistory(sealing);
    },
  };

  /**
   * The file first; then two passes over the sealed trades, so that only one wallet's or one
   * market's fills are objects at a time. By wallet, in wallet_bets' key order (so the bets are
   * inserted in runs, not all over the table): each bet, the wallet's standing, its sealed trades
   * and its span in the file. Then by market: its stats and hours, with every wallet's standing
   * known. Then the file's listing.
   */
  async function writeToHistory(sealing: ReadonlySet<number>): Promise<Result<PastMarketsSummary>> {
    // Ids in file order, from the first no fill has had (sql/0040), as insertTrades gives them.
    const first = w
      .prepare(`SELECT ${NEXT_FILL_ID_SQL} FROM fill_id_floor`)
      .pluck()
      .get() as number;
    const held = count;
    /** A new fill of a sealed market, not one the history holds already (markPresent). */
    const isNew = (i: number) => storedIds[i] === 0 && sealing.has(markets[i]!);
    const ids = new Float64Array(held);
    let sealed = 0;
    for (let i = 0; i < held; i++) if (isNew(i)) ids[i] = first + sealed++;
    w.prepare("UPDATE fill_id_floor SET next_id = ?").run(first + sealed);
    // The new places of the sealed trades in (market, ts, id) order: the file's rows.
    const newPlaces = new Int32Array(sealed);
    for (let i = 0, k = 0; i < held; i++) if (isNew(i)) newPlaces[k++] = i;
    newPlaces.sort(
      (a, b) => markets[a]! - markets[b]! || times[a]! - times[b]! || ids[a]! - ids[b]!,
    );
    // A market already in the history is modelled again from all its fills: its stored ones
    // join the columns, with their ids.
    const again = appending().filter((m) => sealing.has(m));
    if (again.length > 0) await loadStored(again);
    const idOf = (i: number) => (i < held ? ids[i]! : storedIds[i]!);
    const walletIdAt = storeWalletIds(sealing);

    // Every fill of the sealed markets: the new ones, and those stored (loadStored).
    const places = new Int32Array(count - held + sealed);
    for (let i = 0, k = 0; i < count; i++) {
      if (i < held ? isNew(i) : sealing.has(markets[i]!)) places[k++] = i;
    }
    const sealedFillAt = (i: number) => fillAt(i, idOf(i));
    const inTimeOrder = (a: number, b: number) => times[a]! - times[b]! || idOf(a) - idOf(b);
    /** Calls `each` with the runs of `sorted` that share `keyOf`'s key. */
    const forEachRun = (
      sorted: Int32Array,
      keyOf: (i: number) => number,
      each: (key: number, run: Int32Array) => void,
    ) => {
      for (let start = 0; start < sorted.length; ) {
        const key = keyOf(sorted[start]!);
        let end = start;
        while (end < sorted.length && keyOf(sorted[end]!) === key) end++;
        each(key, sorted.subarray(start, end));
        start = end;
      }
    };

    // Each market's fills, stored and new, in the order every model reads them.
    places.sort((a, b) => markets[a]! - markets[b]! || inTimeOrder(a, b));
    // The file first, while this process holds least: DuckDB's buffers on top of the page cache
    // the rows below fill took an import of 1M fills into the large world over 1 GB.
    const dir = historyDir(db.path);
    mkdirSync(dir, { recursive: true });
    const rows = function* () {
      for (const i of newPlaces) {
        yield [
          ids[i],
          hashAt(i),
          logIndexes[i],
          walletIdAt[wallets[i]!],
          markets[i],
          outcomeAt(i),
          sideAt(i),
          prices[i],
          sizes[i],
          usds[i],
          times[i],
        ];
      }
    };
    const file = await writePartition(dir, rows, {
      memoryMb: options.memoryMb,
      now: Date.now(),
      names: reserved ?? undefined,
    });
    if (file === null) throw new Error("no fill was written to the history");
    const files = withCopies(file, file);
    if (options.replica) {
      const refused = await putRecorded(options.replica, files);
      if (refused !== null) {
        return fail(
          `the history's replica refused the file for its past markets (${refused}); import it again once the replica takes files`,
        );
      }
    }
    try {
      storeRows(file);
    } catch (error) {
      removeWritten(files);
      throw error;
    }
    return ok({ markets: sealing.size, fills: sealed });

    /** The markets' rows, and the file's listing. */
    function storeRows(file: WrittenPartition): void {
      const series = new Map<number, PriceSeries>();
      forEachRun(
        places,
        (i) => markets[i]!,
        (marketId, run) => {
          series.set(marketId, seriesOfFills(Array.from(run, sealedFillAt)));
        },
      );
      const base = contextFor(db, now, "seek");
      // A bet's price 24 hours after its entry comes from its market's fills: none is stored.
      const ctx = { ...base, prices: seriesLookup(series) };

      const byWallet = places
        .slice()
        .sort(
          (a, b) =>
            walletIdAt[wallets[a]!]! - walletIdAt[wallets[b]!]! ||
            markets[a]! - markets[b]! ||
            inTimeOrder(a, b),
        );
      const baseRates = dropStoredRows(again);
      const bets = betWriter();
      const whales = new Set<string>();
      const spans: WalletSpan[] = [];
      const storedTotal = w
        .prepare<[number], number | null>("SELECT sum(volume) FROM wallet_bets WHERE wallet_id = ?")
        .pluck();
      const storedVolumes = w
        .prepare<[number], [number, number]>(
          "SELECT market_id, volume FROM wallet_bets WHERE wallet_id = ? ORDER BY market_id",
        )
        .raw();
      /**
       * Whether a wallet's volume, its stored bets' and its new ones', passes WHALE_VOLUME_USD as
       * the refresh will count it (walletBetStats): every bet's volume added in market order.
       * Added in another order, the sum differs from that one by less than WHALE_MARGIN_USD, so
       * only a total that near the line needs the refresh's order, and the wallet's bets read
       * one by one: reading every wallet's took a fifth of a large import.
       */
      const isWhale = (walletId: number, added: readonly [number, number][]) => {
        let total = storedTotal.get(walletId) ?? 0;
        for (const [, v] of added) total += v;
        if (Math.abs(total - WHALE_VOLUME_USD) > WHALE_MARGIN_USD) return total > WHALE_VOLUME_USD;
        let volume = 0;
        const all = [...storedVolumes.all(walletId), ...added].sort((a, b) => a[0] - b[0]);
        for (const [, v] of all) volume += v;
        return volume > WHALE_VOLUME_USD;
      };
      const sealedOf = sealedTradesReader(w);
      const storeSealed = w.prepare<[number, Buffer]>(
        "INSERT OR REPLACE INTO wallet_sealed_trades (wallet_id, trades) VALUES (?, ?)",
      );
      forEachRun(
        byWallet,
        (i) => walletIdAt[wallets[i]!]!,
        (walletId, run) => {
          const wallet = addresses[wallets[run[0]!]!]!;
          const added: [number, number][] = [];
          forEachRun(
            run,
            (i) => markets[i]!,
            (marketId, fills) => {
              const bet = betFromFills(wallet, marketId, Array.from(fills, sealedFillAt), ctx);
              bets.add(walletId, bet);
              added.push([marketId, bet.volume]);
              if (bet.resolved === 1 && bet.category !== null) {
                const rate = baseRates.get(bet.category) ?? { bets: 0, wins: 0 };
                rate.bets += 1;
                rate.wins += bet.won ?? 0;
                baseRates.set(bet.category, rate);
              }
            },
          );
          if (isWhale(walletId, added)) whales.add(wallet);
          // Its new trades here join its sealed trades (sql/0033), for its timing buckets, and
          // say where its fills are in the new file (sql/0036).
          const fresh = run.filter((i) => i < held).sort(inTimeOrder);
          if (fresh.length === 0) return;
          const fills = Array.from(fresh, sealedFillAt);
          const trades = keepRecent(sealedOf(walletId), tradesToSeal(fills, base, sealing));
          if (trades.length > 0) storeSealed.run(walletId, packSealedTrades(trades));
          spans.push({
            walletId,
            firstTs: fills[0]!.ts,
            lastTs: fills[fills.length - 1]!.ts,
            fills: fills.length,
          });
        },
      );
      bets.flush();

      // Only `whale` counts here: the markets' hours count whale volume, and their sentiment, which
      // weighs insiders and win rates, covers the 30 days before now, long after they last traded.
      const whale: WalletStanding = { bayesianWinRate: null, whale: true, insider: false };
      const standing = (wallet: string) => (whales.has(wallet) ? whale : undefined);
      const writer = createModelWriter(db);
      forEachRun(
        places,
        (i) => markets[i]!,
        (marketId, run) => {
          const model = marketModel(Array.from(run, sealedFillAt), now, standing);
          writer.market(marketId, model.stats, model.hours);
        },
      );
      list(
        file,
        [...sealing].sort((a, b) => a - b),
        spans,
        baseRates,
      );
    }
  }

  /**
   * Marks the held trades of compacted markets whose fill the history holds already (their
   * storedIds set to -1, which keeps them out of everything after), in one pass over the
   * markets' files; gives how many. A fill those markets kept in `fills` (named by a signal)
   * was found present as its line was read.
   */
  async function markPresent(): Promise<number> {
    const marketIds = appending();
    const files = [...new Set(marketIds.flatMap((m) => sealedFilesOf(w, m)))];
    if (files.length === 0) return 0;
    let present = 0;
    await withEngine({ memoryMb: options.memoryMb }, async (duck) => {
      const result = await duck.stream(
        `SELECT tx_hash, log_index FROM read_parquet(${historyFiles(db.path, files)})
          WHERE market_id IN (${marketIds.map(Number).join(", ")})`,
      );
      for await (const rows of result.yieldRowsJs()) {
        for (const [hash, logIndex] of rows) {
          const bytes = hash as Uint8Array;
          const log = Number(logIndex);
          const held = keys.find(
            bytes,
            log,
            (id) => logIndexes[id - 1] === log && sameHash(id - 1, bytes),
          );
          if (held === undefined || storedIds[held - 1] !== 0) continue;
          storedIds[held - 1] = -1;
          present++;
        }
      }
    });
    return present;
  }

  /**
   * The stored fills of markets already in the history, into the columns with their ids: those
   * in its files, and those a signal named, which the compaction kept in `fills`.
   */
  async function loadStored(marketIds: readonly number[]): Promise<void> {
    const files = [...new Set(marketIds.flatMap((m) => sealedFilesOf(w, m)))];
    const addressOf = w
      .prepare<[number], string>("SELECT address FROM wallet_ids WHERE id = ?")
      .pluck();
    const addressById = new Map<number, string>();
    // Streamed a chunk at a time, into the columns: a market's every stored fill as rows of
    // JavaScript values at once would grow the heap with the market's history.
    await withEngine({ memoryMb: options.memoryMb }, async (duck) => {
      const result = await duck.stream(
        `SELECT id, wallet_id, market_id, outcome, side, price, size, usd_value, ts
           FROM read_parquet(${historyFiles(db.path, files)})
          WHERE market_id IN (${marketIds.map(Number).join(", ")})`,
      );
      for await (const rows of result.yieldRowsJs()) {
        for (const [id, walletId, marketId, outcome, side, price, size, usd, ts] of rows) {
          const wallet = Number(walletId);
          let address = addressById.get(wallet);
          if (address === undefined) {
            address = addressOf.get(wallet)!;
            addressById.set(wallet, address);
          }
          const fill = {
            wallet: address,
            marketId: Number(marketId),
            outcome: outcome as Outcome,
            side: side as TradeSide,
            price: Number(price),
            size: Number(size),
            usd: Number(usd),
            ts: Number(ts),
          };
          put(fill, 0, Number(id));
        }
      }
    });
    const kept = w
      .prepare(`SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_MARKET} WHERE f.market_id = ?`)
      .raw();
    for (const marketId of marketIds) {
      for (const row of kept.all(marketId) as FillRow[]) {
        const { id, ...fill } = toFill(row);
        put(fill, 0, id);
      }
    }
  }

  /**
   * Deletes the stored rows of markets modelled again, and gives the category base rates' move
   * that takes their bets out (resolved bets and wins, negative), for the new bets to add to.
   */
  function dropStoredRows(
    marketIds: readonly number[],
  ): Map<string, { bets: number; wins: number }> {
    const baseRates = new Map<string, { bets: number; wins: number }>();
    const counted = w.prepare<[number], { category: string; bets: number; wins: number }>(
      `SELECT category, count(*) AS bets, sum(won) AS wins
         FROM wallet_bets INDEXED BY wallet_bets_by_market
        WHERE market_id = ? AND resolved = 1 AND category IS NOT NULL GROUP BY category`,
    );
    const deletes = ["wallet_bets", "market_stats", "market_hours", "market_price_history"].map(
      (table) => w.prepare<[number]>(`DELETE FROM ${table} WHERE market_id = ?`),
    );
    for (const marketId of marketIds) {
      for (const { category, bets, wins } of counted.all(marketId)) {
        const rate = baseRates.get(category) ?? { bets: 0, wins: 0 };
        rate.bets -= bets;
        rate.wins -= wins;
        baseRates.set(category, rate);
      }
      for (const remove of deletes) remove.run(marketId);
    }
    return baseRates;
  }

  /** wallet_bets rows, many to a statement, for rows given in key order (full-rows.ts). */
  function betWriter() {
    const insert = fullTableWriter(db);
    const width = FULL_REBUILD_TABLES.wallet_bets.length;
    let pack = newRowPack(BET_ROWS_PER_PACK * width);
    return {
      add(walletId: number, bet: WalletBetRow): void {
        packValues(pack, betValues(walletId, bet));
        if (pack.length === pack.numbers.length) this.flush();
      },
      flush(): void {
        if (pack.length > 0) insert("wallet_bets", pack);
        pack = newRowPack(BET_ROWS_PER_PACK * width);
      },
    };
  }

  /**
   * Lists the file as a compaction lists its own (retention.ts), its markets compacted: their
   * rows, written already, are frozen from now on, and `spans` say where each wallet's fills are
   * in it (sql/0036). The refresh recounts the markets' holders (dirty_markets.changed); the
   * category base rates move by their bets here.
   */
  function list(
    file: WrittenPartition,
    marketIds: readonly number[],
    spans: readonly WalletSpan[],
    baseRates: ReadonlyMap<string, { bets: number; wins: number }>,
  ): void {
    const partitionId = listSealed(w, file, now);
    unreserve();
    const markSealed = w.prepare<[number, number]>(
      "INSERT INTO history_markets (partition_id, market_id) VALUES (?, ?)",
    );
    const markCompacted = w.prepare<[number, number]>(
      "UPDATE markets SET compacted_at = ? WHERE id = ? AND compacted_at IS NULL",
    );
    const markChanged = w.prepare<[number]>(MARK_MARKET_CHANGED);
    for (const marketId of marketIds) {
      markSealed.run(partitionId, marketId);
      markCompacted.run(now, marketId);
      markChanged.run(marketId);
    }
    const listSpan = w.prepare<[number, number, number, number, number]>(
      "INSERT INTO history_wallets (wallet_id, partition_id, first_ts, last_ts, fills) VALUES (?, ?, ?, ?, ?)",
    );
    for (const span of spans) {
      listSpan.run(span.walletId, partitionId, span.firstTs, span.lastTs, span.fills);
    }
    addToBaseRates(w, baseRates);
  }

  /** In the import's transaction: its reserved names are listed now, or were never written. */
  function unreserve(): void {
    if (reserved === null) return;
    const drop = w.prepare<[string]>("DELETE FROM history_replica_unlisted WHERE file = ?");
    for (const name of partitionFileNames(reserved)) drop.run(name);
  }

  /**
   * The sealed trades' wallets' ids, by their place in `addresses`; new addresses stored in
   * sorted order, as insertTrades stores them.
   */
  function storeWalletIds(sealing: ReadonlySet<number>): Int32Array {
    const idOf = w.prepare<[string], number>("SELECT id FROM wallet_ids WHERE address = ?").pluck();
    const add = w.prepare<[string]>("INSERT INTO wallet_ids (address) VALUES (?)");
    const used = new Set<number>();
    for (let i = 0; i < count; i++) {
      if (storedIds[i] !== -1 && sealing.has(markets[i]!)) used.add(wallets[i]!);
    }
    const ids = new Int32Array(addresses.length);
    for (const k of [...used].sort((a, b) => (addresses[a]! < addresses[b]! ? -1 : 1))) {
      const address = addresses[k]!;
      ids[k] = idOf.get(address) ?? Number(add.run(address).lastInsertRowid);
    }
    return ids;
  }
}
