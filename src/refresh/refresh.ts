import { DAY_MS, type Fill, HOUR_MS } from "../analytics/fill";
import type { Db } from "../db/open";
import {
  appendToMarket,
  type MarketHourRow,
  type MarketStatsRow,
  marketModel,
  SENTIMENT_WINDOW_MS,
  type WalletStanding,
} from "./market-model";
import { createPriceLookup } from "./prices";
import {
  betFromFills,
  type MarketInfo,
  type TradeFill,
  timingOf,
  type WalletBetRow,
  type WalletCategoryRow,
  type WalletContext,
  type WalletStatsRow,
  walletFromBets,
  walletModel,
} from "./wallet-model";
import { createModelWriter } from "./writer";

/** A wallet's open positions are marked again at least this often (a stale mark). */
export const MARK_MAX_AGE_MS = 60 * 60_000;
/** At most this many wallets are marked again per run only because their mark was stale. */
export const MARK_BATCH = 2_500;

export interface RefreshOptions {
  /** Rebuild everything instead of only what changed since the last run. */
  full?: boolean;
  /** More read models to refresh in the same transaction (e.g. the funding graph). */
  extensions?: RefreshExtension[];
  /** Stale marks renewed per run (MARK_BATCH). */
  markBatch?: number;
}

/** A further read model refreshed inside the same transaction, after the wallet and market models. */
export interface RefreshExtension {
  name: string;
  run(db: Db, now: number, change: { full: boolean; wallets: ReadonlySet<string> }): unknown;
}

export interface RefreshSummary {
  kind: "full" | "incremental";
  as_of: string;
  wallets: number;
  markets: number;
  fills_read: number;
  duration_ms: number;
  /** Where the time went, ms: each step of the pass, then the commit and each extension. */
  phases: Record<string, number>;
  extensions: Record<string, unknown>;
}

type FillRow = [
  string,
  number,
  "YES" | "NO",
  "BUY" | "SELL",
  number,
  number,
  number,
  number,
  number,
];

const toFill = (r: FillRow): TradeFill => ({
  wallet: r[0],
  marketId: r[1],
  outcome: r[2],
  side: r[3],
  price: r[4],
  size: r[5],
  usd: r[6],
  ts: r[7],
  id: r[8],
});

// Every column here is in trades_by_wallet_market and trades_by_market (sql/0007), so reading
// fills in either order never touches the trades table itself.
const FILL_COLUMNS = "wallet, market_id, outcome, side, price, size, usd_value, ts, id";

/**
 * Rebuilds the read models (sql/0004, sql/0007) from trades, in one write transaction so readers
 * see either the previous state or the new one, never a mix.
 *
 * An incremental run recomputes what a full rebuild would change, from stored per-bet facts:
 * - the bets of (wallet, market) pairs with new fills (trades past the last run's id
 *   watermark), every bet in a market whose outcome or facts changed, bets whose entry has just
 *   become 24 hours old (their favourable move gains a price), and bets whose 24-hour-later price
 *   a back-dated fill changed;
 * - the wallets of those bets, wallets marked dirty (funding, labels, platform PnL), and up to
 *   `markBatch` wallets whose mark is older than MARK_MAX_AGE_MS, each from its stored bets with
 *   its open positions marked now;
 * - markets with new fills (appended to when the fills come after all earlier ones, rebuilt from
 *   their fills otherwise), markets whose outcome or facts changed, markets of wallets whose
 *   standing (Bayesian win rate, whale, insider) changed, and markets whose 30-day sentiment
 *   window has just dropped or gained fills.
 * A wallet that is not recomputed keeps its marks: its ledger PnL (and what follows from it,
 * the ROI signal, score and type) is exact as of its refreshed_at, which is its pnl_as_of.
 * Category base rates move by the difference between each recomputed bet's old and new state.
 */
