import type * as v from "valibot";
import type { Db, Statement } from "../db/open";
import type { TradeSide } from "../domain";
import { badRequest } from "../errors";
import type { HistoryReader, SealedFill, SealedFilter } from "../history/reader";
import { filesForTx } from "../history/tx-keys";
import type { TradeSchema } from "../schemas/shared";

/** A fill as the API serves it: the response schema's type (src/schemas/shared.ts). */
export type Trade = v.InferOutput<typeof TradeSchema>;

type TradeRow = Omit<Trade, "trade_timestamp"> & { ts: number };

export interface TradeFilter {
  wallet?: string;
  conditionId?: string;
  side?: TradeSide;
  minUsd?: number;
  /** Inclusive epoch-ms bounds. */
  from?: number;
  to?: number;
}

const DAY_MS = 86_400_000;
export const MAX_TRADE_WINDOW_DAYS = 90;

/** The parameters of /v1/trades (and the MCP query_trades tool), already parsed. */
export interface TradeQueryInput {
  wallet?: string;
  market?: string;
  side?: TradeSide;
  min_bet?: number;
  /** Epoch ms. */
  start?: number;
  end?: number;
}

/**
 * The two rules for /v1/trades (docs/api.md, Parameters), shared by REST and MCP so both word them alike: a
 * time window needs both bounds and spans at most 90 days, and an unfiltered query is refused.
 */
export function tradeFilterOf(q: TradeQueryInput): TradeFilter {
  if ((q.start === undefined) !== (q.end === undefined)) {
    throw badRequest("a time window needs both start and end");
  }
  if (q.start !== undefined && q.end !== undefined) {
    if (q.end < q.start) throw badRequest("end must not be before start");
    if (q.end - q.start > MAX_TRADE_WINDOW_DAYS * DAY_MS) {
      throw badRequest(
        `the window from start to end must not exceed ${MAX_TRADE_WINDOW_DAYS} days`,
      );
    }
  }
  if (q.wallet === undefined && q.market === undefined && q.start === undefined) {
    throw badRequest("give at least one selective filter: wallet, market, or a start+end window");
  }
  return {
    wallet: q.wallet,
    conditionId: q.market,
    side: q.side,
    minUsd: q.min_bet,
    from: q.start,
    to: q.end,
  };
}

/** Keyset position: the (ts, id) of the last row of the previous page. */
export type TradeKey = [ts: number, id: number];

const COLUMNS = `t.id, t.tx_hash, t.log_index, t.wallet, m.slug AS market_slug, m.condition_id,
  t.outcome, CASE t.outcome WHEN 'YES' THEN o.yes_name ELSE o.no_name END AS outcome_name,
  t.side, t.price, t.size, t.usd_value, t.ts`;

/** Outcome names are kept beside the market (market_outcomes), when the ingester knew them. */
const MARKET_JOINS = `JOIN markets m ON m.id = t.market_id
  LEFT JOIN market_outcomes o ON o.market_id = t.market_id`;
const FROM = `trades t ${MARKET_JOINS}`;

/**
 * GET /v1/trades/{txHash}: the transaction's first fill. The hash is matched as stored (32 bytes),
 * through fills_by_tx's key, its first and last 4 bytes (sql/0030). Exported for the test that
 * holds it to that index. Bound as (txHash, txHash, txHash).
 */
export const TRADE_BY_TX_SQL = `SELECT ${COLUMNS} FROM ${FROM}
  WHERE t.id = (SELECT id FROM fills
                 WHERE substr(tx_hash, 1, 4) = substr(unhex(substr(?, 3)), 1, 4)
                   AND substr(tx_hash, 29, 4) = substr(unhex(substr(?, 3)), 29, 4)
                   AND tx_hash = unhex(substr(?, 3))
                 ORDER BY log_index LIMIT 1)`;

/** The least min_bet that fills_big_by_time (sql/0013) serves. */
export const BIG_FILL_USD = 1000;
/** sql/0013's WHERE, word for word, on the alias `big` (SQLite matches it to use the index). */
const BIG_FILL_PREDICATE = `CASE typeof(big.usd_value) WHEN 'integer'
  THEN big.usd_value >= 1000000000 ELSE big.usd_value >= 1000 END`;
/**
 * A window of big trades walks fills_big_by_time (only fills of at least BIG_FILL_USD) rather
 * than fills_by_time: the same rows in the same (ts, id) order, without reading the small fills
 * in between.
 */
const FROM_BIG = `fills big INDEXED BY fills_big_by_time
  CROSS JOIN trades t ON t.id = big.id ${MARKET_JOINS}`;

