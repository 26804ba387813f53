import * as v from "valibot";
import { expect } from "vitest";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshNow } from "../../src/jobs/refresh";
import { walletSearchRefresh } from "../../src/refresh/wallet-search";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";

/**
 * A hand-built world whose every served figure is worked out in the comments, shared by the
 * wallet and leaderboard tests.
 */
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const NOW = Date.parse("2026-11-01T12:00:00.000Z");
export const T = NOW - 20 * DAY;
/** The platform PnL figure of B is as of this moment. */
export const B_PNL_AS_OF = NOW - 2 * DAY;

const addr = (hex: string) => `0x${hex.repeat(40 / hex.length)}`;
/** Retail, ledger PnL: four bets, three resolved, two won. */
export const A = addr("a");
/** Platform name and PnL figure; same side as A in m1 and m3, the other side in m2. */
export const B = addr("b");
/** Whale (100,000 USD), one open bet on the side opposite A's in m3. */
export const C = addr("c");
/** Same side as A in m1 only; named "deadbeef fan". */
export const D = addr("d");
/** Never traded, though the platform knows its name. */
export const E = addr("e");
/** Trades only after the refresh (the Bayesian fallback). */
export const F = addr("f");
/** Starts with 0xdead; one open bet in m3. */
export const G = `0xdead${"0".repeat(35)}1`;
/** Trades only after the refresh, with a platform PnL figure. */
export const H = addr("7");
/** Same side as A in m1, but 40 days ago: outside the correlation window. */
export const O = addr("0");
/** Whale with one resolved (won) bet in m1, on A's side. */
export const W = addr("9");

export const MARKETS = {
  m1: { slug: "will-a", category: "crypto", resolves: "YES" },
  m2: { slug: "will-b", category: "politics", resolves: "NO" },
  m3: { slug: "will-c", category: "sports", resolves: null },
  m4: { slug: "will-d", category: "crypto", resolves: "NO" },
} as const;
export type MarketKey = keyof typeof MARKETS;

let txn = 0;
/**
 * The counter leads, as a real hash's random bytes do: the ingest path's duplicate check looks a
 * fill up by the hash's first 8 bytes (sql/0010), so hashes that share them would make each insert
 * scan every earlier fill.
 */
export const txHash = (n: number) => `0x${n.toString(16).padStart(16, "0").padEnd(64, "0")}`;

export function fill(
  wallet: string,
  market: number,
  outcome: "YES" | "NO",
  side: "BUY" | "SELL",
  price: number,
  size: number,
  ts: number,
): NewTrade {
  return {
    tx_hash: txHash(++txn),
    log_index: 0,
    wallet,
    market_id: market,
    outcome,
    side,
    price,
    size,
    usd_value: price * size,
    ts,
  };
}

export interface World {
  t: TestApp;
  ids: Record<MarketKey, number>;
  /** Inserts fills through the ingest path (they mark their wallets dirty). */
  trade(rows: NewTrade[]): void;
  refresh(): void;
}

export function buildWorld(): World {
  const t = createTestApp();
  t.clock.set(NOW);
  t.app.refreshExtensions.push(walletSearchRefresh);
  const ingest = createIngest(t.db, t.clock);
  const ids = {} as Record<MarketKey, number>;
  const trade = (rows: NewTrade[]) => t.db.writer.transaction(() => ingest.insertTrades(rows))();
  t.db.writer.transaction(() => {
    for (const [key, m] of Object.entries(MARKETS) as [MarketKey, (typeof MARKETS)[MarketKey]][]) {
      const marketId = addMarket(ingest, {
        slug: m.slug,
        title: `${m.slug.toUpperCase()}?`,
        category: m.category,
        condition_id: `0x${key.padStart(64, "0")}`,
        created_at: T - 60 * DAY,
      });
      ids[key] = marketId;
    }
    const wallet = (
      address: string,
      name: string | null,
      pnl: number | null,
      asOf: number | null,
    ) =>
      ingest.upsertWallet({
        address,
        platform_name: name,
        platform_pnl: pnl,
        platform_pnl_as_of: asOf,
        created_at: null,
      });
    wallet(B, "CryptoWhale King", 1234.5, B_PNL_AS_OF);
    wallet(D, "deadbeef fan", null, null);
    wallet(E, "Ghost", null, null);
    wallet(F, "Fresh Fish", null, null);
    wallet(H, null, 50, NOW - DAY);
  })();
  const { m1, m2, m3, m4 } = ids;
  trade([
    // A: m1 YES 100 @ 0.40 (won: +60), m2 YES 50 @ 0.50 (lost: −25), m3 NO 100 @ 0.30 (open,
    // marked at B's later NO trade 0.35: +5), m4 NO 100 @ 0.20 (won: +80). Ledger PnL 120.
    fill(A, m1, "YES", "BUY", 0.4, 100, T),
    fill(A, m2, "YES", "BUY", 0.5, 50, T + HOUR),
    fill(A, m3, "NO", "BUY", 0.3, 100, T + 2 * HOUR),
    fill(A, m4, "NO", "BUY", 0.2, 100, T + 3 * HOUR),
    // B: m1 YES 40 @ 0.50 (won), m3 NO 100 @ 0.35 (open), m2 NO 10 @ 0.50 (won).
    fill(B, m1, "YES", "BUY", 0.5, 40, T + 4 * HOUR),
    fill(B, m3, "NO", "BUY", 0.35, 100, T + 5 * HOUR),
    fill(B, m2, "NO", "BUY", 0.5, 10, T + 6 * HOUR),
    // D: m1 YES 10 @ 0.60 (won: +4).
    fill(D, m1, "YES", "BUY", 0.6, 10, T + 7 * HOUR),
    // W: m1 YES 120,000 @ 0.50 (won), 60,000 USD: a whale.
    fill(W, m1, "YES", "BUY", 0.5, 120_000, T + 8 * HOUR),
    // G: m3 YES 10 @ 0.45 (open, marked at C's 0.50: +0.5).
    fill(G, m3, "YES", "BUY", 0.45, 10, T + 9 * HOUR),
    // O: m1 YES 10 @ 0.40, 40 days ago.
    fill(O, m1, "YES", "BUY", 0.4, 10, NOW - 40 * DAY),
    // C: m3 YES 200,000 @ 0.50: 100,000 USD.
    fill(C, m3, "YES", "BUY", 0.5, 200_000, NOW - DAY),
  ]);
  t.db.writer.transaction(() => {
    for (const [key, m] of Object.entries(MARKETS) as [MarketKey, (typeof MARKETS)[MarketKey]][]) {
      if (m.resolves) ingest.resolveMarket(ids[key], m.resolves, T + 10 * DAY);
    }
  })();
  const refresh = () => {
    refreshNow(t.app);
  };
  refresh();
  return { t, ids, trade, refresh };
}

