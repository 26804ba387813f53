/**
 * The incremental refresh: from what the last run stored, recompute only what the trades,
 * resolutions and time since then change (refreshReadModels says what that is).
 */
import { DAY_MS, type Fill, HOUR_MS, type Outcome } from "../analytics/fill";
import type { Connection, Db } from "../db/open";
import { decodedSql } from "../ingest/fill-codec";
import {
  type WalletChanges,
  type WalletTotals,
  type WalletUpdate,
  walletRecompute,
} from "./incremental-wallets";
import {
  appendToMarket,
  type MarketHourRow,
  type MarketStatsRow,
  marketModel,
  SENTIMENT_WINDOW_MS,
} from "./market-model";
import {
  contextFor,
  FILL_COLUMNS,
  FILLS_BY_MARKET,
  FILLS_BY_WALLET,
  type FillRow,
  type PassResult,
  standings,
  stopwatch,
  toFill,
} from "./pass";
import { type NewestFills, withStoredMarks } from "./prices";
import type { WalletContext } from "./wallet-model";
import { incrementalWalletsInWorker } from "./workers/incremental";
import { createModelWriter } from "./writer";

/** A wallet's open positions are marked again at least this often (a stale mark). */
export const MARK_MAX_AGE_MS = 60 * 60_000;
/** At most this many wallets are marked again per run only because their mark was stale. */
export const MARK_BATCH = 2_500;
/**
 * From this many wallets on, a run reads and models them in a worker thread while this one
 * writes (recomputeWallets), and its commit's WAL is copied back by another (refresh.ts).
 * Starting the worker costs a few tenths of a second (loading its module, reading the markets
 * and their marks: its first rows came 0.27–0.32 s after the start on the large world, under
 * tsx); at 1,200 wallets the two ways took the same time (docs/architecture.md, "The wallet step
 * in a worker thread").
 */
export const WALLETS_IN_WORKER_FROM = 2_000;

export interface IncrementalRun {
  /** When the last run happened, and the largest trade id it had seen. */
  lastRun: number;
  watermark: number;
  /** The largest trade id now: this run's watermark. */
  maxTradeId: number;
  markBatch: number;
  /** From this many wallets on, the wallet step reads and models in a worker thread. */
  walletsInWorkerFrom: number;
}

/** Adds `value` to the set at `key`. */
function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([value]));
  else set.add(value);
}

/** What changed since the last run, and so what this one recomputes. */
interface Changes extends WalletChanges {
  /** Per market with new fills: the earliest new fill, the new fills' wallets, the newest of each outcome. */
  fresh: Map<number, FreshMarket>;
  /** Markets whose outcome or facts changed: every bet in them is in `pairs`. */
  changedMarkets: Set<number>;
}

/** A market's new fills since the last run. */
interface FreshMarket {
  since: number;
  wallets: Set<string>;
  newest: NewestFills;
}

/** What recomputing the wallets tells the market step, the base rates and wallet search. */
interface WalletPass extends WalletTotals {
  /** Markets to rebuild from all their fills. */
  marketsToRebuild: Set<number>;
  /** Wallets whose wallet search entry can have moved (RefreshChange.searchMoved). */
  searchMoved: Set<string>;
}

type Writer = ReturnType<typeof createModelWriter>;

export function incremental(db: Db, now: number, run: IncrementalRun): PassResult {
  const watch = stopwatch();
  const writer = createModelWriter(db);
  const changes = selectChanges(db, now, run);
  const seek = contextFor(db, now, "seek");
  const newest = new Map([...changes.fresh].map(([marketId, f]) => [marketId, f.newest]));
  const ctx = { ...seek, prices: withStoredMarks(db, seek.prices, newest) };
  watch.lap("select");
  const pass = recomputeWallets(db, ctx, writer, changes, run, newest);
  watch.lap("wallets");
  const markets = refreshMarkets(db, ctx, now, run, writer, changes, pass);
  watch.lap("markets");
  moveBaseRates(db, pass.baseRateDelta);
  watch.lap("base_rates");
  return {
    wallets: changes.wallets,
    searchMoved: pass.searchMoved,
    markets: markets.count,
    fillsRead: pass.fillsRead + markets.fillsRead,
    phases: watch.phases,
  };
}

