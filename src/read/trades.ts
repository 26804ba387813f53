import type * as v from "valibot";
import type { Db, Statement } from "../db/open";
import type { TradeSide } from "../domain";
import { badRequest } from "../errors";
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

/** Every query walks an index in (ts, id) order and stops at the page size. */
export function createTradeQueries(db: Db) {
  const r = db.reader;
  const byTx = r.prepare<[string, string, string], TradeRow>(TRADE_BY_TX_SQL);
  const marketIdByCondition = r.prepare<[string], { id: number }>(
    "SELECT id FROM markets WHERE condition_id = ?",
  );
  // One statement per combination of filters, prepared on first use and kept.
  const shapes = new Map<string, Statement<unknown[], TradeRow>>();

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

  return {
    /** The fill with this hash; with several fills in one transaction, the lowest log index. */
    byTxHash(txHash: string): Trade | undefined {
      const hash = txHash.toLowerCase();
      const row = byTx.get(hash, hash, hash);
      return row ? toTrade(row) : undefined;
    },

    /**
     * Newest first, keyset-paginated on (ts, id). Returns one row more than `limit` when a further
     * page exists, so callers know whether to hand out a cursor.
     */
    page(filter: TradeFilter, limit: number, after?: TradeKey): { rows: Trade[]; more: boolean } {
      let marketId: number | undefined;
      if (filter.conditionId !== undefined) {
        marketId = marketIdByCondition.get(filter.conditionId.toLowerCase())?.id;
        if (marketId === undefined) return { rows: [], more: false };
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
      const rows = statementFor(filter, after !== undefined).all(params);
      const more = rows.length > limit;
      return { rows: rows.slice(0, limit).map(toTrade), more };
    },
  };
}
