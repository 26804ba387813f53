import { DAY_MS, type Fill } from "../analytics/fill";
import type { Db } from "../db/open";
import { marketModel, SENTIMENT_WINDOW_MS, type WalletStanding } from "./market-model";
import { createPriceLookup } from "./prices";
import { type MarketInfo, type WalletContext, walletModel } from "./wallet-model";
import { createModelWriter } from "./writer";

export interface RefreshOptions {
  /** Rebuild everything instead of only what changed since the last run. */
  full?: boolean;
  /** More read models to refresh in the same transaction (e.g. the funding graph). */
  extensions?: RefreshExtension[];
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
  extensions: Record<string, unknown>;
}

type FillRow = [string, number, "YES" | "NO", "BUY" | "SELL", number, number, number, number];

const toFill = (r: FillRow): Fill => ({
  wallet: r[0],
  marketId: r[1],
  outcome: r[2],
  side: r[3],
  price: r[4],
  size: r[5],
  usd: r[6],
  ts: r[7],
});

const FILL_COLUMNS = "wallet, market_id, outcome, side, price, size, usd_value, ts";

/**
 * Rebuilds the read models (sql/0004) from trades, in one write transaction so readers see
 * either the previous state or the new one, never a mix.
 *
 * Incremental runs recompute exactly what a full rebuild would change:
 * - wallets that traded (dirty_wallets), every wallet with a bet in a market that traded or
 *   resolved (their marks, settlements and 24-hour-later prices move), and wallets whose entry
 *   has just become 24 hours old (their timing signal gains a price);
 * - markets that traded or resolved, markets of wallets whose standing (Bayesian win rate, whale,
 *   insider) changed, and markets whose 30-day sentiment window has just dropped fills.
 * Category base rates move by the difference between each recomputed wallet's old and new bets.
 */
export function refreshReadModels(
  db: Db,
  now: number,
  options: RefreshOptions = {},
): RefreshSummary {
  const started = performance.now();
  const w = db.writer;
  const lastRun = w
    .prepare<[], { as_of: number }>(
      "SELECT started_at AS as_of FROM refresh_runs ORDER BY id DESC LIMIT 1",
    )
    .get()?.as_of;
  const full = options.full === true || lastRun === undefined || lastRun > now;
  const run = w.transaction(() => (full ? fullRebuild(db, now) : incremental(db, now, lastRun!)));
  const result = run.immediate();
  const extensions: Record<string, unknown> = {};
  for (const extension of options.extensions ?? []) {
    extensions[extension.name] = w
      .transaction(() => extension.run(db, now, { full, wallets: result.wallets }))
      .immediate();
  }
  const summary: RefreshSummary = {
    kind: full ? "full" : "incremental",
    as_of: new Date(now).toISOString(),
    wallets: result.wallets.size,
    markets: result.markets,
    fills_read: result.fillsRead,
    duration_ms: Math.round(performance.now() - started),
    extensions,
  };
  w.prepare(
    "INSERT INTO refresh_runs (kind, started_at, finished_at, summary) VALUES (?, ?, ?, ?)",
  ).run(summary.kind, now, now, JSON.stringify(summary));
  return summary;
}

interface PassResult {
  wallets: Set<string>;
  markets: number;
  fillsRead: number;
}

