import * as v from "valibot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Outcome, TradeSide } from "../../src/domain";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshReadModels } from "../../src/refresh/refresh";
import { MarketAnalysisSchema } from "../../src/schemas/markets";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-11-01T12:30:00.000Z");
const W1 = "0x00000000000000000000000000000000000000a1"; // whale, nothing resolved: weighs 0
const W2 = "0x00000000000000000000000000000000000000a2"; // whale with one resolved win
const R1 = "0x00000000000000000000000000000000000000b1"; // retail with one resolved win
const R2 = "0x00000000000000000000000000000000000000b2";

let t: TestApp;
let pro: string;
const ids = new Map<string, number>();

/** A trade in the market named by its slug (test/helpers/trades.ts). */
function trade(
  wallet: string,
  slug: string,
  outcome: Outcome,
  side: TradeSide,
  price: number,
  size: number,
  ts: number,
): NewTrade {
  return newTrade(wallet, ids.get(slug)!, outcome, side, price, size, ts);
}

function addTrades(rows: () => NewTrade[]) {
  const ingest = createIngest(t.db, t.clock);
  t.db.writer.transaction(() => ingest.insertTrades(rows()))();
  refreshReadModels(t.db, t.clock.now());
  t.app.readModelsChanged();
}

beforeEach(() => {
  t = createTestApp();
  t.clock.set(NOW);
  ids.clear();
  const ingest = createIngest(t.db, t.clock);
  t.db.writer.transaction(() => {
    for (const [slug, title, category] of [
      ["alpha", "Will BTC close above 100k?", "crypto"],
      ["beta", "Who wins the election?", "politics"],
      ["zeta", "Old question", "culture"],
      ["empty", "Nobody trades this", "crypto"],
    ] as const) {
      const marketId = addMarket(ingest, {
        slug,
        title,
        category,
        condition_id: `0x${(ids.size + 1).toString(16).padStart(64, "0")}`,
        created_at: NOW - 90 * DAY,
      });
      ids.set(slug, marketId);
    }
    ingest.resolveMarket(ids.get("zeta")!, "YES", NOW - 40 * DAY);
  })();
  addTrades(() => [
    trade(W2, "zeta", "YES", "BUY", 0.5, 120_000, NOW - 60 * DAY),
    trade(R1, "zeta", "YES", "BUY", 0.5, 100, NOW - 60 * DAY),
    trade(R1, "alpha", "YES", "BUY", 0.3, 100, NOW - 3 * DAY),
    trade(W1, "alpha", "YES", "BUY", 0.5, 200_000, NOW - 2 * HOUR),
    trade(W2, "alpha", "NO", "BUY", 0.4, 50_000, NOW - 90 * MIN),
    trade(R1, "alpha", "YES", "BUY", 0.6, 100, NOW - 30 * MIN),
    trade(R2, "alpha", "YES", "SELL", 0.62, 50, NOW - 10 * MIN),
    trade(R1, "beta", "NO", "BUY", 0.7, 1000, NOW - 5 * HOUR),
    trade(R2, "beta", "YES", "BUY", 0.35, 1000, NOW - 4 * HOUR),
  ]);
  pro = t.key("terminal_pro");
});
afterEach(() => t.close());

async function analysis(slug: string, key = pro) {
  const res = await t.get(`/v1/analyze/market/${slug}`, key);
  const body = (await res.json()) as any;
  if (res.status !== 200) return { status: res.status, body };
  return { status: res.status, body: v.parse(MarketAnalysisSchema, body) };
}

async function ok(slug: string) {
  const { status, body } = await analysis(slug);
  expect(status, JSON.stringify(body)).toBe(200);
  return body as v.InferOutput<typeof MarketAnalysisSchema>;
}

const statsOf = (address: string) =>
  t.db.reader.prepare("SELECT * FROM wallet_stats WHERE address = ?").get(address) as Record<
    string,
    any
  >;