/**
 * Field by field, not `{ ...rest }`: an object built from a literal has a fixed shape, which
 * JSON.stringify walks markedly faster than a spread copy (pages of trades are the bulk of
 * several responses).
 */
export function toTrade(row: TradeRow): Trade {
  return {
    id: row.id,
    tx_hash: row.tx_hash,
    log_index: row.log_index,
    wallet: row.wallet,
    market_slug: row.market_slug,
    condition_id: row.condition_id,
    outcome: row.outcome,
    outcome_name: row.outcome_name,
    side: row.side,
    price: row.price,
    size: row.size,
    usd_value: row.usd_value,
    trade_timestamp: new Date(row.ts).toISOString(),
  };
}

export type TradeQueries = ReturnType<typeof createTradeQueries>;

/**
 * Every query walks an index in (ts, id) order and stops at the page size. Fills sealed into the
 * history (src/history/) are read back through `history` for the files the manifest says may
 * hold matches, and merged into the page in the same (ts, id) order: the same shapes, cursors
 * and order whichever place a fill is in.
 */
export function createTradeQueries(db: Db, history?: HistoryReader) {
  const r = db.reader;
  const byTx = r.prepare<[string, string, string], TradeRow>(TRADE_BY_TX_SQL);
  const marketIdByCondition = r.prepare<[string], { id: number }>(
    "SELECT id FROM markets WHERE condition_id = ?",
  );
  // One statement per combination of filters, prepared on first use and kept.
  const shapes = new Map<string, Statement<unknown[], TradeRow>>();
  const anySealed = r.prepare("SELECT EXISTS (SELECT 1 FROM history_partitions)").pluck();
  const sealedFilesFor = filesForTx(r);
  // Where a wallet's sealed fills are, file by file (sql/0036: from the frozen bets of each
  // file's markets, counting every fill it sealed, from the first to the last).
  const walletFiles = r.prepare<[string], Omit<SealedSource, "newest">>(
    `SELECT coalesce(p.wallet_file, p.file) AS file, h.first_ts AS firstTs,
            h.last_ts AS lastTs, h.fills AS fills
       FROM wallet_ids wi JOIN history_wallets h ON h.wallet_id = wi.id
       JOIN history_partitions p ON p.id = h.partition_id
      WHERE wi.address = ?`,
  );

  /**
   * The listed files that may hold fills matching the filter before the key: a market's in market
   * order (the row groups that hold it), the trades window's in time order (sql/0037: the row
   * groups around its time), each with its span.
   */
  function filesFor(
    filter: TradeFilter,
    marketId: number | undefined,
    after: TradeKey | undefined,
    floor: TradeKey | undefined,
  ): SpannedFile[] {
    const where: string[] = [];
    const params: Record<string, unknown> = {};
    if (marketId !== undefined) {
      where.push("p.id IN (SELECT partition_id FROM history_markets WHERE market_id = @marketId)");
      params.marketId = marketId;
    }
    if (filter.wallet !== undefined) {
      // The files holding the wallet's sealed fills (sql/0036).
      where.push(`p.id IN (SELECT h.partition_id FROM wallet_ids wi
                   JOIN history_wallets h ON h.wallet_id = wi.id
                  WHERE wi.address = @wallet)`);
      params.wallet = filter.wallet;
    }
    if (filter.from !== undefined) {
      where.push("p.max_ts >= @from");
      params.from = filter.from;
    }
    if (filter.to !== undefined) {
      where.push("p.min_ts <= @to");
      params.to = filter.to;
    }
    if (after !== undefined) {
      where.push("p.min_ts <= @keyTs");
      params.keyTs = after[0];
    }
    if (floor !== undefined) {
      where.push("p.max_ts >= @floorTs");
      params.floorTs = floor[0];
    }
    const file = marketId === undefined ? "coalesce(p.time_file, p.file)" : "p.file";
    const sql = `SELECT ${file} AS file, p.fills, p.min_ts AS minTs, p.max_ts AS maxTs
      FROM history_partitions p ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}`;
    return (prepared(sql) as unknown as Statement<unknown[], SpannedFile>).all(params);
  }

  /**
   * The files that may hold a wallet's sealed fills on its page, each the file's copy in wallet
   * order when it has one (sql/0034: the same rows, in the row group or two that hold the
   * wallet instead of spread over the file's markets), with when the wallet traded there.
   */
  function walletSources(
    filter: TradeFilter,
    after: TradeKey | undefined,
    floor: TradeKey | undefined,
  ): SealedSource[] {
    const low = Math.max(filter.from ?? -Infinity, floor?.[0] ?? -Infinity);
    const high = Math.min(filter.to ?? Infinity, after?.[0] ?? Infinity);
    return walletFiles
      .all(filter.wallet!)
      .filter((f) => f.lastTs >= low && f.firstTs <= high)
      .map((f) => ({ ...f, newest: Math.min(f.lastTs, high) }));
  }

  const marketsNamed = r.prepare<[string], MarketNames & { id: number }>(
    `SELECT m.id, m.slug AS market_slug, m.condition_id, o.yes_name, o.no_name
       FROM markets m LEFT JOIN market_outcomes o ON o.market_id = m.id
      WHERE m.id IN (SELECT value FROM json_each(?))`,
  );
  /** The names of the markets `ids`, in one read. */
  function marketNamesOf(ids: readonly number[]): Map<number, MarketNames> {
    const names = new Map<number, MarketNames>();
    if (ids.length === 0) return names;
    for (const { id, ...market } of marketsNamed.all(JSON.stringify([...new Set(ids)]))) {
      names.set(id, market);
    }
    return names;
  }

  /** A sealed fill as a stored one reads, its market's names from `markets` (marketNamesOf). */
  function fromHistory(fill: SealedFill, markets: Map<number, MarketNames>): TradeRow {
    const market = markets.get(fill.market_id);
    return {
      id: fill.id,
      tx_hash: fill.tx_hash,
      log_index: fill.log_index,
      wallet: fill.wallet,
      market_slug: market?.market_slug ?? "",
      condition_id: market?.condition_id ?? "",
      outcome: fill.outcome,
      outcome_name: (fill.outcome === "YES" ? market?.yes_name : market?.no_name) ?? null,
      side: fill.side,
      price: fill.price,
      size: fill.size,
      usd_value: fill.usd_value,
      ts: fill.ts,
    };
  }

  /** `work` in one read snapshot: a recent page and the files listed beside it agree. */
  function snapshot<T>(work: () => T): T {
    if (r.inTransaction) return work();
    r.exec("BEGIN");
    try {
      return work();
    } finally {
      r.exec("COMMIT");
    }
  }

  function statementFor(filter: TradeFilter, keyed: boolean) {
    if (
      filter.wallet !== undefined &&
      filter.conditionId === undefined &&
      filter.side === undefined &&
      filter.minUsd === undefined
    ) {
      return walletStatementFor(filter, keyed);
    }
    // A wallet's or a market's fills have indexes of their own; big trades across all fills
    // have fills_big_by_time, which keys the window and the order.
    const big =
      filter.minUsd !== undefined &&
      filter.minUsd >= BIG_FILL_USD &&
      filter.wallet === undefined &&
      filter.conditionId === undefined;
    const k = big ? "big" : "t";
    const where: string[] = big ? [BIG_FILL_PREDICATE] : [];
    if (filter.wallet !== undefined) where.push("t.wallet = +@wallet");
    if (filter.conditionId !== undefined) where.push("t.market_id = +@marketId");
    if (filter.side !== undefined) where.push("t.side = +@side");
    if (filter.minUsd !== undefined) where.push("t.usd_value >= +@minUsd");
    if (filter.from !== undefined) where.push(`${k}.ts >= +@from`);
    if (filter.to !== undefined) where.push(`${k}.ts <= +@to`);
    if (keyed) where.push(`(${k}.ts < +@keyTs OR (${k}.ts = +@keyTs AND ${k}.id < +@keyId))`);
    const sql = `SELECT ${COLUMNS} FROM ${big ? FROM_BIG : FROM}
      ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY ${k}.ts DESC, ${k}.id DESC LIMIT +@limit`;
    return prepared(sql);
  }

  /**
   * A wallet's fills newest first, with no filter on a stored amount or side: the page's ids
   * come from fills_by_wallet alone (wallet, market, time and the id are all in the index), and
   * only the page's rows are read. fills_by_wallet is in market order, so the wallet's fills are
   * sorted by time either way; reading each of a whale's thousands of rows for that sort cost
   * more than the sort.
   */
  function walletStatementFor(filter: TradeFilter, keyed: boolean) {
    const where = ["wi.address = +@wallet"];
    if (filter.from !== undefined) where.push("f.ts >= +@from");
    if (filter.to !== undefined) where.push("f.ts <= +@to");
    if (keyed) where.push("(f.ts < +@keyTs OR (f.ts = +@keyTs AND f.id < +@keyId))");
    return prepared(`SELECT ${COLUMNS}
      FROM (SELECT f.id FROM wallet_ids wi
              CROSS JOIN fills f INDEXED BY fills_by_wallet ON f.wallet_id = wi.id
             WHERE ${where.join(" AND ")}
             ORDER BY f.ts DESC, f.id DESC LIMIT +@limit) page
      CROSS JOIN trades t ON t.id = page.id ${MARKET_JOINS}
      ORDER BY t.ts DESC, t.id DESC`);
  }

  function prepared(sql: string) {
    let statement = shapes.get(sql);
    if (!statement) {
      statement = r.prepare(sql) as Statement<unknown[], TradeRow>;
      shapes.set(sql, statement);
    }
    return statement;
  }

  function recentPage(
    filter: TradeFilter,
    limit: number,
    after: TradeKey | undefined,
  ): { rows: TradeRow[]; marketId?: number } | undefined {
    let marketId: number | undefined;
    if (filter.conditionId !== undefined) {
      marketId = marketIdByCondition.get(filter.conditionId.toLowerCase())?.id;
      if (marketId === undefined) return undefined;
    }
    const params: Record<string, unknown> = {
      wallet: filter.wallet,
      marketId,
      side: filter.side,
      minUsd: filter.minUsd,
      from: filter.from,
      to: filter.to,
      keyTs: after?.[0],
      keyId: after?.[1],
      limit: limit + 1,
    };
    for (const name of Object.keys(params)) if (params[name] === undefined) delete params[name];
    return { rows: statementFor(filter, after !== undefined).all(params), marketId };
  }

  return {
    /** The fill with this hash; with several fills in one transaction, the lowest log index. */
    async byTxHash(txHash: string): Promise<Trade | undefined> {
      const hash = txHash.toLowerCase();
      const { row, files } = snapshot(() => {
        const row = byTx.get(hash, hash, hash);
        const files = row || !history || anySealed.get() === 0 ? [] : sealedFilesFor(hash);
        return { row, files };
      });
      if (row) return toTrade(row);
      const sealed = history ? await history.byTxHash(files, hash) : undefined;
      return sealed ? toTrade(fromHistory(sealed, marketNamesOf([sealed.market_id]))) : undefined;
    },

    /**
     * Newest first, keyset-paginated on (ts, id). Returns one row more than `limit` when a further
     * page exists, so callers know whether to hand out a cursor.
     */
    async page(
      filter: TradeFilter,
      limit: number,
      after?: TradeKey,
    ): Promise<{ rows: Trade[]; more: boolean }> {
      const need = limit + 1;
      const read = snapshot(() => {
        const recent = recentPage(filter, limit, after);
        if (!recent) return undefined;
        // A full page of recent fills reaches down to its last row: only sealed fills after it
        // can be on the page.
        const last = recent.rows.length >= need ? recent.rows[need - 1] : undefined;
        const floor: TradeKey | undefined = last ? [last.ts, last.id] : undefined;
        const sealed = history !== undefined && anySealed.get() === 1;
        const walletOnly = filter.wallet !== undefined && recent.marketId === undefined;
        const files = sealed && !walletOnly ? filesFor(filter, recent.marketId, after, floor) : [];
        const sources = sealed && walletOnly ? walletSources(filter, after, floor) : [];
        return { ...recent, files, sources, floor };
      });
      if (!read) return { rows: [], more: false };
      let rows = read.rows;
      if (history && (read.files.length > 0 || read.sources.length > 0)) {
        const sealedFilter: SealedFilter = {
          wallet: filter.wallet,
          marketId: read.marketId,
          side: filter.side,
          minUsd: filter.minUsd,
          from: filter.from,
          to: filter.to,
          before: after,
          after: read.floor,
        };
        const sealed =
          read.sources.length > 0
            ? await walletSealedPage(history, read.sources, sealedFilter, need)
            : read.marketId === undefined
              ? await windowSealedPage(history, read.files, sealedFilter, need)
              : await history.page(
                  read.files.map((f) => f.file),
                  sealedFilter,
                  need,
                );
        // Merged first, so only the sealed fills that stay on the page are made rows, with their
        // markets' names looked up once each (a whale's page spans many markets).
        const kept = [...rows, ...sealed].sort(newestFirst).slice(0, need);
        const markets = marketNamesOf(kept.filter(isSealed).map((fill) => fill.market_id));
        rows = kept.map((row) => (isSealed(row) ? fromHistory(row, markets) : row));
      }
      const more = rows.length > limit;
      return { rows: rows.slice(0, limit).map(toTrade), more };
    },
  };
}