export function refreshReadModels(
  db: Db,
  now: number,
  options: RefreshOptions = {},
): RefreshSummary {
  const started = performance.now();
  const w = db.writer;
  const last = w
    .prepare<[], { as_of: number; max_trade_id: number | null }>(
      "SELECT started_at AS as_of, max_trade_id FROM refresh_runs ORDER BY id DESC LIMIT 1",
    )
    .get();
  const full =
    options.full === true || last === undefined || last.max_trade_id === null || last.as_of > now;
  let maxTradeId = 0;
  let passEnded = 0;
  const run = w.transaction(() => {
    maxTradeId = (w.prepare("SELECT max(id) FROM trades").pluck().get() as number | null) ?? 0;
    const pass = full
      ? fullRebuild(db, now)
      : incremental(db, now, {
          lastRun: last!.as_of,
          watermark: last!.max_trade_id!,
          maxTradeId,
          markBatch: options.markBatch ?? MARK_BATCH,
        });
    passEnded = performance.now();
    return pass;
  });
  const result = run.immediate();
  const phases = { ...result.phases, commit: Math.round(performance.now() - passEnded) };
  const watch = stopwatch();
  const extensions: Record<string, unknown> = {};
  for (const extension of options.extensions ?? []) {
    extensions[extension.name] = w
      .transaction(() => extension.run(db, now, { full, wallets: result.wallets }))
      .immediate();
    watch.lap(extension.name);
  }
  Object.assign(phases, watch.phases);
  const summary: RefreshSummary = {
    kind: full ? "full" : "incremental",
    as_of: new Date(now).toISOString(),
    wallets: result.wallets.size,
    markets: result.markets,
    fills_read: result.fillsRead,
    duration_ms: Math.round(performance.now() - started),
    phases,
    extensions,
  };
  w.prepare(
    `INSERT INTO refresh_runs (kind, started_at, finished_at, summary, max_trade_id)
     VALUES (?, ?, ?, ?, ?)`,
  ).run(summary.kind, now, now, JSON.stringify(summary), maxTradeId);
  return summary;
}

interface PassResult {
  wallets: Set<string>;
  markets: number;
  fillsRead: number;
  phases: Record<string, number>;
}

/** Times the steps of a pass: each call to `lap` closes the step that ran since the last one. */
function stopwatch() {
  const phases: Record<string, number> = {};
  let last = performance.now();
  return {
    phases,
    lap(name: string): void {
      const now = performance.now();
      phases[name] = Math.round(now - last);
      last = now;
    },
  };
}

function contextFor(db: Db, now: number, prices: "series" | "seek"): WalletContext {
  const w = db.writer;
  const markets = new Map<number, MarketInfo>();
  for (const m of w
    .prepare<
      [],
      {
        id: number;
        category: string | null;
        resolved_outcome: "YES" | "NO" | null;
        resolved_at: number | null;
      }
    >("SELECT id, category, resolved_outcome, resolved_at FROM markets")
    .iterate()) {
    markets.set(m.id, {
      id: m.id,
      category: m.category,
      resolvedOutcome: m.resolved_outcome,
      resolvedAt: m.resolved_at,
    });
  }
  const platformOf = w.prepare<
    [string],
    { name: string | null; pnl: number | null; asOf: number | null }
  >(
    "SELECT platform_name AS name, platform_pnl AS pnl, platform_pnl_as_of AS asOf FROM wallets WHERE address = ?",
  );
  const insiderMax = w.prepare<[string], { score: number | null }>(
    "SELECT max(score) AS score FROM signals WHERE wallet = ? AND type = 'insider'",
  );
  const investigated = investigationLookup(db);
  return {
    now,
    market: (id) => markets.get(id),
    prices: createPriceLookup(db, prices),
    platform: (address) => platformOf.get(address),
    maxInsiderScore: (address) => insiderMax.get(address)?.score ?? null,
    inOpenInvestigation: investigated,
  };
}

/** Wallets in an open investigation, when the funding-graph tables exist. */
function investigationLookup(db: Db): (address: string) => boolean {
  const exists = db.writer
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'investigation_wallets'")
    .get();
  if (!exists) return () => false;
  // Read once per refresh: open investigations hold few wallets, and asking per wallet cost a
  // join for every wallet recomputed.
  const open = new Set(
    db.writer
      .prepare(
        `SELECT DISTINCT iw.address FROM investigation_wallets iw
           JOIN investigations i ON i.id = iw.investigation_id
          WHERE i.status = 'open' AND i.active = 1`,
      )
      .pluck()
      .all() as string[],
  );
  return (address) => open.has(address);
}