/** The fills of F and H, made after the refresh: they have no read-model rows yet. */
export function tradeAfterRefresh(world: World): void {
  const { m1, m2 } = world.ids;
  world.trade([
    // F: m1 YES 10 @ 0.50 (won), m2 NO 20 @ 0.40 (won): 13 USD, 2 of 2.
    fill(F, m1, "YES", "BUY", 0.5, 10, NOW + HOUR),
    fill(F, m2, "NO", "BUY", 0.4, 20, NOW + HOUR),
    // H: m2 YES 10 @ 0.30 (lost): 3 USD, 0 of 1.
    fill(H, m2, "YES", "BUY", 0.3, 10, NOW + HOUR),
  ]);
}

export async function call(t: TestApp, path: string, key: string) {
  const res = await t.get(path, key);
  return { status: res.status, body: (await res.json()) as Record<string, any>, res };
}

/** A 200 whose body matches the endpoint's response schema; returns the parsed body. */
export async function ok<S extends v.GenericSchema>(
  t: TestApp,
  path: string,
  key: string,
  schema: S,
): Promise<v.InferOutput<S>> {
  const { status, body } = await call(t, path, key);
  expect({ path, status, body: status === 200 ? "…" : body }).toEqual({
    path,
    status: 200,
    body: "…",
  });
  return v.parse(schema, body);
}

/** Follows next_cursor to the end. */
export async function allPages(
  t: TestApp,
  path: string,
  key: string,
  schema: v.GenericSchema,
): Promise<{ rows: Record<string, any>[]; pages: number }> {
  const rows: Record<string, any>[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = (await ok(
      t,
      cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
      key,
      schema,
    )) as { data: Record<string, any>[]; next_cursor: string | null };
    rows.push(...page.data);
    cursor = page.next_cursor;
    pages += 1;
  } while (cursor !== null && pages < 10_000);
  return { rows, pages };
}

/** An error answer with the envelope, whose message contains `fragment`. */
export async function expectError(
  t: TestApp,
  path: string,
  key: string,
  status: number,
  fragment: string,
): Promise<void> {
  const { status: got, body, res } = await call(t, path, key);
  const code = { 400: "bad_request", 403: "forbidden", 404: "not_found" }[status];
  expect({ path, got, code: body.error?.code }).toEqual({ path, got: status, code });
  expect(body.error.message).toContain(fragment);
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
}

/** A wallet_stats row written directly (for the depth tests' hundreds of wallets). */
export function insertStats(
  t: TestApp,
  address: string,
  values: Record<string, unknown> = {},
): void {
  const row: Record<string, unknown> = {
    address,
    platform_name: null,
    trade_count: 1,
    total_bets: 1,
    resolved_bets: 0,
    wins: 0,
    win_rate: null,
    bayesian_win_rate: null,
    total_volume: 1,
    ledger_pnl: 0,
    total_pnl: 0,
    pnl_source: "ledger",
    pnl_as_of: null,
    markets_traded: 1,
    expected_wins: 0,
    p_value: null,
    z_score: null,
    counter_consensus_wins: 0,
    smart_money_score: 50,
    confidence: 0,
    breakdown: "{}",
    wallet_type: "retail",
    first_trade_at: T,
    last_trade_at: T,
    ...values,
  };
  const columns = Object.keys(row);
  t.db.writer
    .prepare(
      `INSERT INTO wallet_stats (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
    )
    .run(row);
}