/** A sealed fill rather than a stored one's row: rows name their market by slug, fills by id. */
const isSealed = (row: TradeRow | SealedFill): row is SealedFill => "market_id" in row;

/** What a trade row says of its market, beside the fill. */
type MarketNames = Omit<TradeRow, keyof SealedFill | "outcome_name"> & {
  yes_name: string | null;
  no_name: string | null;
};

const newestFirst = (a: { ts: number; id: number }, b: { ts: number; id: number }) =>
  b.ts - a.ts || b.id - a.id;

/** A listed file, its fills, and the times of its first and last. */
export interface SpannedFile {
  file: string;
  fills: number;
  minTs: number;
  maxTs: number;
}

/** The first step back in time of a window's read of the history, at least (windowSealedPage). */
const WINDOW_FIRST_STEP_MS = 60_000;
/**
 * Pages' worth of fills the first step back should hold at the files' mean rate. A row group of a
 * copy in time order spans hours, so a wider first step reads no more of it, and a second step
 * reads it again: on the large world, at 2 pages 13% of windows took a second step, at 8 2%.
 */
const WINDOW_FIRST_STEP_PAGES = 8;
/** How much longer each next step back is than the one before. */
const WINDOW_STEP_GROWTH = 8;

/**
 * The newest `need` sealed fills matching `filter` across every market, from `files` (each a
 * copy in time order, sql/0037, whose row groups DuckDB skips by their times). A query with no
 * lower time bound would read every row group below its key, so the read steps back in time:
 * first over the span that should hold WINDOW_FIRST_STEP_PAGES pages at the files' mean rate, then
 * over spans WINDOW_STEP_GROWTH times longer each, down to the filter's floor, until `need` are
 * found. The steps do not overlap and go newest first, so their fills come in page order.
 */
