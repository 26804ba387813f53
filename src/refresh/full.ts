/**
 * The full rebuild: every read-model table rewritten from all trades, streamed twice (by wallet
 * and by market), each time sorted by SQLite's sorter (ALL_FILLS in pass.ts).
 */
import { availableParallelism } from "node:os";
import { type Db, overridePragmas } from "../db/open";
import { type MarketHourRow, type MarketStatsRow, marketModel } from "./market-model";
import {
  ALL_FILLS,
  BET_FIELDS,
  betFromValues,
  type CountingWallet,
  completeSortedFill,
  contextFor,
  type FillRow,
  type PassResult,
  type Stopwatch,
  standings,
  stopwatch,
  toFill,
} from "./pass";
import { type TradeFill, type WalletBetRow, walletModel } from "./wallet-model";
import { createModelWriter } from "./writer";

/**
 * Streams fills grouped by a key column, calling `each` once per group with its fills as read.
 * The rows are ALL_FILLS' (pass.ts), without their wallet's name: `walletOf` gives it.
 */
function forEachGroup<K extends string | number>(
  rows: IterableIterator<FillRow>,
  keyOf: (row: FillRow) => K,
  walletOf: (row: FillRow) => string,
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
    group.push(toFill(completeSortedFill(row, walletOf(row))));
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
  // Timed with the drop that follows it.
  const frozen = setFrozenRowsAside(db);
  const result = onEmptyTables(db, watch, () => rebuildAll(db, now, watch, frozen));
  return { ...result, phases: watch.phases };
}

/**
 * Runs a full refresh's work (the rebuild, then the extensions that rebuild the funding graph in
 * full) with both connections set for bulk reads, and restores their settings after.
 * Rebuilding an index sorts every key of its table, and the passes sort every fill (ALL_FILLS in
 * pass.ts). The connections keep temporary data in memory (fast for the small sorts of
 * requests); here the sorter spills to temporary files, or indexing nine million bets would need
 * gigabytes of RAM, and it may start helper threads (`threads`, SORTER_THREADS), which sort runs
 * on the other cores while the connection's thread goes on reading.
 * The work also reads every trade and every bet: memory-mapping the file would count every page
 * read against the process's resident memory (up to the map's 256 MB on each connection), for
 * little gain over the OS page cache, so both connections read without it.
 */
export function withBulkReads<T>(db: Db, work: () => T): T {
  const connections = db.reader === db.writer ? [db.writer] : [db.writer, db.reader];
  // temp_store 1 is FILE.
  const restores = connections.map((c) =>
    overridePragmas(c, { temp_store: 1, mmap_size: 0, threads: SORTER_THREADS }),
  );
  try {
    return work();
  } finally {
    for (const restore of restores) restore();
  }
}

/**
 * Helper threads a bulk sort may start: one per core, at most 4. Measured on 2 cores, sorting
 * the large world's 10M fills by wallet took 22.5 s with one and 20.2 s with two (a third
 * thread on two cores still overlaps the reading with the sorting).
 */
const SORTER_THREADS = Math.min(4, availableParallelism());

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

/** market_hours as served: the key and MarketHourRow's fields. */
const SERVED_HOUR_COLUMNS =
  "market_id, hour, volume, whale_volume, trade_count, net_flow, open_yes, close_yes";

/**
 * Copies the compacted markets' rows of wallet_bets, market_stats and market_hours aside (fill
 * retention, src/refresh/retention.ts): their fills are gone, so the rebuild copies these rows
 * back instead of recomputing them. Plain tables, created and dropped inside the rebuild's
 * transaction: a temporary table would open the connection's temporary database, whose
 * temp_store the bulk reads change (sql/0010). Each is copied in the key order of its source,
 * the order the rebuild writes in, so it is read back by rowid without a sort. Returns whether
 * there are any.
 */