function standings(db: Db): Map<string, WalletStanding> {
  const map = new Map<string, WalletStanding>();
  const rows = db.writer
    .prepare<[], { address: string; bwr: number | null; volume: number; type: string }>(
      `SELECT address, bayesian_win_rate AS bwr, total_volume AS volume, wallet_type AS type
         FROM wallet_stats WHERE total_volume > 50000 OR wallet_type = 'insider'`,
    )
    .iterate();
  for (const r of rows) {
    map.set(r.address, {
      bayesianWinRate: r.bwr,
      whale: r.volume > 50_000,
      insider: r.type === "insider",
    });
  }
  return map;
}

/** Streams fills grouped by a key column, calling `each` once per group with its fills in time order. */
function forEachGroup<K extends string | number>(
  rows: IterableIterator<FillRow>,
  keyOf: (row: FillRow) => K,
  each: (key: K, fills: TradeFill[]) => void,
): number {
  let current: K | undefined;
  let group: TradeFill[] = [];
  let count = 0;
  for (const row of rows) {
    count += 1;
    const key = keyOf(row);
    if (key !== current) {
      if (current !== undefined) each(current, group);
      current = key;
      group = [];
    }
    group.push(toFill(row));
  }
  if (current !== undefined) each(current, group);
  return count;
}

const REBUILT_TABLES = [
  "wallet_bets",
  "wallet_stats",
  "wallet_category_stats",
  "wallet_timing",
  "market_stats",
  "market_hours",
];

/**
 * Runs a bulk rewrite of the read-model tables on empty copies of them with no secondary
 * indexes, then recreates each index from its own stored definition: building an index once
 * over sorted rows is far cheaper than updating it row by row. The old tables are dropped, not
 * emptied: DELETE removes rows one at a time and gathers every key in memory first (over a
 * minute and a gigabyte for nine million bets), DROP frees whole pages. All inside the caller's
 * transaction, so readers keep the previous tables, indexes included, until it commits.
 */
function onEmptyTables<T>(db: Db, watch: ReturnType<typeof stopwatch>, work: () => T): T {
  const w = db.writer;
  const schema = (type: "table" | "index") =>
    w
      .prepare<[string, string], { name: string; sql: string }>(
        `SELECT name, sql FROM sqlite_master
          WHERE type = ? AND sql IS NOT NULL AND tbl_name IN (SELECT value FROM json_each(?))
          ORDER BY name`,
      )
      .all(type, JSON.stringify(REBUILT_TABLES));
  const tables = schema("table");
  const indexes = schema("index");
  for (const table of tables) {
    w.exec(`DROP TABLE "${table.name}"`);
    w.exec(table.sql);
  }
  watch.lap("drop_tables");
  const result = work();
  for (const index of indexes) w.exec(index.sql);
  watch.lap("create_indexes");
  return result;
}

function fullRebuild(db: Db, now: number): PassResult {
  const watch = stopwatch();
  // Rebuilding an index sorts every key of its table. The connection keeps temporary data in
  // memory (fast for the small sorts of requests); here the sorter spills to temporary files,
  // or indexing nine million bets would need gigabytes of RAM.
  // It also reads every trade once, in index order: memory-mapping the file would count every
  // page read against the process (8 GB on the large world, up to the map's size), for little
  // gain over the OS page cache, so both connections read without the map meanwhile.
  const connections = db.reader === db.writer ? [db.writer] : [db.writer, db.reader];
  const saved = connections.map((c) => ({
    tempStore: c.pragma("temp_store", { simple: true }) as number,
    mmapSize: c.pragma("mmap_size", { simple: true }) as number,
  }));
  for (const c of connections) {
    c.pragma("temp_store = FILE");
    c.pragma("mmap_size = 0");
  }
  try {
    const result = onEmptyTables(db, watch, () => rebuildAll(db, now, watch));
    return { ...result, phases: watch.phases };
  } finally {
    connections.forEach((c, i) => {
      c.pragma(`temp_store = ${saved[i]!.tempStore}`);
      c.pragma(`mmap_size = ${saved[i]!.mmapSize}`);
    });
  }
}