export async function windowSealedPage(
  history: HistoryReader,
  files: readonly SpannedFile[],
  filter: SealedFilter,
  need: number,
): Promise<SealedFill[]> {
  if (files.length === 0 || need <= 0) return [];
  const first = Math.min(...files.map((f) => f.minTs));
  const last = Math.max(...files.map((f) => f.maxTs));
  const fills = files.reduce((n, f) => n + f.fills, 0);
  const floor = Math.max(filter.from ?? first, filter.after?.[0] ?? first, first);
  let high = Math.min(filter.to ?? last, filter.before?.[0] ?? last, last);
  let width = Math.max(
    WINDOW_FIRST_STEP_MS,
    Math.ceil((WINDOW_FIRST_STEP_PAGES * need * (last - first + 1)) / fills),
  );
  const found: SealedFill[] = [];
  let continuing = false;
  while (found.length < need && high >= floor) {
    const low = Math.max(floor, high - width + 1);
    const overlapping = files.filter((f) => f.maxTs >= low && f.minTs <= high);
    if (overlapping.length > 0) {
      const step = { ...filter, from: low, to: high };
      const names = overlapping.map((f) => f.file);
      found.push(...(await history.page(names, step, need - found.length, { continuing })));
      continuing = true;
    }
    high = low - 1;
    width *= WINDOW_STEP_GROWTH;
  }
  return found;
}