function setFrozenRowsAside(db: Db): boolean {
  const w = db.writer;
  w.exec(`DROP TABLE IF EXISTS frozen_bets; DROP TABLE IF EXISTS frozen_market_stats;
    DROP TABLE IF EXISTS frozen_market_hours;`);
  const any = w.prepare("SELECT 1 FROM markets WHERE compacted_at IS NOT NULL LIMIT 1").get();
  if (any === undefined) return false;
  const compacted = "SELECT id FROM markets WHERE compacted_at IS NOT NULL";
  // One pass along wallet_bets in key order: by the time most markets are compacted, most bets
  // are frozen, and seeking them market by market would then need a sort by wallet. Bets and
  // hours are copied as served (their generated columns, sql/0021 and 0022), which is what the
  // rebuild reads back and writes again; `*` would copy their stored columns too.
  w.exec(`CREATE TABLE frozen_bets AS SELECT wallet_id, ${BET_FIELDS.join(", ")}
      FROM wallet_bets NOT INDEXED
      WHERE market_id IN (${compacted}) ORDER BY wallet_id, market_id;
    CREATE TABLE frozen_market_stats AS SELECT * FROM market_stats
      WHERE market_id IN (${compacted}) ORDER BY market_id;
    CREATE TABLE frozen_market_hours AS SELECT ${SERVED_HOUR_COLUMNS} FROM market_hours
      WHERE market_id IN (${compacted}) ORDER BY market_id, hour;`);
  return true;
}

const FROZEN_CHUNK = 10_000;

/**
 * A frozen table's rows in rowid order (`sql` takes the last rowid read and a limit, and returns
 * the rowid first, as `rid`), read in chunks on the writer: its rows are not committed, so the
 * reader cannot see them, and a statement left iterating would keep the writer from writing.
 * `raw`: rows as arrays.
 */
function* frozenRows<Row>(db: Db, sql: string, raw = false): Generator<Row> {
  const page = db.writer.prepare<[number, number], Row>(sql).raw(raw);
  let after = 0;
  for (;;) {
    const rows = page.all(after, FROZEN_CHUNK);
    yield* rows;
    if (rows.length < FROZEN_CHUNK) return;
    const last = rows.at(-1)!;
    after = (raw ? (last as unknown[])[0] : (last as unknown as { rid: number }).rid) as number;
  }
}