function selectChanges(db: Db, now: number, run: IncrementalRun): Changes {
  const w = db.writer;
  const pairs = new Map<string, Set<number>>();
  const fresh = new Map<number, FreshMarket>();
  const newFills = w
    .prepare<[number, number], [string, number, number, number, Outcome, number]>(
      `SELECT w.address, f.market_id, f.ts, f.id, CASE WHEN f.kind & 1 THEN 'NO' ELSE 'YES' END,
              ${decodedSql("f.price")}
         FROM fills f CROSS JOIN wallet_ids w ON w.id = f.wallet_id
        WHERE f.id > ? AND f.id <= ?`,
    )
    .raw()
    .iterate(run.watermark, run.maxTradeId);
  for (const [wallet, marketId, ts, id, outcome, price] of newFills) {
    addTo(pairs, wallet, marketId);
    let entry = fresh.get(marketId);
    if (entry === undefined) {
      entry = { since: ts, wallets: new Set([wallet]), newest: {} };
      fresh.set(marketId, entry);
    } else {
      if (ts < entry.since) entry.since = ts;
      entry.wallets.add(wallet);
    }
    const newest = entry.newest[outcome];
    if (newest === undefined || ts > newest.ts || (ts === newest.ts && id > newest.id)) {
      entry.newest[outcome] = { ts, id, price };
    }
  }
  const changedMarkets = new Set(
    w.prepare("SELECT market_id FROM dirty_markets WHERE changed = 1").pluck().all() as number[],
  );
  const holdersOf = w
    .prepare<[number], string>(
      `SELECT w.address FROM wallet_bets b INDEXED BY wallet_bets_by_market
         CROSS JOIN wallet_ids w ON w.id = b.wallet_id WHERE b.market_id = ?`,
    )
    .pluck();
  /** Wallets whose timing buckets (trades in resolved markets) may have changed. */
  const timingChanged = new Set<string>();
  for (const marketId of changedMarkets) {
    for (const wallet of holdersOf.all(marketId)) {
      addTo(pairs, wallet, marketId);
      timingChanged.add(wallet);
    }
  }
  // Entries that turned 24 hours old since the last run now have a 24-hour-later price.
  const aged = w
    .prepare<[number, number], [string, number]>(
      "SELECT DISTINCT wallet, market_id FROM trades WHERE ts > ? AND ts <= ?",
    )
    .raw()
    .iterate(run.lastRun - DAY_MS, now - DAY_MS);
  for (const [wallet, marketId] of aged) addTo(pairs, wallet, marketId);
  // A back-dated fill can be the last trade before some earlier entry's 24-hour mark.
  const enteredBetween = w
    .prepare<[number, number, number], string>(
      `SELECT w.address FROM wallet_bets b INDEXED BY wallet_bets_by_market
         CROSS JOIN wallet_ids w ON w.id = b.wallet_id
        WHERE b.market_id = +? AND b.entry_ts >= +? AND b.entry_ts <= +?`,
    )
    .pluck();
  for (const [marketId, { since }] of fresh) {
    if (since > run.lastRun) continue;
    for (const wallet of enteredBetween.all(marketId, since - DAY_MS, run.lastRun - DAY_MS)) {
      addTo(pairs, wallet, marketId);
    }
  }
  // Wallets recomputed from their stored bets alone: dirty ones (funding, labels, platform PnL)
  // and the stalest marks.
  const restat = new Set<string>(
    w.prepare("SELECT address FROM dirty_wallets").pluck().all() as string[],
  );
  if (run.markBatch > 0) {
    const stale = w
      .prepare<[number, number], string>(
        // A scan, not an index: refreshed_at changes on every wallet a run writes, and keeping
        // an index on it in step cost more than scanning wallet_stats once per run.
        `SELECT address FROM wallet_stats
          WHERE refreshed_at < ? ORDER BY refreshed_at, address LIMIT +?`,
      )
      .pluck()
      .all(now - MARK_MAX_AGE_MS, run.markBatch);
    for (const address of stale) restat.add(address);
  }
  const wallets = new Set<string>([...pairs.keys(), ...restat]);
  return { pairs, fresh, changedMarkets, timingChanged, wallets };
}

