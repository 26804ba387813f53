import type { PolymarketDeps } from "../../src/ingest/polymarket/context";
import type { Sleep } from "../../src/ingest/polymarket/limiter";
import { createTestApp, type TestApp } from "../helpers/app";
import type { FakeClock } from "../helpers/clock";

/** A sleep that moves the fake clock instead of waiting, and remembers every wait. */
export function fakeSleep(clock: FakeClock): Sleep & { waits: number[] } {
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    clock.advance(ms);
  };
  return Object.assign(sleep, { waits });
}

export interface Harness {
  t: TestApp;
  deps: PolymarketDeps;
  sleep: ReturnType<typeof fakeSleep>;
}

/** A migrated temp database, the app's ingest hooks, a fake clock and a fake sleep. */
export function harness(now = "2026-07-18T00:00:00Z"): Harness {
  const t = createTestApp();
  t.clock.set(now);
  const sleep = fakeSleep(t.clock);
  return {
    t,
    sleep,
    deps: {
      db: t.db,
      clock: t.clock,
      log: t.app.deps.log,
      fetch: globalThis.fetch,
      hooks: t.app.ingestHooks,
      sleep,
      random: () => 0.5,
    },
  };
}

export interface TradeRow {
  tx_hash: string;
  log_index: number;
  wallet: string;
  condition_id: string;
  outcome: string;
  side: string;
  price: number;
  size: number;
  usd_value: number;
  ts: number;
}

/** Every stored fill with its market's condition id, in key order (ids left out). */
export function storedTrades(t: TestApp): TradeRow[] {
  return t.db.reader
    .prepare(
      `SELECT t.tx_hash, t.log_index, t.wallet, m.condition_id, t.outcome, t.side, t.price,
         t.size, t.usd_value, t.ts
       FROM trades t JOIN markets m ON m.id = t.market_id ORDER BY t.tx_hash, t.log_index`,
    )
    .all() as TradeRow[];
}

export function stateOf(t: TestApp, key: string): unknown {
  const value = t.db.reader
    .prepare("SELECT value FROM ingest_state WHERE key = ?")
    .pluck()
    .get(key);
  return value === undefined ? undefined : JSON.parse(value as string);
}

export function count(t: TestApp, table: string): number {
  return t.db.reader.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
}
