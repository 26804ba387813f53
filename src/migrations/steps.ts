import type { Connection } from "../db/open";
import { createPriceHistoryWriter, packPoints } from "../refresh/price-history";

/** A data step of a migration (`-- @step name`), run inside the migration's transaction. */
export type MigrationStep = (
  db: Connection,
  progress: (done: number, total: number) => void,
) => void;

const COPY_CHUNK = 100_000;
const HISTORY_CHUNK = 1_000;
const COMPACT_CHUNK = 250_000;

/**
 * A value in millionths when that is exact, else the value itself (sql/0010). Written as SQL so
 * the copy never leaves SQLite; src/ingest/fill-codec.ts is the same rule for the ingest path.
 */
const units = (column: string) =>
  `CASE WHEN abs(${column}) < 9e9 AND CAST(round(${column} * 1e6) AS INTEGER) / 1e6 = ${column}
     THEN CAST(round(${column} * 1e6) AS INTEGER) ELSE ${column} END`;

/**
 * 0010: the old text-keyed `trades` table into `fills`, in id order and in chunks, so progress
 * can be shown; the indexes are built after the copy (sorted builds, not random inserts).
 */
function copyFills(db: Connection, progress: (done: number, total: number) => void): void {
  const total = db.prepare("SELECT count(*) FROM trades").pluck().get() as number;
  progress(0, total);
  db.exec("INSERT INTO wallet_ids (address) SELECT DISTINCT wallet FROM trades ORDER BY wallet");
  const copy = db.prepare(
    `INSERT INTO fills (id, tx_hash, log_index, wallet_id, market_id, kind, price, size,
       usd_value, ts)
     SELECT t.id, unhex(substr(t.tx_hash, 3)), t.log_index, w.id, t.market_id,
       (t.outcome = 'NO') + 2 * (t.side = 'SELL'),
       ${units("t.price")}, ${units("t.size")}, ${units("t.usd_value")}, t.ts
       FROM trades t JOIN wallet_ids w ON w.address = t.wallet
      WHERE t.id > ? ORDER BY t.id LIMIT ${COPY_CHUNK}`,
  );
  const lastId = db.prepare("SELECT max(id) FROM fills").pluck();
  let done = 0;
  let after = 0;
  for (;;) {
    const copied = copy.run(after).changes;
    if (copied === 0) break;
    done += copied;
    after = lastId.get() as number;
    progress(done, total);
  }
  if (done !== total) throw new Error(`copied ${done} of ${total} trades: a hash is not hex`);
}

/** 0017: every traded market's price history, from its stored hours. */
function renderPriceHistories(
  db: Connection,
  progress: (done: number, total: number) => void,
): void {
  const markets = db
    .prepare(
      `SELECT id FROM markets m
        WHERE EXISTS (SELECT 1 FROM market_hours h WHERE h.market_id = m.id) ORDER BY id`,
    )
    .pluck()
    .all() as number[];
  if (markets.length === 0) return;
  const history = createPriceHistoryWriter(db);
  progress(0, markets.length);
  markets.forEach((marketId, i) => {
    history.fromStored(marketId);
    if ((i + 1) % 1000 === 0 || i + 1 === markets.length) progress(i + 1, markets.length);
  });
}

/**
 * 0020: each stored price history (price_history_text, 0019's rows set aside) deflated into the
 * new table. A database coming from before 0019 has its rows rendered by 0019's step, which
 * writes them deflated already: those are copied as they are.
 */
function deflatePriceHistories(
  db: Connection,
  progress: (done: number, total: number) => void,
): void {
  const total = db.prepare("SELECT count(*) FROM price_history_text").pluck().get() as number;
  if (total === 0) return;
  // In chunks by market id: a large world's histories are hundreds of MB of text.
  const chunk = db
    .prepare<[number], [number, number | null, number, string | Buffer]>(
      `SELECT market_id, through_hour, point_count, points FROM price_history_text
        WHERE market_id > ? ORDER BY market_id LIMIT ${HISTORY_CHUNK}`,
    )
    .raw();
  const put = db.prepare(
    `INSERT INTO market_price_history (market_id, through_hour, point_count, points)
     VALUES (?, ?, ?, ?)`,
  );
  progress(0, total);
  let done = 0;
  let after = Number.MIN_SAFE_INTEGER;
  for (;;) {
    const rows = chunk.all(after);
    if (rows.length === 0) break;
    for (const [marketId, through, count, points] of rows) {
      put.run(marketId, through, count, typeof points === "string" ? packPoints(points) : points);
      after = marketId;
    }
    done += rows.length;
    progress(done, total);
  }
}

/**
 * Copies a table set aside in key order (so its rowids are in key order) into its new layout:
 * `insert` is an INSERT … SELECT from `aside` that ends in `WHERE rowid > ? AND rowid <= ? ORDER
 * BY rowid`. In chunks, so progress can be shown, each appended after the last.
 */
function copyAsideInChunks(
  db: Connection,
  aside: string,
  insert: string,
  progress: (done: number, total: number) => void,
): void {
  const total = db.prepare(`SELECT count(*) FROM ${aside}`).pluck().get() as number;
  if (total === 0) return;
  const copy = db.prepare(insert);
  const lastRowid = db.prepare(`SELECT max(rowid) FROM ${aside}`).pluck().get() as number;
  progress(0, total);
  let done = 0;
  for (let after = 0; after < lastRowid; after += COMPACT_CHUNK) {
    done += copy.run(after, after + COMPACT_CHUNK).changes;
    progress(done, total);
  }
}

/** 0021: wallet_bets, set aside as bets_before_0021, into its compact layout (units above). */
function compactBets(db: Connection, progress: (done: number, total: number) => void): void {
  copyAsideInChunks(
    db,
    "bets_before_0021",
    `INSERT INTO wallet_bets (wallet_id, market_id, category, side_code, entry_price_units,
       buy_usd_units, volume_units, yes_flow_units, no_flow_units, yes_shares_units,
       no_shares_units, trade_count, two_sided, first_ts, entry_offset, last_offset, resolved, won,
       pnl_base, move_24h)
     SELECT wallet_id, market_id, category, side = 'NO', ${units("entry_price")},
       ${units("buy_usd")}, ${units("volume")}, ${units("yes_flow")}, ${units("no_flow")},
       ${units("yes_shares")}, ${units("no_shares")}, trade_count, two_sided, first_ts,
       entry_ts - first_ts, last_ts - first_ts, resolved, won, pnl_base, move_24h
       FROM bets_before_0021 WHERE rowid > ? AND rowid <= ? ORDER BY rowid`,
    progress,
  );
}

/** 0022: market_hours, set aside as hours_before_0022, into its compact layout (units above). */
function compactMarketHours(db: Connection, progress: (done: number, total: number) => void): void {
  copyAsideInChunks(
    db,
    "hours_before_0022",
    `INSERT INTO market_hours (market_id, hour, trade_count, volume_units, whale_volume_units,
       net_flow_units, open_yes_units, close_yes_units)
     SELECT market_id, hour, trade_count, ${units("volume")}, ${units("whale_volume")},
       ${units("net_flow")}, ${units("open_yes")}, ${units("close_yes")}
       FROM hours_before_0022 WHERE rowid > ? AND rowid <= ? ORDER BY rowid`,
    progress,
  );
}

export const migrationSteps: Record<string, MigrationStep> = {
  copy_fills: copyFills,
  render_price_histories: renderPriceHistories,
  deflate_price_histories: deflatePriceHistories,
  compact_bets: compactBets,
  compact_market_hours: compactMarketHours,
};
