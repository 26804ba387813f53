/**
 * The backtest's one seam onto the stored history (docs/methodology.md, "Backtest"): every fill
 * in (ts, id) order, every market with its resolution, and the signals the ingest path fired.
 * Nothing else in src/backtest/ reads the database or the fill history's Parquet files.
 */

import type { Fill, Outcome, TradeSide } from "../analytics/fill";
import type { Connection } from "../db/open";
import { historyTotals, withHistory } from "../history/store";
import { decodedSql } from "../ingest/fill-codec";
import { type FillSink, pushFill } from "./point-in-time";

/** One fill as the backtest sees it: the analytics' Fill plus its id, which orders ties. */
export interface HistoryFill extends Fill {
  id: number;
}

export interface HistoryMarket {
  id: number;
  slug: string;
  conditionId: string;
  category: string | null;
  createdAt: number | null;
  resolvedOutcome: Outcome | null;
  resolvedAt: number | null;
}

export interface HistorySignal {
  type: "whale" | "insider";
  wallet: string;
  score: number;
  outcome: string;
  side: TradeSide;
  price: number;
  usd: number;
  /** The time of the trade that fired it (epoch ms). */
  ts: number;
}

/**
 * Every fill, oldest first, ties in id order (the order the ledger and the read models use): the
 * database's, merged with `sealed`, the fills sealed into the fill history (loadSealedFills), in
 * the same order. Ids are shared by the two places, and a fill is in exactly one.
 */
export function* streamFills(
  db: Connection,
  sealed: readonly HistoryFill[] = [],
): Generator<HistoryFill> {
  const statement = db.prepare<[], HistoryFill>(
    `SELECT id, wallet, market_id AS marketId, outcome, side, price, size, usd_value AS usd, ts
       FROM trades ORDER BY ts, id`,
  );
  let next = 0;
  for (const fill of statement.iterate()) {
    while (next < sealed.length && before(sealed[next]!, fill)) yield sealed[next++]!;
    yield fill;
  }
  while (next < sealed.length) yield sealed[next++]!;
}

const before = (a: HistoryFill, b: HistoryFill) => a.ts < b.ts || (a.ts === b.ts && a.id < b.id);

/**
 * streamFills for the index (point-in-time.ts buildIndex): the same fills in the same order,
 * with the same numbers (the trades view's own conversions), read from the fills table itself as
 * arrays, each wallet's address looked up once: without the view's join and a string and an
 * object per fill, it reads the history about three times as fast.
 */
export function readFills(
  db: Connection,
  sealed: readonly HistoryFill[] = [],
): (sink: FillSink) => void {
  return (sink) => {
    const addresses: string[] = [];
    for (const [id, address] of db
      .prepare<[], [number, string]>("SELECT id, address FROM wallet_ids")
      .raw()
      .iterate()) {
      addresses[id] = address;
    }
    /** The sink's number of each wallet id, -1 before its first fill. */
    const numbers = new Int32Array(addresses.length).fill(-1);
    const statement = db
      .prepare<[], [number, number, number, number, number, number, number, number]>(
        `SELECT id, wallet_id, market_id, kind,
                ${decodedSql("price")}, ${decodedSql("size")}, ${decodedSql("usd_value")}, ts
           FROM fills ORDER BY ts, id`,
      )
      .raw();
    let next = 0;
    for (const [id, walletId, marketId, kind, price, size, usd, ts] of statement.iterate()) {
      while (next < sealed.length) {
        const s = sealed[next] as HistoryFill;
        if (!(s.ts < ts || (s.ts === ts && s.id < id))) break;
        pushFill(sink, s);
        next += 1;
      }
      let wallet = numbers[walletId] as number;
      if (wallet < 0) {
        wallet = sink.wallet(addresses[walletId] as string);
        numbers[walletId] = wallet;
      }
      sink.push(id, wallet, marketId, kind, price, size, usd, ts);
    }
    while (next < sealed.length) pushFill(sink, sealed[next++] as HistoryFill);
  };
}

/** The fills sealed into the fill history (src/history/), in (ts, id) order. */
export async function loadSealedFills(
  db: Connection,
  dbPath: string,
  memoryMb: number,
): Promise<HistoryFill[]> {
  return withHistory(db, dbPath, memoryMb, async (duck, relation) => {
    if (relation === null) return [];
    const result = await duck.runAndReadAll(
      `SELECT id, wallet, market_id, outcome, side, price, size, usd_value, ts
         FROM ${relation} ORDER BY ts, id`,
    );
    return result.getRowsJS().map(
      ([id, wallet, marketId, outcome, side, price, size, usd, ts]): HistoryFill => ({
        id: Number(id),
        wallet: wallet as string,
        marketId: Number(marketId),
        outcome: outcome as Outcome,
        side: side as TradeSide,
        price: price as number,
        size: size as number,
        usd: usd as number,
        ts: Number(ts),
      }),
    );
  });
}

/** How many fills streamFills will give, the history's included: the index sizes its columns once. */
export function countFills(db: Connection): number {
  const recent = db.prepare<[], number>("SELECT count(*) FROM fills").pluck().get() as number;
  return recent + historyTotals(db).fills;
}

/** Every market, resolved or not, by id. */
export function readMarkets(db: Connection): HistoryMarket[] {
  return db
    .prepare<[], HistoryMarket>(
      `SELECT id, slug, condition_id AS conditionId, category, created_at AS createdAt,
              resolved_outcome AS resolvedOutcome, resolved_at AS resolvedAt
         FROM markets ORDER BY id`,
    )
    .all();
}

/** The market a case names, by slug or condition id. */
export function findMarket(db: Connection, name: string): HistoryMarket | undefined {
  return db
    .prepare<[string, string], HistoryMarket>(
      `SELECT id, slug, condition_id AS conditionId, category, created_at AS createdAt,
              resolved_outcome AS resolvedOutcome, resolved_at AS resolvedAt
         FROM markets WHERE slug = ? OR condition_id = lower(?)`,
    )
    .get(name, name);
}

/** The whale and insider signals on a market's trades before `before`, oldest trade first. */
export function signalsBefore(db: Connection, marketId: number, before: number): HistorySignal[] {
  return db
    .prepare<[number, number], HistorySignal>(
      `SELECT s.type, s.wallet, s.score, s.outcome, s.side, s.price, s.bet_value AS usd, t.ts
         FROM signals s JOIN trades t ON t.id = s.trade_id
        WHERE s.market_id = ? AND t.ts < ?
        ORDER BY t.ts, s.trade_id, s.type`,
    )
    .all(marketId, before);
}
