/**
 * The backtest's one seam onto the stored history (docs/methodology.md, "Backtest"): every fill
 * in (ts, id) order, every market with its resolution, and the signals the ingest path fired.
 * Nothing else in src/backtest/ reads the database, so when the fill history moves to another
 * store only this module changes.
 */

import type { Outcome, TradeSide } from "../analytics/fill";
import type { Connection } from "../db/open";

/** One fill as the backtest sees it: the analytics' Fill plus its id, which orders ties. */
export interface HistoryFill {
  id: number;
  wallet: string;
  marketId: number;
  outcome: Outcome;
  side: TradeSide;
  price: number;
  size: number;
  usd: number;
  ts: number;
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

/** Every fill, oldest first, ties in id order (the order the ledger and the read models use). */
export function* streamFills(db: Connection): Generator<HistoryFill> {
  const statement = db.prepare<[], HistoryFill>(
    `SELECT id, wallet, market_id AS marketId, outcome, side, price, size, usd_value AS usd, ts
       FROM trades ORDER BY ts, id`,
  );
  yield* statement.iterate();
}

/** How many fills streamFills will give: the in-memory index sizes its columns once. */
export function countFills(db: Connection): number {
  return db.prepare<[], number>("SELECT count(*) FROM fills").pluck().get() as number;
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