/**
 * Each wallet: the bets of its pairs recomputed from their fills, then its stats, score, type
 * and categories from all its bets, marked now; only what changed is written. The reading and
 * modelling (walletRecompute) run in a worker thread beside this one's writing when the run is
 * large enough to pay for starting one (`run.walletsInWorkerFrom`) and the database is a file.
 */
function recomputeWallets(
  db: Db,
  ctx: WalletContext,
  writer: Writer,
  changes: Changes,
  run: IncrementalRun,
  newest: ReadonlyMap<number, NewestFills>,
): WalletPass {
  // What the worker needs of the changes: the rest stays on this thread.
  const walletChanges: WalletChanges = {
    pairs: changes.pairs,
    timingChanged: changes.timingChanged,
    wallets: changes.wallets,
  };
  const searchMoved = new Set<string>();
  const store = (update: WalletUpdate) => {
    if (searchEntryMoves(update)) searchMoved.add(update.model.stats.address);
    writer.wallet(update.walletId, update.model, update.changed, update.previous);
  };
  let totals: WalletTotals;
  if (db.path !== ":memory:" && changes.wallets.size >= run.walletsInWorkerFrom) {
    totals = incrementalWalletsInWorker(db, ctx.now, walletChanges, newest, store);
  } else {
    const recompute = walletRecompute(db.writer, db.reader, ctx, walletChanges);
    for (const wallet of changes.wallets) {
      const update = recompute.next(wallet);
      if (update !== undefined) store(update);
    }
    totals = recompute.totals;
  }
  // A compacted market's rows are frozen: its facts may change, its stats and hours do not.
  const marketsToRebuild = new Set(
    [...changes.changedMarkets].filter((id) => !ctx.market(id)?.compacted),
  );
  return { ...totals, marketsToRebuild, searchMoved };
}

/**
 * Whether the wallet's wallet search entry can move (src/refresh/wallet-search.ts): only named
 * wallets have one, keyed by their name and their volume's group. Most recomputed wallets have
 * no name (8,429 recomputed, 2,559 named, after 10,000 trades on the large world), and a stale
 * mark renewed changes neither: search no longer looks each of them up.
 */
function searchEntryMoves({ model, previous }: WalletUpdate): boolean {
  const after = model.stats;
  const before = previous.stats;
  if (before === undefined) return after.platform_name !== null;
  if (before.platform_name === null && after.platform_name === null) return false;
  return before.platform_name !== after.platform_name || before.total_volume !== after.total_volume;
}

/**
 * Markets with new fills, restanded wallets or a moved sentiment window are patched; the others
 * listed are rebuilt.
 */
