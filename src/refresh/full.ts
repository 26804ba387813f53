/**
 * The full rebuild: every read-model table rewritten from all trades. The models are built in a
 * worker thread (workers/full.ts, full-models.ts) while this thread, the writer, stores their rows
 * into emptied tables (full-rows.ts).
 */
import { availableParallelism } from "node:os";
import { type Db, overridePragmas, TEMP_STORE_FILE } from "../db/open";
import { fullTableWriter, packedValue } from "./full-rows";
import { type PassResult, type Stopwatch, stopwatch } from "./pass";
import { fullModelsInWorker } from "./workers/full";
import { FULL_REBUILD_TABLES } from "./writer";

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
 * Tables the wallet pass fills, whole once it ends, whose indexes are built while the market pass
 * runs. Not `wallet_bets`: its index (nine million entries on the large world, 7 s) sorted beside
 * the market pass took the rebuild's peak RSS from about 920 MB to 1,046.
 */
const WALLET_PASS_TABLES = ["wallet_stats", "wallet_category_stats", "wallet_timing"];

/**
 * Runs a bulk rewrite of the read-model tables on empty copies of them with no secondary
 * indexes, then recreates each index from its own stored definition: building an index once
 * over sorted rows is far cheaper than updating it row by row. The old tables are dropped, not
 * emptied: DELETE removes rows one at a time (83 s for the large world's nine million bets and
 * their indexes), DROP frees whole pages (3 s). All inside the caller's transaction, so readers
 * keep the previous tables, indexes included, until it commits.
 *
 * `work` gets `buildEarlyIndex`, which builds the next index of the wallet pass's tables and says
 * whether there was one: the market pass calls it when the writer would otherwise wait for rows.
 */
function onEmptyTables<T>(
  db: Db,
  watch: Stopwatch,
  work: (buildEarlyIndex: () => boolean) => T,
): T {
  const w = db.writer;
  const schema = (type: "table" | "index") =>
    w
      .prepare<[string, string], { name: string; tbl_name: string; sql: string }>(
        `SELECT name, tbl_name, sql FROM sqlite_master
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
  // The wallet pass's tables' indexes, in the order of WALLET_PASS_TABLES.
  const early = indexes
    .filter((index) => WALLET_PASS_TABLES.includes(index.tbl_name))
    .sort(
      (a, b) =>
        WALLET_PASS_TABLES.indexOf(a.tbl_name) - WALLET_PASS_TABLES.indexOf(b.tbl_name) ||
        a.name.localeCompare(b.name),
    );
  const built = new Set<string>();
  let earlyMs = 0;
  const result = work(() => {
    const next = early.find((index) => !built.has(index.name));
    if (next === undefined) return false;
    const from = performance.now();
    w.exec(next.sql);
    earlyMs += performance.now() - from;
    built.add(next.name);
    return true;
  });
  watch.phases.rows_early_indexes = Math.round(earlyMs);
  watch.phases.early_indexes = built.size;
  for (const index of indexes) {
    if (!built.has(index.name)) w.exec(index.sql);
  }
  watch.lap("create_indexes");
  return result;
}

export function fullRebuild(db: Db, now: number): PassResult {
  const watch = stopwatch();
  const result = onEmptyTables(db, watch, (buildEarlyIndex) =>
    rebuildAll(db, now, watch, buildEarlyIndex),
  );
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
  const restores = connections.map((c) =>
    overridePragmas(c, { temp_store: TEMP_STORE_FILE, mmap_size: 0, threads: SORTER_THREADS }),
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

function rebuildAll(db: Db, now: number, watch: Stopwatch, buildEarlyIndex: () => boolean) {
  db.writer.exec("DELETE FROM category_base_rates");
  const write = fullTableWriter(db);
  const walletStatsAddress = FULL_REBUILD_TABLES.wallet_stats.indexOf("address");
  const walletStatsWidth = FULL_REBUILD_TABLES.wallet_stats.length;
  const wallets = new Set<string>();
  // The worker reads the database as committed before this transaction: the read models this
  // transaction has just dropped are still there for it (compacted markets' frozen rows).
  const models = fullModelsInWorker(
    db,
    now,
    SORTER_THREADS,
    (table, pack) => {
      write(table, pack);
      if (table === "wallet_stats") {
        for (let at = walletStatsAddress; at < pack.length; at += walletStatsWidth) {
          wallets.add(packedValue(pack, at) as string);
        }
      }
    },
    buildEarlyIndex,
  );
  watch.lap("rows");
  watch.phases.rows_series = models.seriesMs;
  watch.phases.rows_waiting = models.waitedMs.wallets + models.waitedMs.markets;
  watch.phases.rows_waiting_wallets = models.waitedMs.wallets;
  watch.phases.rows_waiting_markets = models.waitedMs.markets;
  for (const [phase, ms] of Object.entries(models.phases)) watch.phases[`models_${phase}`] = ms;
  // The worker counted every resolved bet by category as it built them: what
  // `SELECT category, count(*), sum(won), CAST(sum(won) AS REAL) / count(*) FROM wallet_bets
  //  WHERE resolved = 1 AND category IS NOT NULL GROUP BY category` gives, without reading the
  // nine million bets back on this thread.
  const baseRate = db.writer.prepare(
    "INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate) VALUES (?, ?, ?, ?)",
  );
  for (const { category, resolvedBets, wins } of models.categories) {
    baseRate.run(category, resolvedBets, wins, wins / resolvedBets);
  }
  db.writer.exec("DELETE FROM dirty_wallets; DELETE FROM dirty_markets;");
  watch.lap("base_rates");
  return { wallets, markets: models.markets, fillsRead: models.fillsRead };
}
