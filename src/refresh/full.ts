/**
 * The full rebuild: every read-model table rewritten from all trades, streamed twice (by wallet
 * and by market) along the key-only indexes of the compact fill store (sql/0010).
 */
import { type Db, overridePragmas } from "../db/open";
import { type MarketHourRow, type MarketStatsRow, marketModel } from "./market-model";
import {
  BET_FIELDS,
  betFromValues,
  contextFor,
  FILL_COLUMNS,
  FILLS_BY_MARKET,
  FILLS_BY_WALLET,
  type FillRow,
  type PassResult,
  type Stopwatch,
  standings,
  stopwatch,
  toFill,
} from "./pass";
import { type TradeFill, type WalletBetRow, walletModel } from "./wallet-model";
import { createModelWriter } from "./writer";

/** Streams fills grouped by a key column, calling `each` once per group with its fills as read. */
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
  "market_price_history",
];

/**
 * Runs a bulk rewrite of the read-model tables on empty copies of them with no secondary
 * indexes, then recreates each index from its own stored definition: building an index once
 * over sorted rows is far cheaper than updating it row by row. The old tables are dropped, not
 * emptied: DELETE removes rows one at a time (83 s for the large world's nine million bets and
 * their indexes), DROP frees whole pages (3 s). All inside the caller's transaction, so readers
 * keep the previous tables, indexes included, until it commits.
 */
function onEmptyTables<T>(db: Db, watch: Stopwatch, work: () => T): T {
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

export function fullRebuild(db: Db, now: number): PassResult {
  const watch = stopwatch();
  const result = onEmptyTables(db, watch, () => rebuildAll(db, now, watch));
  return { ...result, phases: watch.phases };
}

/**
 * Runs a full refresh's work (the rebuild, then the extensions that rebuild the funding graph in
 * full) with both connections set for bulk reads, and restores their settings after.
 * Rebuilding an index sorts every key of its table. The connections keep temporary data in
 * memory (fast for the small sorts of requests); here the sorter spills to temporary files,
 * or indexing nine million bets would need gigabytes of RAM.
 * The work also reads every trade and every bet, in index order: memory-mapping the file would
 * count every page read against the process's resident memory (up to the map's 256 MB on each
 * connection), for little gain over the OS page cache, so both connections read without it.
 */
export function withBulkReads<T>(db: Db, work: () => T): T {
  const connections = db.reader === db.writer ? [db.writer] : [db.writer, db.reader];
  // temp_store 1 is FILE.
  const restores = connections.map((c) => overridePragmas(c, { temp_store: 1, mmap_size: 0 }));
  try {
    return work();
  } finally {
    for (const restore of restores) restore();
  }
}

/** An iterator that can look at its next value without taking it. */
function peekable<T>(items: Iterator<T>) {
  let next = items.next();
  return {
    peek: (): T | undefined => (next.done ? undefined : next.value),
    take(): T {
      const value = next.value as T;
      next = items.next();
      return value;
    },
  };
}

/** A compacted market's frozen bets by wallet id (archived_bets), then market id. */
type ArchivedBetRow = [number, string, ...unknown[]];

function rebuildAll(db: Db, now: number, watch: Stopwatch) {
  const writer = createModelWriter(db);
  db.writer.exec("DELETE FROM category_base_rates");
  const ctx = contextFor(db, now, "series");
  watch.lap("context");
  const wallets = new Set<string>();
  // Compacted markets' bets are copied back from archived_bets, not recomputed (their fills are
  // gone): merged into the stream in wallet id order, so each wallet's model sees all its bets.
  const archived = peekable(
    db.reader
      .prepare(
        `SELECT a.wallet_id, w.address, ${BET_FIELDS.map((f) => `a.${f}`).join(", ")}
           FROM archived_bets a CROSS JOIN wallet_ids w ON w.id = a.wallet_id
          ORDER BY a.wallet_id, a.market_id`,
      )
      .raw()
      .iterate() as IterableIterator<ArchivedBetRow>,
  );
  const archivedUpTo = (walletId: number) => {
    while ((archived.peek()?.[0] ?? Number.POSITIVE_INFINITY) < walletId) {
      const first = archived.peek()!;
      const bets: WalletBetRow[] = [];
      while (archived.peek()?.[0] === first[0]) bets.push(betFromValues(archived.take().slice(2)));
      buildWallet(first[0], first[1], [], bets);
    }
    const bets: WalletBetRow[] = [];
    while (archived.peek()?.[0] === walletId) bets.push(betFromValues(archived.take().slice(2)));
    return bets;
  };
  const buildWallet = (
    walletId: number,
    wallet: string,
    fills: TradeFill[],
    archivedBets: WalletBetRow[],
  ) => {
    const model = walletModel(wallet, fills, ctx, archivedBets);
    // A wallet whose only fills are kept ones of compacted markets has its bets archived.
    if (model.bets.length === 0) return;
    writer.wallet(walletId, model, model.bets);
    wallets.add(wallet);
  };
  // Trades are read through the reader: better-sqlite3 cannot write on a connection while one
  // of its statements is being iterated. We hold the write lock, so both see the same trades.
  // In wallet id order, which is wallet_bets' key order: its rows are appended, never inserted
  // into the middle of a page.
  const byWallet = db.reader
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_WALLET}
        ORDER BY f.wallet_id, f.market_id, f.ts, f.id`,
    )
    .raw()
    .iterate() as IterableIterator<FillRow>;
  let fillsRead = forEachGroup(
    byWallet,
    (r) => r[9],
    (walletId, fills) => buildWallet(walletId, fills[0]!.wallet, fills, archivedUpTo(walletId)),
  );
  archivedUpTo(Number.POSITIVE_INFINITY);
  watch.lap("wallets");
  const standing = standings(db);
  let markets = 0;
  // Compacted markets' stats and hours are copied back from the archive, in market id order
  // with the others.
  const archivedMarkets = peekable(
    db.reader
      .prepare<[], MarketStatsRow & { market_id: number }>(
        "SELECT * FROM archived_market_stats ORDER BY market_id",
      )
      .iterate(),
  );
  const archivedHours = db.reader.prepare<[number], MarketHourRow>(
    `SELECT hour, volume, whale_volume, trade_count, net_flow, open_yes, close_yes
       FROM archived_market_hours WHERE market_id = ? ORDER BY hour`,
  );
  const archivedMarketsBefore = (marketId: number) => {
    while ((archivedMarkets.peek()?.market_id ?? Number.POSITIVE_INFINITY) < marketId) {
      const { market_id, ...stats } = archivedMarkets.take();
      writer.market(market_id, stats, archivedHours.all(market_id));
      markets += 1;
    }
  };
  const byMarket = db.reader
    .prepare(`SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_MARKET} ORDER BY f.market_id, f.ts, f.id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  fillsRead += forEachGroup(
    byMarket,
    (r) => r[1],
    (marketId, fills) => {
      archivedMarketsBefore(marketId);
      // A compacted market's kept fills (named by signals): its rows come from the archive.
      if (ctx.market(marketId)?.compacted) return;
      const model = marketModel(fills, now, (wallet) => standing.get(wallet));
      writer.market(marketId, model.stats, model.hours);
      markets += 1;
    },
  );
  archivedMarketsBefore(Number.POSITIVE_INFINITY);
  watch.lap("markets");
  db.writer.exec(`INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
    SELECT category, count(*), sum(won), CAST(sum(won) AS REAL) / count(*)
      FROM wallet_bets WHERE resolved = 1 AND category IS NOT NULL GROUP BY category`);
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  return { wallets, markets, fillsRead };
}
