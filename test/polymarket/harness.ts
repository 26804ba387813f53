import type { PolymarketDeps, PolymarketOptions } from "../../src/ingest/polymarket/context";
import type { Sleep } from "../../src/ingest/polymarket/limiter";
import { createTestApp, type TestApp } from "../helpers/app";
import type { FakeClock } from "../helpers/clock";
import { type SimOptions, type Simulator, startSimulator } from "../simulator/server";
import type { SimWorld } from "../simulator/world";

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

const simulated: { h: Harness; sim: Simulator }[] = [];

/**
 * A harness at `now` and a simulator serving the world `world` makes at that instant, both on the
 * harness's clock. A test file that opens them closes them with closeSimulated in its afterEach.
 */
export async function simulate(
  now: string,
  world: (now: number) => SimWorld,
  limits?: SimOptions["limits"],
): Promise<{ h: Harness; sim: Simulator }> {
  const h = harness(now);
  const sim = await startSimulator({
    world: world(h.t.clock.now()),
    now: () => h.t.clock.now(),
    limits,
  });
  simulated.push({ h, sim });
  return { h, sim };
}

/** Closes every simulator and harness simulate opened. */
export async function closeSimulated(): Promise<void> {
  for (const { h, sim } of simulated.splice(0)) {
    await sim.close();
    h.t.close();
  }
}

/** A round's options against a simulator's data API and Gamma, no node, from the hour before `now`. */
export const simulatorOptions = (
  sim: Simulator,
  now: string,
  extra: Partial<PolymarketOptions> = {},
): PolymarketOptions => ({
  dataUrl: sim.url,
  gammaUrl: sim.url,
  rpcUrl: null,
  since: Date.parse(now) - 3_600_000,
  leaderboardDepth: 50,
  ...extra,
});

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