function refreshMarkets(
  db: Db,
  ctx: WalletContext,
  now: number,
  run: IncrementalRun,
  writer: Writer,
  changes: Changes,
  pass: WalletPass,
): { count: number; fillsRead: number } {
  const w = db.writer;
  const { fresh } = changes;
  const { marketsToRebuild, restanded, newWalletsIn } = pass;
  const compacted = (marketId: number) => ctx.market(marketId)?.compacted === true;
  let fillsRead = 0;
  // Fills leaving the 30-day sentiment window since the last run, and fills dated after the last
  // run that were stored before it (they enter the window now). Only the market's sentiment
  // reads the window: its totals, last prices and hours count every fill, whatever its date.
  const windowMoved = new Set(
    w
      .prepare<[number, number, number, number, number], number>(
        `SELECT DISTINCT market_id FROM trades WHERE ts > ? AND ts <= ?
       UNION SELECT DISTINCT market_id FROM trades WHERE ts > ? AND ts <= ? AND id <= ?`,
      )
      .pluck()
      .all(
        run.lastRun - SENTIMENT_WINDOW_MS,
        now - SENTIMENT_WINDOW_MS,
        run.lastRun,
        now,
        run.watermark,
      ),
  );

  const standing = standings(db);
  const standingOf = (wallet: string) => standing.get(wallet);
  // The window's whale and insider fills of a market, read wallet by wallet: the market's
  // counting holders (this run's bets are written already), then each one's fills in the window
  // through fills_by_wallet. Reading every fill of the window to keep the few whale ones cost
  // most of the market step at large volume. The counting holders come from the counting
  // wallets' own bets, read once: on the large world 1,041 wallets hold 56,561 bets, while the
  // 846 markets whose sentiment moved after 10,000 trades have 806,262 holders in all, and
  // reading each market's holders to keep the counting ones took 166 ms of the step.
  const countingIds = [...standing.values()]
    .map((s) => s.walletId)
    .filter((id): id is number => id !== null);
  let countingHoldersOf: Map<number, number[]> | undefined;
  const countingHolders = (marketId: number): readonly number[] => {
    if (countingHoldersOf === undefined) {
      countingHoldersOf = new Map();
      const marketsOf = w
        .prepare<[number], number>("SELECT market_id FROM wallet_bets WHERE wallet_id = ?")
        .pluck();
      for (const walletId of countingIds) {
        for (const id of marketsOf.all(walletId)) {
          const holders = countingHoldersOf.get(id);
          if (holders === undefined) countingHoldersOf.set(id, [walletId]);
          else holders.push(walletId);
        }
      }
    }
    return countingHoldersOf.get(marketId) ?? [];
  };
  const holderFillsBetween = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_WALLET}
        WHERE f.wallet_id = +? AND f.market_id = +? AND f.ts >= +? AND f.ts <= +?`,
    )
    .raw();
  const whaleFillsInWindow = (marketId: number): Fill[] => {
    const rows: FillRow[] = [];
    for (const walletId of countingHolders(marketId)) {
      for (const row of holderFillsBetween.all(
        walletId,
        marketId,
        now - SENTIMENT_WINDOW_MS,
        now,
      ) as FillRow[]) {
        rows.push(row);
      }
    }
    // In (ts, id) order, as marketModel reads them: the sentiment's sums follow that order.
    rows.sort((a, b) => a[7] - b[7] || a[8] - b[8]);
    return rows.map(toFill);
  };
  const statsOf = w.prepare<[number], MarketStatsRow & { last_trade_at: number | null }>(
    "SELECT * FROM market_stats WHERE market_id = ?",
  );
  const hoursFrom = w.prepare<[number, number], MarketHourRow>(
    "SELECT * FROM market_hours WHERE market_id = ? AND hour >= ?",
  );
  const hourAt = w.prepare<[number, number], MarketHourRow>(
    "SELECT * FROM market_hours WHERE market_id = ? AND hour = ?",
  );
  const previousOf = (marketId: number, fromHour: number, stats?: MarketStatsRow) => ({
    stats: stats ?? statsOf.get(marketId),
    hours: new Map(hoursFrom.all(marketId, fromHour).map((h) => [h.hour, h])),
  });
  const fillsOfMarket = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_MARKET}
        WHERE f.market_id = +? ORDER BY f.ts, f.id`,
    )
    .raw();
  const fillsFrom = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_MARKET}
        WHERE f.market_id = +? AND f.ts >= +? ORDER BY f.ts, f.id`,
    )
    .raw();
  const fillsBetween = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_MARKET}
        WHERE f.market_id = +? AND f.ts >= +? AND f.ts <= +? ORDER BY f.ts, f.id`,
    )
    .raw();
  let markets = 0;
  // Markets with new fills, or whose wallets' standing changed, are patched: their totals
  // continue from the stored ones, and only the hours that changed are rebuilt. So are markets
  // whose sentiment window moved: their sentiment is redone from the window's whale fills.
  // Rebuilding those from all their fills read 4.6M fills on the large world when a run came an
  // hour after the last.
  const patched = new Set<number>([...fresh.keys(), ...restanded.keys(), ...windowMoved]);
  for (const marketId of patched) {
    if (marketsToRebuild.has(marketId) || compacted(marketId)) continue;
    const previous = statsOf.get(marketId);
    const since = fresh.get(marketId)?.since ?? null;
    if (
      previous === undefined ||
      previous.last_trade_at === null ||
      (since !== null && since <= previous.last_trade_at)
    ) {
      marketsToRebuild.add(marketId);
      continue;
    }
    const fromHour = since === null ? null : Math.floor(since / HOUR_MS);
    const hours = [...(restanded.get(marketId) ?? [])]
      .filter((hour) => fromHour === null || hour < fromHour)
      .sort((a, b) => a - b);
    const fills: Fill[] = [];
    const stored = new Map<number, MarketHourRow>();
    for (const hour of hours) {
      for (const row of fillsBetween.all(marketId, hour * HOUR_MS, (hour + 1) * HOUR_MS - 1)) {
        fills.push(toFill(row as FillRow));
      }
      const old = hourAt.get(marketId, hour);
      if (old !== undefined) stored.set(hour, old);
    }
    if (fromHour !== null) {
      for (const row of fillsFrom.all(marketId, fromHour * HOUR_MS))
        fills.push(toFill(row as FillRow));
      for (const old of hoursFrom.all(marketId, fromHour)) stored.set(old.hour, old);
    }
    fillsRead += fills.length;
    const model = appendToMarket(
      { ...previous, last_trade_at: previous.last_trade_at },
      {
        fills,
        newWallets: newWalletsIn.get(marketId) ?? 0,
        now,
        standing: standingOf,
        sentimentChanged: restanded.has(marketId) || windowMoved.has(marketId),
        windowWhaleFills: () => {
          const window = whaleFillsInWindow(marketId);
          fillsRead += window.length;
          return window;
        },
      },
    );
    writer.market(marketId, model.stats, model.hours, { stats: previous, hours: stored });
    markets += 1;
  }
  for (const marketId of marketsToRebuild) {
    const fills = (fillsOfMarket.all(marketId) as FillRow[]).map(toFill);
    fillsRead += fills.length;
    if (fills.length === 0) continue;
    const model = marketModel(fills, now, standingOf);
    writer.market(
      marketId,
      model.stats,
      model.hours,
      previousOf(marketId, Number.MIN_SAFE_INTEGER),
    );
    markets += 1;
  }

  return { count: markets, fillsRead };
}

function moveBaseRates(db: Db, baseRateDelta: WalletPass["baseRateDelta"]): void {
  addToBaseRates(db.writer, baseRateDelta);
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
}

/**
 * Moves category_base_rates by resolved bets and wins counted (or, negative, no longer counted)
 * per category: the incremental refresh's, and the bulk path's frozen bets (past-markets.ts).
 */
export function addToBaseRates(
  w: Connection,
  baseRateDelta: ReadonlyMap<string, { bets: number; wins: number }>,
): void {
  const upsertRate = w.prepare<[{ category: string; bets: number; wins: number }]>(
    `INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
     VALUES (@category, @bets, @wins, NULL)
     ON CONFLICT (category) DO UPDATE SET resolved_bets = resolved_bets + @bets, wins = wins + @wins`,
  );
  for (const [category, d] of baseRateDelta) upsertRate.run({ category, ...d });
  w.exec(`DELETE FROM category_base_rates WHERE resolved_bets <= 0;
    UPDATE category_base_rates SET base_rate = CAST(wins AS REAL) / resolved_bets;`);
}