function rebuildAll(db: Db, now: number, watch: Stopwatch, hasFrozen: boolean) {
  const writer = createModelWriter(db, { batchInserts: true });
  db.writer.exec("DELETE FROM category_base_rates");
  const ctx = contextFor(db, now, "series");
  watch.lap("context");
  const wallets = new Set<string>();
  // Compacted markets' bets are copied back as they were, not recomputed (their fills are gone):
  // merged into the stream in wallet id order, so each wallet's model sees all its bets.
  const frozen = peekable<[number, number, string, ...unknown[]]>(
    hasFrozen
      ? frozenRows(
          db,
          `SELECT f.rowid, f.wallet_id, w.address, ${BET_FIELDS.map((c) => `f.${c}`).join(", ")}
             FROM frozen_bets f CROSS JOIN wallet_ids w ON w.id = f.wallet_id
            WHERE f.rowid > ? ORDER BY f.rowid LIMIT +?`,
          true,
        )
      : [][Symbol.iterator](),
  );
  const frozenUpTo = (walletId: number) => {
    while ((frozen.peek()?.[1] ?? Number.POSITIVE_INFINITY) < walletId) {
      const [, id, address] = frozen.peek()!;
      const bets: WalletBetRow[] = [];
      while (frozen.peek()?.[1] === id) bets.push(betFromValues(frozen.take().slice(3)));
      buildWallet(id, address, [], bets);
    }
    const bets: WalletBetRow[] = [];
    while (frozen.peek()?.[1] === walletId) bets.push(betFromValues(frozen.take().slice(3)));
    return bets;
  };
  const buildWallet = (
    walletId: number,
    wallet: string,
    fills: TradeFill[],
    frozenBets: WalletBetRow[],
  ) => {
    const model = walletModel(wallet, fills, ctx, frozenBets);
    // A wallet whose only fills are kept ones of compacted markets has only frozen bets.
    if (model.bets.length === 0) return;
    writer.wallet(walletId, model, model.bets);
    wallets.add(wallet);
  };
  // Trades are read through the reader: better-sqlite3 cannot write on a connection while one
  // of its statements is being iterated. We hold the write lock, so both see the same trades.
  // In wallet id order, which is wallet_bets' key order: its rows are appended, never inserted
  // into the middle of a page.
  const byWallet = db.reader
    .prepare(`${ALL_FILLS} ORDER BY f.wallet_id, f.market_id, f.ts, f.id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  // Each wallet's address, once: its fills come together.
  const addressOf = db.writer
    .prepare<[number], string>("SELECT address FROM wallet_ids WHERE id = ?")
    .pluck();
  let addressFor = -1;
  let address = "";
  const walletAddress = (row: FillRow) => {
    if (row[9] !== addressFor) {
      addressFor = row[9];
      address = addressOf.get(addressFor)!;
    }
    return address;
  };
  let fillsRead = forEachGroup(
    byWallet,
    (r) => r[9],
    walletAddress,
    (walletId, fills) => buildWallet(walletId, fills[0]!.wallet, fills, frozenUpTo(walletId)),
  );
  frozenUpTo(Number.POSITIVE_INFINITY);
  // The market pass reads the wallets' standings back from wallet_stats.
  writer.flush();
  watch.lap("wallets");
  // The market pass names each fill's wallet by its id (as a string): a market's model only
  // counts distinct wallets and looks up their standing, so any one name per wallet does, and
  // the id needs no lookup per fill.
  const standing = new Map<string, CountingWallet>();
  for (const counting of standings(db).values()) {
    if (counting.walletId !== null) standing.set(String(counting.walletId), counting);
  }
  let markets = 0;
  // Compacted markets' stats and hours are copied back as they were, in market id order with
  // the others.
  type FrozenHour = MarketHourRow & { rid: number; market_id: number };
  const frozenMarkets = peekable(
    hasFrozen
      ? frozenRows<MarketStatsRow & { rid: number; market_id: number }>(
          db,
          "SELECT rowid AS rid, * FROM frozen_market_stats WHERE rowid > ? ORDER BY rowid LIMIT +?",
        )
      : [][Symbol.iterator](),
  );
  const frozenHours = peekable<FrozenHour>(
    hasFrozen
      ? frozenRows<FrozenHour>(
          db,
          "SELECT rowid AS rid, * FROM frozen_market_hours WHERE rowid > ? ORDER BY rowid LIMIT +?",
        )
      : [][Symbol.iterator](),
  );
  const frozenMarketsBefore = (marketId: number) => {
    while ((frozenMarkets.peek()?.market_id ?? Number.POSITIVE_INFINITY) < marketId) {
      const { rid: _, market_id, ...stats } = frozenMarkets.take();
      const hours: MarketHourRow[] = [];
      while ((frozenHours.peek()?.market_id ?? Number.POSITIVE_INFINITY) <= market_id) {
        const { rid: _r, market_id: of, ...hour } = frozenHours.take();
        if (of === market_id) hours.push(hour);
      }
      writer.market(market_id, stats, hours);
      markets += 1;
    }
  };
  const byMarket = db.reader
    .prepare(`${ALL_FILLS} ORDER BY f.market_id, f.ts, f.id`)
    .raw()
    .iterate() as IterableIterator<FillRow>;
  fillsRead += forEachGroup(
    byMarket,
    (r) => r[1],
    (r) => String(r[9]),
    (marketId, fills) => {
      frozenMarketsBefore(marketId);
      // A compacted market's kept fills (named by signals): its rows are the frozen ones.
      if (ctx.market(marketId)?.compacted) return;
      const model = marketModel(fills, now, (wallet) => standing.get(wallet));
      writer.market(marketId, model.stats, model.hours);
      markets += 1;
    },
  );
  frozenMarketsBefore(Number.POSITIVE_INFINITY);
  // The base rates below read the bets back.
  writer.flush();
  watch.lap("markets");
  db.writer.exec(`INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate)
    SELECT category, count(*), sum(won), CAST(sum(won) AS REAL) / count(*)
      FROM wallet_bets WHERE resolved = 1 AND category IS NOT NULL GROUP BY category`);
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  if (hasFrozen) {
    db.writer.exec(`DROP TABLE frozen_bets; DROP TABLE frozen_market_stats;
      DROP TABLE frozen_market_hours;`);
  }
  return { wallets, markets, fillsRead };
}