describe("GET /v1/analyze/market/{slug}", () => {
  it("weighs held positions by smart_money_score × confidence", async () => {
    const body = await ok("alpha");
    const r1 = statsOf(R1);
    const w2 = statsOf(W2);
    // Both have one resolved bet: confidence 1/21 and a positive score. W1 and R2 have nothing
    // resolved (confidence 0), so they weigh nothing.
    expect(r1.confidence).toBeCloseTo(1 / 21, 12);
    expect(r1.smart_money_score).toBeGreaterThan(0);
    expect(statsOf(W1).confidence).toBe(0);
    // Held at cost: R1 200 YES at 0.45 = 90; W2 50,000 NO at 0.40 = 20,000.
    const yes = (r1.smart_money_score / 100) * r1.confidence * 90;
    const no = (w2.smart_money_score / 100) * w2.confidence * 20_000;
    const prob = yes / (yes + no);
    expect(body).toMatchObject({
      market_slug: "alpha",
      market_title: "Will BTC close above 100k?",
      market_category: "crypto",
      condition_id: `0x${"1".padStart(64, "0")}`,
      market_price: 0.62,
      sample_wallets: 2,
    });
    expect(body.smart_money_prob).toBeCloseTo(prob, 12);
    expect(body.divergence).toBeCloseTo(prob - 0.62, 12);
  });

  it("lists the top positions by volume with their wallets' figures", async () => {
    const body = await ok("alpha");
    expect(body.top_positions).toEqual([
      {
        address: W1,
        market_side: "YES",
        volume: 100_000,
        trade_count: 1,
        wallet_type: "whale",
        win_rate: null,
        total_pnl: null,
        platform_name: null,
      },
      {
        address: W2,
        market_side: "NO",
        volume: 20_000,
        trade_count: 1,
        wallet_type: "whale",
        win_rate: 1,
        total_pnl: null,
        platform_name: null,
      },
      {
        address: R1,
        market_side: "YES",
        volume: expect.closeTo(90, 9),
        trade_count: 2,
        wallet_type: "retail",
        win_rate: 1,
        total_pnl: statsOf(R1).total_pnl,
        platform_name: null,
      },
      expect.objectContaining({ address: R2, market_side: "NO", trade_count: 1 }),
    ]);
  });

  it("carries the 30-day whale sentiment and the last day's whale flow", async () => {
    const body = await ok("alpha");
    expect(body.sentiment).toEqual({
      sentiment: "bullish",
      yes_ratio: expect.closeTo(105 / 127, 12),
      yes_volume: 100_000,
      no_volume: 20_000,
      total_whale_volume: 120_000,
      unique_whales: 2,
    });
    const flow = body.flow_24h;
    expect(flow).toMatchObject({
      slug: "alpha",
      window_minutes: 1440,
      whales_only: true,
      relaxed: false,
      total_volume: 120_000,
      net_yes: 100_000,
      net_no: 20_000,
    });
    // 2-hour buckets: both whale fills land in the last one.
    expect(flow.buckets).toHaveLength(12);
    expect(flow.buckets[0]!.start).toBe(new Date(NOW - DAY).toISOString());
    expect(flow.buckets[11]).toMatchObject({
      yes_buy_usd: 100_000,
      no_buy_usd: 20_000,
      net_flow: 80_000,
      unique_wallets: 2,
      trades: 2,
    });
    // Share-weighted YES price: (200,000 × 0.50 + 50,000 × 0.60) / 250,000.
    expect(flow.buckets[11]!.avg_price).toBeCloseTo(0.52, 12);
  });

  it("falls back to every wallet's flow when no whale traded in the day, and says so", async () => {
    const body = await ok("beta");
    expect(body.flow_24h).toMatchObject({
      whales_only: false,
      relaxed: true,
      total_volume: 1050,
      net_yes: 350,
      net_no: 700,
    });
    expect(body.sentiment.sentiment).toBeNull();
    const empty = await ok("empty");
    expect(empty).toMatchObject({
      smart_money_prob: null,
      market_price: null,
      divergence: null,
      sample_wallets: 0,
      top_positions: [],
      flow_24h: { relaxed: true, total_volume: 0 },
    });
  });

  it("is 404 for an unknown market and 400 for an oversized slug", async () => {
    const missing = await analysis("no-such-market");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
    const huge = await analysis("x".repeat(301));
    expect(huge.status).toBe(400);
    expect(huge.body.error.message).toContain("slug");
  });

  it.each(["free", "terminal"] as const)("is terminal_pro only: 403 for %s", async (tier) => {
    const { status, body } = await analysis("alpha", t.key(tier));
    expect(status).toBe(403);
    expect(body.error.code).toBe("forbidden");
    expect(body.error.message).toContain("terminal_pro");
  });

  it("serves the same answer for 30 seconds, whatever arrives meanwhile", async () => {
    const first = await ok("alpha");
    addTrades(() => [trade(W1, "alpha", "YES", "BUY", 0.7, 10_000, NOW - MIN)]);
    expect(await ok("alpha")).toEqual(first);
    t.clock.advance(29_999);
    expect(await ok("alpha")).toEqual(first);
    t.clock.advance(1_001);
    const fresh = await ok("alpha");
    expect(fresh.flow_24h.total_volume).toBeCloseTo(127_000, 9);
    expect(fresh.market_price).toBe(0.7);
    expect(fresh.flow_24h.buckets[0]!.start).toBe(new Date(NOW + 31_000 - DAY).toISOString());
    // Another market's cache is its own.
    const beta = await ok("beta");
    expect(beta.market_slug).toBe("beta");
  });
});