function contextFor(db: Db, now: number): WalletContext {
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
    prices: createPriceLookup(db),
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
  const lookup = db.writer.prepare<[string], { one: number }>(
    `SELECT 1 AS one FROM investigation_wallets iw JOIN investigations i ON i.id = iw.investigation_id
      WHERE iw.address = ? AND i.status = 'open' AND i.active = 1 LIMIT 1`,
  );
  return (address) => lookup.get(address) !== undefined;
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
  each: (key: K, fills: Fill[]) => void,
): number {
  let current: K | undefined;
  let group: Fill[] = [];
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
 * Runs a bulk rewrite of the read-model tables with their secondary indexes dropped, then
 * recreates each index from its own stored definition: building an index once over sorted rows
 * is far cheaper than updating it row by row. All inside the caller's transaction, so readers
 * keep the previous tables, indexes included, until it commits.
 */
function withoutSecondaryIndexes<T>(db: Db, work: () => T): T {
  const w = db.writer;
  const indexes = w
    .prepare<[string], { name: string; sql: string }>(
      `SELECT name, sql FROM sqlite_master
        WHERE type = 'index' AND sql IS NOT NULL
          AND tbl_name IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(REBUILT_TABLES));
  for (const index of indexes) w.exec(`DROP INDEX "${index.name}"`);
  const result = work();
  for (const index of indexes) w.exec(index.sql);
  return result;
}

function fullRebuild(db: Db, now: number): PassResult {
  return withoutSecondaryIndexes(db, () => rebuildAll(db, now));
}

function rebuildAll(db: Db, now: number): PassResult {
  const writer = createModelWriter(db);
  writer.clearAll();
  const ctx = contextFor(db, now);
  const wallets = new Set<string>();
  // Trades are read through the reader: better-sqlite3 cannot write on a connection while one
  // of its statements is being iterated. We hold the write lock, so both see the same trades.
  const byWallet = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM trades ORDER BY wallet, ts, id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  let fillsRead = forEachGroup(
    byWallet,
    (r) => r[0],
    (wallet, fills) => {
      writer.wallet(walletModel(wallet, fills, ctx), true);
      wallets.add(wallet);
    },
  );
  const standing = standings(db);
  let markets = 0;
  const byMarket = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM trades ORDER BY market_id, ts, id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  fillsRead += forEachGroup(
    byMarket,
    (r) => r[1],
    (marketId, fills) => {
      const model = marketModel(fills, now, (wallet) => standing.get(wallet));
      writer.market(marketId, model.stats, model.hours, true);
      markets += 1;
    },
  );
  db.writer.exec(`INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
    SELECT category, count(*), sum(won), CAST(sum(won) AS REAL) / count(*)
      FROM wallet_bets WHERE resolved = 1 AND category IS NOT NULL GROUP BY category`);
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  return { wallets, markets, fillsRead };
}

function incremental(db: Db, now: number, lastRun: number): PassResult {
  const w = db.writer;
  const writer = createModelWriter(db);
  const ctx = contextFor(db, now);
  const ids = (sql: string, ...params: unknown[]) =>
    w
      .prepare(sql)
      .pluck()
      .all(...params) as (string | number)[];

  const dirtyMarkets = new Set(ids("SELECT market_id FROM dirty_markets") as number[]);
  const wallets = new Set(ids("SELECT address FROM dirty_wallets") as string[]);
  const betsInMarket = w.prepare("SELECT wallet FROM wallet_bets WHERE market_id = ?").pluck();
  for (const market of dirtyMarkets)
    for (const wallet of betsInMarket.all(market) as string[]) wallets.add(wallet);
  // Entries that turned 24 hours old since the last run now have a 24-hour-later price.
  for (const wallet of ids(
    "SELECT DISTINCT wallet FROM trades WHERE ts > ? AND ts <= ?",
    lastRun - DAY_MS,
    now - DAY_MS,
  ) as string[]) {
    wallets.add(wallet);
  }

  const oldStanding = w.prepare<[string], { bwr: number | null; volume: number; type: string }>(
    "SELECT bayesian_win_rate AS bwr, total_volume AS volume, wallet_type AS type FROM wallet_stats WHERE address = ?",
  );
  const marketsOf = w.prepare("SELECT market_id FROM wallet_bets WHERE wallet = ?").pluck();
  const oldBets = w.prepare<[string], { category: string; won: number }>(
    "SELECT category, won FROM wallet_bets WHERE wallet = ? AND resolved = 1 AND category IS NOT NULL",
  );
  const fillsOf = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM trades WHERE wallet = ? ORDER BY ts, id`)
    .raw();
  const baseRateDelta = new Map<string, { bets: number; wins: number }>();
  const bump = (category: string, bets: number, wins: number) => {
    const d = baseRateDelta.get(category) ?? { bets: 0, wins: 0 };
    d.bets += bets;
    d.wins += wins;
    baseRateDelta.set(category, d);
  };

  const marketsToRebuild = new Set(dirtyMarkets);
  let fillsRead = 0;
  for (const wallet of wallets) {
    const before = oldStanding.get(wallet);
    const previousMarkets = marketsOf.all(wallet) as number[];
    for (const bet of oldBets.all(wallet)) bump(bet.category, -1, -bet.won);
    const fills = (fillsOf.all(wallet) as FillRow[]).map(toFill);
    fillsRead += fills.length;
    const model = walletModel(wallet, fills, ctx);
    writer.wallet(model);
    for (const bet of model.bets)
      if (bet.resolved === 1 && bet.category !== null) bump(bet.category, 1, bet.won ?? 0);
    const after = model.stats;
    const changed =
      !before ||
      before.bwr !== after.bayesian_win_rate ||
      before.volume > 50_000 !== after.total_volume > 50_000 ||
      (before.type === "insider") !== (after.wallet_type === "insider");
    if (
      changed &&
      (after.total_volume > 50_000 ||
        after.wallet_type === "insider" ||
        (before && (before.volume > 50_000 || before.type === "insider")))
    ) {
      for (const m of previousMarkets) marketsToRebuild.add(m);
      for (const bet of model.bets) marketsToRebuild.add(bet.market_id);
    }
  }
  // Fills leaving the 30-day sentiment window since the last run.
  for (const market of ids(
    "SELECT DISTINCT market_id FROM trades WHERE ts > ? AND ts <= ?",
    lastRun - SENTIMENT_WINDOW_MS,
    now - SENTIMENT_WINDOW_MS,
  ) as number[]) {
    marketsToRebuild.add(market);
  }

  const standing = standings(db);
  const fillsOfMarket = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM trades WHERE market_id = ? ORDER BY ts, id`)
    .raw();
  for (const marketId of marketsToRebuild) {
    const fills = (fillsOfMarket.all(marketId) as FillRow[]).map(toFill);
    fillsRead += fills.length;
    const model = marketModel(fills, now, (wallet) => standing.get(wallet));
    writer.market(marketId, model.stats, model.hours);
  }

  const upsertRate = w.prepare<[{ category: string; bets: number; wins: number }]>(
    `INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
     VALUES (@category, @bets, @wins, NULL)
     ON CONFLICT (category) DO UPDATE SET resolved_bets = resolved_bets + @bets, wins = wins + @wins`,
  );
  for (const [category, d] of baseRateDelta) upsertRate.run({ category, ...d });
  w.exec(`DELETE FROM category_base_rates WHERE resolved_bets <= 0;
    UPDATE category_base_rates SET base_rate = CAST(wins AS REAL) / resolved_bets;`);
  w.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  return { wallets, markets: marketsToRebuild.size, fillsRead };
}