function rebuildAll(db: Db, now: number, watch: ReturnType<typeof stopwatch>) {
  const writer = createModelWriter(db);
  db.writer.exec("DELETE FROM category_base_rates");
  const ctx = contextFor(db, now, "series");
  watch.lap("context");
  const wallets = new Set<string>();
  // Trades are read through the reader: better-sqlite3 cannot write on a connection while one
  // of its statements is being iterated. We hold the write lock, so both see the same trades.
  const byWallet = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_wallet_market
        ORDER BY wallet, market_id, ts, id`,
    )
    .raw()
    .iterate() as IterableIterator<FillRow>;
  let fillsRead = forEachGroup(
    byWallet,
    (r) => r[0],
    (wallet, fills) => {
      const model = walletModel(wallet, fills, ctx);
      writer.wallet(model, model.bets);
      wallets.add(wallet);
    },
  );
  watch.lap("wallets");
  const standing = standings(db);
  let markets = 0;
  const byMarket = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_market ORDER BY market_id, ts, id`,
    )
    .raw()
    .iterate() as IterableIterator<FillRow>;
  fillsRead += forEachGroup(
    byMarket,
    (r) => r[1],
    (marketId, fills) => {
      const model = marketModel(fills, now, (wallet) => standing.get(wallet));
      writer.market(marketId, model.stats, model.hours);
      markets += 1;
    },
  );
  watch.lap("markets");
  db.writer.exec(`INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
    SELECT category, count(*), sum(won), CAST(sum(won) AS REAL) / count(*)
      FROM wallet_bets WHERE resolved = 1 AND category IS NOT NULL GROUP BY category`);
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  return { wallets, markets, fillsRead };
}

interface IncrementalRun {
  /** When the last run happened, and the largest trade id it had seen. */
  lastRun: number;
  watermark: number;
  /** The largest trade id now: this run's watermark. */
  maxTradeId: number;
  markBatch: number;
}

/** Adds `value` to the set at `key`. */
function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([value]));
  else set.add(value);
}