/** A listed file holding some of a wallet's sealed fills, and when the wallet traded there. */
export interface SealedSource {
  file: string;
  firstTs: number;
  lastTs: number;
  fills: number;
  /** The newest time the page may show from it: its last fill, or the page's bound below that. */
  newest: number;
}

/**
 * The newest `need` sealed fills of a wallet matching `filter`, from `sources`, in at most two
 * reads. Each file read costs a query about 1.5 ms, found or not, so the first read takes the
 * files whose fills come newest until they hold `need` fills. The need-th fill found, if any, is
 * the page's floor: a file where the wallet's last fill is older cannot add to the page, so the
 * second read takes only the other files that reach above it (all of them when fewer were
 * found).
 */
export async function walletSealedPage(
  history: HistoryReader,
  sources: readonly SealedSource[],
  filter: SealedFilter,
  need: number,
): Promise<SealedFill[]> {
  if (sources.length === 0 || need <= 0) return [];
  const order = [...sources].sort((a, b) => b.newest - a.newest || (a.file < b.file ? -1 : 1));
  let first = 0;
  for (let fills = 0; first < order.length && (first === 0 || fills < need); first++) {
    fills += order[first]!.fills;
  }
  const found = await history.page(
    order.slice(0, first).map((s) => s.file),
    filter,
    need,
  );
  const floor = found.length >= need ? found[need - 1]! : undefined;
  const rest = order.slice(first).filter((s) => floor === undefined || s.lastTs >= floor.ts);
  if (rest.length === 0) return found;
  const more = await history.page(
    rest.map((s) => s.file),
    floor === undefined ? filter : { ...filter, after: [floor.ts, floor.id] },
    need,
    { continuing: true },
  );
  return [...found, ...more].sort(newestFirst).slice(0, need);
}