function incremental(db: Db, now: number, run: IncrementalRun): PassResult {
  const watch = stopwatch();
  const w = db.writer;
  const writer = createModelWriter(db);
  const ctx = contextFor(db, now, "seek");
  let fillsRead = 0;

  // 1. Which bets to recompute: (wallet → markets).
  const pairs = new Map<string, Set<number>>();
  /** Per market with new fills: the earliest new fill and the new fills' wallets. */
  const fresh = new Map<number, { since: number; wallets: Set<string> }>();
  const newFills = w
    .prepare<[number, number], [string, number, number]>(
      "SELECT wallet, market_id, ts FROM trades WHERE id > ? AND id <= ?",
    )
    .raw()
    .iterate(run.watermark, run.maxTradeId);
  for (const [wallet, marketId, ts] of newFills) {
    addTo(pairs, wallet, marketId);
    const entry = fresh.get(marketId);
    if (entry === undefined) fresh.set(marketId, { since: ts, wallets: new Set([wallet]) });
    else {
      if (ts < entry.since) entry.since = ts;
      entry.wallets.add(wallet);
    }
  }
  const changedMarkets = new Set(
    w.prepare("SELECT market_id FROM dirty_markets WHERE changed = 1").pluck().all() as number[],
  );
  const holdersOf = w
    .prepare<[number], string>("SELECT wallet FROM wallet_bets WHERE market_id = ?")
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
      "SELECT wallet FROM wallet_bets WHERE market_id = ? AND entry_ts >= ? AND entry_ts <= ?",
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
          WHERE refreshed_at < ? ORDER BY refreshed_at, address LIMIT ?`,
      )
      .pluck()
      .all(now - MARK_MAX_AGE_MS, run.markBatch);
    for (const address of stale) restat.add(address);
  }
  const wallets = new Set<string>([...pairs.keys(), ...restat]);
  watch.lap("select");

  // 2. Recompute those wallets.
  // Arrays, made into objects here: better-sqlite3 builds row objects several times slower, and
  // these reads (every bet of every wallet recomputed) are most of an incremental run's reading.
  const betsOf = w
    .prepare<[string], unknown[]>(
      `SELECT ${BET_FIELDS.join(", ")} FROM wallet_bets WHERE wallet = ? ORDER BY market_id`,
    )
    .raw();
  const oldStats = w.prepare<[string], WalletStatsRow>(
    "SELECT * FROM wallet_stats WHERE address = ?",
  );
  const oldCategories = w.prepare<[string], WalletCategoryRow>(
    "SELECT * FROM wallet_category_stats WHERE address = ?",
  );
  const pairFills = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_wallet_market
        WHERE wallet = ? AND market_id = ? ORDER BY ts, id`,
    )
    .raw();
  const walletFills = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM trades WHERE wallet = ? ORDER BY ts, id`)
    .raw();
  const baseRateDelta = new Map<string, { bets: number; wins: number }>();
  const bump = (bet: WalletBetRow, sign: 1 | -1) => {
    if (bet.resolved !== 1 || bet.category === null) return;
    const d = baseRateDelta.get(bet.category) ?? { bets: 0, wins: 0 };
    d.bets += sign;
    d.wins += sign * (bet.won ?? 0);
    baseRateDelta.set(bet.category, d);
  };
  const marketsToRebuild = new Set(changedMarkets);
  /** Markets of wallets whose standing changed, with the hours whose whale volume moved. */
  const restanded = new Map<number, Set<number>>();
  /** Per market: wallets that had never traded it before this run's fills. */
  const newWalletsIn = new Map<number, number>();

  for (const wallet of wallets) {
    const before = oldStats.get(wallet);
    const bets = new Map<number, WalletBetRow>();
    for (const values of betsOf.all(wallet)) {
      const bet = betFromValues(values);
      bets.set(bet.market_id, bet);
    }
    const previous = {
      stats: before,
      bets: new Map(bets),
      categories: new Map(oldCategories.all(wallet).map((c) => [c.category, c])),
    };
    const changed: WalletBetRow[] = [];
    let resolvedChanged = before === undefined;
    // A new wallet has no timing row yet; others change only with trades in resolved markets.
    let timing = before === undefined || timingChanged.has(wallet);
    for (const marketId of pairs.get(wallet) ?? []) {
      const fills = (pairFills.all(wallet, marketId) as FillRow[]).map(toFill);
      fillsRead += fills.length;
      const old = bets.get(marketId);
      if (fills.length === 0) continue;
      const bet = betFromFills(wallet, marketId, fills, ctx);
      if (old === undefined) newWalletsIn.set(marketId, (newWalletsIn.get(marketId) ?? 0) + 1);
      if (old?.resolved === 1 || bet.resolved === 1) {
        resolvedChanged = true;
        timing = true;
      }
      if (old === undefined || !sameBet(old, bet)) {
        if (old !== undefined) bump(old, -1);
        bump(bet, 1);
        changed.push(bet);
        bets.set(marketId, bet);
      }
    }
    let timingJson: string | null = null;
    if (timing) {
      const fills = (walletFills.all(wallet) as FillRow[]).map(toFill);
      fillsRead += fills.length;
      timingJson = timingOf(fills, ctx);
    }
    const rows = [...bets.values()].sort((a, b) => a.market_id - b.market_id);
    if (rows.length === 0) continue;
    const model = walletFromBets(wallet, rows, ctx, {
      timing: timingJson,
      winsTest: resolvedChanged ? undefined : { log10PValue: before!.log10_p_value },
    });
    writer.wallet(model, changed, previous);
    const after = model.stats;
    const standingChanged =
      !before ||
      before.bayesian_win_rate !== after.bayesian_win_rate ||
      before.total_volume > 50_000 !== after.total_volume > 50_000 ||
      (before.wallet_type === "insider") !== (after.wallet_type === "insider");
    const counts =
      after.total_volume > 50_000 ||
      after.wallet_type === "insider" ||
      (before !== undefined && (before.total_volume > 50_000 || before.wallet_type === "insider"));
    if (standingChanged && counts) {
      // Its markets' sentiment weighs it differently; if its whale flag flipped, the hours it
      // traded in gain or lose its whale volume. Nothing else about those markets changes.
      const whaleFlipped =
        before === undefined || before.total_volume > 50_000 !== after.total_volume > 50_000;
      for (const bet of rows) {
        const hours = restanded.get(bet.market_id) ?? new Set<number>();
        restanded.set(bet.market_id, hours);
        if (!whaleFlipped) continue;
        for (const row of pairFills.all(wallet, bet.market_id) as FillRow[]) {
          hours.add(Math.floor(row[7] / HOUR_MS));
        }
      }
    }
  }

  watch.lap("wallets");

  // 3. Markets.
  // Fills leaving the 30-day sentiment window since the last run, and fills dated after the last
  // run that were stored before it (they enter the window now).
  const windowMoved = w
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
    );
  for (const marketId of windowMoved) marketsToRebuild.add(marketId);

  const standing = standings(db);
  const standingOf = (wallet: string) => standing.get(wallet);
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
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_market
        WHERE market_id = ? ORDER BY ts, id`,
    )
    .raw();
  const fillsFrom = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_market
        WHERE market_id = ? AND ts >= ? ORDER BY ts, id`,
    )
    .raw();
  const fillsBetween = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM trades INDEXED BY trades_by_market
        WHERE market_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, id`,
    )
    .raw();
  let markets = 0;
  // Markets with new fills, or whose wallets' standing changed, are patched: their totals
  // continue from the stored ones, and only the hours that changed are rebuilt.
  const patched = new Set<number>([...fresh.keys(), ...restanded.keys()]);
  for (const marketId of patched) {
    if (marketsToRebuild.has(marketId)) continue;
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
        sentimentChanged: restanded.has(marketId),
        windowWhaleFills: () => {
          const window = (
            fillsBetween.all(marketId, now - SENTIMENT_WINDOW_MS, now) as FillRow[]
          ).map(toFill);
          fillsRead += window.length;
          return window.filter((fill) => {
            const who = standingOf(fill.wallet);
            return who?.whale === true || who?.insider === true;
          });
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

  watch.lap("markets");
  const upsertRate = w.prepare<[{ category: string; bets: number; wins: number }]>(
    `INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
     VALUES (@category, @bets, @wins, NULL)
     ON CONFLICT (category) DO UPDATE SET resolved_bets = resolved_bets + @bets, wins = wins + @wins`,
  );
  for (const [category, d] of baseRateDelta) upsertRate.run({ category, ...d });
  w.exec(`DELETE FROM category_base_rates WHERE resolved_bets <= 0;
    UPDATE category_base_rates SET base_rate = CAST(wins AS REAL) / resolved_bets;`);
  w.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  watch.lap("base_rates");
  return { wallets, markets, fillsRead, phases: watch.phases };
}

const BET_FIELDS: (keyof WalletBetRow)[] = [
  "market_id",
  "category",
  "side",
  "entry_price",
  "buy_usd",
  "volume",
  "yes_flow",
  "no_flow",
  "yes_shares",
  "no_shares",
  "trade_count",
  "two_sided",
  "first_ts",
  "entry_ts",
  "last_ts",
  "resolved",
  "won",
  "pnl_base",
  "move_24h",
];

/** A wallet_bets row read as an array, in BET_FIELDS order. */
function betFromValues(v: unknown[]): WalletBetRow {
  // Written out, so every bet object has one shape (a loop assigning fields one by one made
  // V8 fall back to slow dictionary objects).
  return {
    market_id: v[0] as number,
    category: v[1] as string | null,
    side: v[2] as WalletBetRow["side"],
    entry_price: v[3] as number | null,
    buy_usd: v[4] as number,
    volume: v[5] as number,
    yes_flow: v[6] as number,
    no_flow: v[7] as number,
    yes_shares: v[8] as number,
    no_shares: v[9] as number,
    trade_count: v[10] as number,
    two_sided: v[11] as number,
    first_ts: v[12] as number,
    entry_ts: v[13] as number,
    last_ts: v[14] as number,
    resolved: v[15] as number,
    won: v[16] as number | null,
    pnl_base: v[17] as number,
    move_24h: v[18] as number | null,
  };
}

function sameBet(a: WalletBetRow, b: WalletBetRow): boolean {
  return BET_FIELDS.every((field) => a[field] === b[field]);
}
