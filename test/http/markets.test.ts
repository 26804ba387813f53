import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIngest } from "../../src/ingest/ingest";
import { createLedger } from "../../src/ingest/polymarket/ledger";
import { refreshReadModels } from "../../src/refresh/refresh";
import {
  MarketDetailSchema,
  MarketFlowSchema,
  MarketRankPageSchema,
  MarketSentimentSchema,
  MarketSignalSchema,
  MoversSchema,
} from "../../src/schemas/markets";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
// Half past the hour, so the window's alignment to whole hours shows.
const NOW = Date.parse("2026-11-01T12:30:00.000Z");
const W1 = "0x00000000000000000000000000000000000000a1"; // whale, nothing resolved
const W2 = "0x00000000000000000000000000000000000000a2"; // whale with one resolved win
const R1 = "0x00000000000000000000000000000000000000b1";
const R2 = "0x00000000000000000000000000000000000000b2";
const P = "0x00000000000000000000000000000000000000c1";
const iso = (ms: number) => new Date(ms).toISOString();

let t: TestApp;
let terminal: string;
const trade = newTrade;

/**
 * alpha: two whales and two retail wallets, all in the last 2 hours, plus an old retail buy
 * (the price before every window); beta: retail only; gamma: 2 trades (too few to move); eta
 * and theta: one trade each, 20 minutes after and 1 minute before the 24-hour window's first
 * hour; zeta: resolved long ago (gives W2 and R1 a win); p00..p24: one small trade each, for
 * paging; empty: never traded.
 */
function buildWorld() {
  t = createTestApp();
  t.clock.set(NOW);
  const ingest = createIngest(t.db, t.clock);
  const ids = new Map<string, number>();
  const market = (slug: string, title: string, category: string) => {
    const marketId = addMarket(ingest, {
      slug,
      title,
      category,
      condition_id: `0x${(ids.size + 1).toString(16).padStart(64, "0")}`,
      end_date: NOW + 30 * DAY,
      created_at: NOW - 90 * DAY,
    });
    ids.set(slug, marketId);
    return marketId;
  };
  t.db.writer.transaction(() => {
    const alpha = market("alpha", "Will BTC close above 100k?", "crypto");
    // As the live ingester keeps them: Polymarket's outcome names beside YES/NO.
    createLedger(t.db).setOutcomeNames(alpha, "Up", "Down");
    const beta = market("beta", "Who wins the ELECTION?", "politics");
    const gamma = market("gamma", "Cup final winner", "sports");
    const eta = market("eta", "Award show", "culture");
    const theta = market("theta", "Box office", "culture");
    const zeta = market("zeta", "Old question", "culture");
    market("empty", "Nobody trades this", "crypto");
    ingest.insertTrades([
      trade(W2, zeta, "YES", "BUY", 0.5, 120_000, NOW - 60 * DAY),
      trade(R1, zeta, "YES", "BUY", 0.5, 100, NOW - 50 * DAY),
      trade(R1, alpha, "YES", "BUY", 0.3, 100, NOW - 3 * DAY),
      trade(W1, alpha, "YES", "BUY", 0.5, 200_000, NOW - 2 * HOUR),
      trade(W2, alpha, "NO", "BUY", 0.4, 50_000, NOW - 90 * MIN),
      trade(R1, alpha, "YES", "BUY", 0.6, 100, NOW - 30 * MIN),
      trade(R2, alpha, "YES", "SELL", 0.62, 50, NOW - 10 * MIN),
      trade(R2, beta, "YES", "BUY", 0.5, 10, NOW - 30 * HOUR),
      trade(R1, beta, "NO", "BUY", 0.7, 1000, NOW - 5 * HOUR),
      trade(R2, beta, "YES", "BUY", 0.35, 1000, NOW - 4 * HOUR),
      trade(R1, beta, "NO", "BUY", 0.6, 500, NOW - 3 * HOUR),
      trade(R1, gamma, "YES", "BUY", 0.2, 100, NOW - 6 * HOUR),
      trade(R2, gamma, "YES", "BUY", 0.8, 100, NOW - 5 * HOUR),
      trade(P, eta, "YES", "BUY", 0.5, 4, NOW - DAY - 20 * MIN),
      trade(P, theta, "YES", "BUY", 0.5, 6, NOW - DAY - 31 * MIN),
    ]);
    for (let i = 0; i < 25; i++) {
      const id = market(`p${String(i).padStart(2, "0")}`, `Pager ${i}`, "economics");
      // Pairs of equal volume (1, 1, 2, 2, ... 13 USD), so the slug tie-break is exercised.
      ingest.insertTrades([
        trade(P, id, "YES", "BUY", 0.5, 2 * (Math.floor(i / 2) + 1), NOW - 6 * HOUR),
      ]);
    }
    ingest.resolveMarket(zeta, "YES", NOW - 40 * DAY);
  })();
  refreshReadModels(t.db, NOW);
  t.app.readModelsChanged();
  return ids;
}

beforeAll(() => {
  buildWorld();
  terminal = t.key("terminal");
});
afterAll(() => t.close());

async function call(path: string, key = terminal) {
  const res = await t.get(path, key);
  return { status: res.status, body: (await res.json()) as any };
}

/** A 200 whose body is exactly what the endpoint's published schema describes. */
async function ok<S extends v.GenericSchema>(path: string, schema: S, key = terminal) {
  const { status, body } = await call(path, key);
  expect(status, JSON.stringify(body)).toBe(200);
  return v.parse(schema, body) as v.InferOutput<S>;
}

describe("GET /v1/signals/market/{slug}", () => {
  it("serves whale sentiment and the whale-implied probability on a free key", async () => {
    const body = await ok("/v1/signals/market/alpha", MarketSignalSchema, t.key("free"));
    expect(body.market).toEqual({
      slug: "alpha",
      title: "Will BTC close above 100k?",
      category: "crypto",
      condition_id: `0x${"1".padStart(64, "0")}`,
    });
    // Whale flows: W1 100,000 YES at weight 0.5 (nothing resolved); W2 20,000 NO at its
    // Bayesian win rate (1 + 10) / (1 + 20) = 11/21. yes_ratio = 50,000 / (50,000 + 20,000 ×
    // 11/21) = 105/127. Positions give the same share; the last YES trade is 0.62.
    expect(body.sentiment).toEqual({
      direction: "bullish",
      yes_ratio: expect.closeTo(105 / 127, 12),
      yes_volume: 100_000,
      no_volume: 20_000,
      total_whale_volume: 120_000,
      unique_whales: 2,
    });
    expect(body.smart_money_probability).toEqual({
      yes_implied_prob: expect.closeTo(105 / 127, 12),
      no_implied_prob: expect.closeTo(22 / 127, 12),
      current_price: 0.62,
      edge: expect.closeTo(105 / 127 - 0.62, 12),
      samples: 2,
      unique_wallets: 2,
    });
  });

  it("answers nulls for a market nobody traded, 404 for an unknown slug", async () => {
    const body = await ok("/v1/signals/market/empty", MarketSignalSchema);
    expect(body.sentiment).toEqual({
      direction: null,
      yes_ratio: null,
      yes_volume: null,
      no_volume: null,
      total_whale_volume: null,
      unique_whales: null,
    });
    expect(body.smart_money_probability).toBeNull();
    const missing = await call("/v1/signals/market/no-such-market");
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: "not_found" });
    expect(missing.body.error.message).toContain("no-such-market");
  });
});

describe("GET /v1/markets/{slug}/sentiment", () => {
  it("serves the Sentiment fields plus implied_probability", async () => {
    const body = await ok("/v1/markets/alpha/sentiment", MarketSentimentSchema);
    expect(Object.keys(body).sort()).toEqual([
      "implied_probability",
      "no_volume",
      "sentiment",
      "total_whale_volume",
      "unique_whales",
      "yes_ratio",
      "yes_volume",
    ]);
    expect(body).toMatchObject({ sentiment: "bullish", yes_volume: 100_000, unique_whales: 2 });
    expect(body.yes_ratio).toBeCloseTo(105 / 127, 12);
    expect(body.implied_probability?.current_price).toBe(0.62);
    const beta = await ok("/v1/markets/beta/sentiment", MarketSentimentSchema);
    // No whale in beta: no sentiment, but the market's price is known.
    expect(beta).toMatchObject({ sentiment: null, yes_ratio: null, total_whale_volume: null });
    expect(beta.implied_probability).toMatchObject({ yes_implied_prob: null, current_price: 0.35 });
    expect((await call("/v1/markets/nope/sentiment")).status).toBe(404);
  });
});

describe("GET /v1/markets/{slug}", () => {
  it("serves totals, holders by side and hourly price history", async () => {
    const body = await ok("/v1/markets/alpha", MarketDetailSchema);
    expect(body).toMatchObject({
      slug: "alpha",
      category: "crypto",
      resolved_outcome: null,
      outcome_names: { yes: "Up", no: "Down" },
    });
    expect(body.stats).toEqual({
      volume: expect.closeTo(30 + 100_000 + 20_000 + 60 + 31, 9),
      trade_count: 5,
      unique_wallets: 4,
      last_price: 0.62,
      last_trade_at: iso(NOW - 10 * MIN),
      // The 24 whole hours before 12:00 plus 12:00-12:30: everything but the 3-day-old buy.
      volume_24h: expect.closeTo(100_000 + 20_000 + 60 + 31, 9),
      trade_count_24h: 4,
      end_date: iso(NOW + 30 * DAY),
      created_at: iso(NOW - 90 * DAY),
      resolved_at: null,
    });
    const w = t.db.reader.prepare("SELECT * FROM wallet_stats WHERE address = ?");
    const w1 = w.get(W1) as any;
    expect(body.top_yes_holders).toEqual([
      {
        address: W1,
        shares: 200_000,
        entry_price: 0.5,
        position_usd: 100_000,
        volume: 100_000,
        trade_count: 1,
        pnl: null, // a whale: no ledger figure is served
        wallet_type: "whale",
        platform_name: null,
        smart_money_score: w1.smart_money_score,
      },
      {
        address: R1,
        shares: 200,
        entry_price: expect.closeTo(0.45, 12), // (30 + 60) / 200
        position_usd: expect.closeTo(90, 9),
        volume: expect.closeTo(90, 9),
        trade_count: 2,
        pnl: expect.closeTo(34, 9), // 200 shares costing 90, marked at 0.62
        wallet_type: "retail",
        platform_name: null,
        smart_money_score: (w.get(R1) as any).smart_money_score,
      },
    ]);
    // R2 only sold YES: its side is NO, entered at 1 − 0.62, holding nothing.
    expect(body.top_no_holders.map((h) => [h.address, h.shares, h.position_usd])).toEqual([
      [W2, 50_000, 20_000],
      [R2, 0, 0],
    ]);
    expect(body.top_no_holders[1]!.entry_price).toBeCloseTo(0.38, 12);
    // Stored serialized by the refresh (sql/0017) and spliced into the answer as its last field.
    expect(body.price_history).toEqual([
      {
        hour: iso(Date.parse("2026-10-29T12:00:00Z")),
        price: 0.3,
        volume: expect.closeTo(30, 9),
        trade_count: 1,
      },
      { hour: "2026-11-01T10:00:00.000Z", price: 0.5, volume: 100_000, trade_count: 1 },
      {
        hour: "2026-11-01T11:00:00.000Z",
        price: expect.closeTo(0.6, 12),
        volume: 20_000,
        trade_count: 1,
      },
      {
        hour: "2026-11-01T12:00:00.000Z",
        price: 0.62,
        volume: expect.closeTo(91, 9),
        trade_count: 2,
      },
    ]);
  });

  it("answers JSON: the stored price history spliced in parses as the rest of the answer", async () => {
    const res = await t.get("/v1/markets/alpha", terminal);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const text = await res.text();
    expect(JSON.stringify(JSON.parse(text))).toBe(text);
    expect(Object.keys(JSON.parse(text)).at(-1)).toBe("price_history");
  });

  it("serves an untraded market with empty lists, 404 for an unknown slug, 400 for a huge one", async () => {
    const body = await ok("/v1/markets/empty", MarketDetailSchema);
    expect(body.outcome_names).toBeNull();
    expect(body.stats).toMatchObject({
      volume: 0,
      trade_count: 0,
      last_price: null,
      last_trade_at: null,
    });
    expect([body.top_yes_holders, body.top_no_holders, body.price_history]).toEqual([[], [], []]);
    expect((await call("/v1/markets/missing")).status).toBe(404);
    const huge = await call(`/v1/markets/${"x".repeat(301)}`);
    expect(huge.status).toBe(400);
    expect(huge.body.error.message).toContain("slug");
  });
});

describe("GET /v1/markets/{slug}/flow", () => {
  it("buckets whale fills of the window (12 buckets of 10 minutes over 2 hours)", async () => {
    const body = await ok("/v1/markets/alpha/flow?minutes=120", MarketFlowSchema);
    expect(body).toMatchObject({
      slug: "alpha",
      window_minutes: 120,
      whales_only: true,
      total_volume: 120_000,
      net_yes: 100_000,
      net_no: 20_000,
    });
    expect(body.buckets).toHaveLength(12);
    body.buckets.forEach((b, i) => {
      expect(b.start).toBe(iso(NOW - 120 * MIN + i * 10 * MIN));
      expect(b.end).toBe(iso(NOW - 120 * MIN + (i + 1) * 10 * MIN));
    });
    // W1 at exactly the window's start falls in bucket 0; W2, 30 minutes in, in bucket 3.
    expect(body.buckets[0]).toMatchObject({
      yes_buy_usd: 100_000,
      net_flow: 100_000,
      unique_wallets: 1,
      avg_price: 0.5,
      trades: 1,
    });
    expect(body.buckets[3]).toMatchObject({ no_buy_usd: 20_000, net_flow: -20_000, trades: 1 });
    expect(body.buckets[3]!.avg_price).toBeCloseTo(0.6, 12); // NO at 0.40 is YES at 0.60
    const rest = body.buckets.filter((_, i) => i !== 0 && i !== 3);
    expect(rest.every((b) => b.trades === 0 && b.avg_price === null && b.net_flow === 0)).toBe(
      true,
    );
  });

  it("defaults to the last hour of whales and takes every wallet with whales_only=false", async () => {
    const whales = await ok("/v1/markets/alpha/flow", MarketFlowSchema);
    expect(whales).toMatchObject({ window_minutes: 60, whales_only: true, total_volume: 0 });
    const all = await ok("/v1/markets/alpha/flow?whales_only=false", MarketFlowSchema);
    expect(all).toMatchObject({ whales_only: false, total_volume: expect.closeTo(91, 9) });
    expect(all.net_yes).toBeCloseTo(60 - 31, 9);
    expect(all.net_no).toBe(0);
    // 5-minute buckets: R1 30 minutes before now in bucket 6, R2 10 minutes before in bucket 10.
    expect(all.buckets[6]).toMatchObject({ yes_buy_usd: expect.closeTo(60, 9), avg_price: 0.6 });
    expect(all.buckets[10]).toMatchObject({ yes_sell_usd: 31, net_flow: -31, avg_price: 0.62 });
    expect((await call("/v1/markets/missing/flow")).status).toBe(404);
  });
});

describe("GET /v1/signals/movers", () => {
  it("ranks markets by volume in the window, bounded to limit", async () => {
    const body = await ok("/v1/signals/movers?limit=3", MoversSchema);
    expect(body.period_hours).toBe(24);
    expect(body.count).toBe(3);
    expect(body.movers[0]).toEqual({
      slug: "alpha",
      title: "Will BTC close above 100k?",
      category: "crypto",
      volume: expect.closeTo(120_091, 9),
      trade_count: 4,
      // YES flow 100,000 + 60; NO flow 20,000 + 31 (selling YES).
      net_flow: expect.closeTo(80_029, 9),
    });
    expect(body.movers.map((m) => m.slug)).toEqual(["alpha", "beta", "gamma"]);
    expect(body.movers[1]).toMatchObject({ volume: 1350, trade_count: 3 });
  });

  it("narrows to the period and the category", async () => {
    // period_hours=1: 11:00 to now holds W2, R1 and R2 in alpha.
    const hour = await ok("/v1/signals/movers?period_hours=1", MoversSchema);
    expect(hour).toMatchObject({ period_hours: 1, count: 1 });
    expect(hour.movers[0]).toMatchObject({ slug: "alpha", trade_count: 3 });
    expect(hour.movers[0]!.volume).toBeCloseTo(20_091, 9);
    expect(hour.movers[0]!.net_flow).toBeCloseTo(60 - 20_000 - 31, 9);
    const sports = await ok("/v1/signals/movers?category=sports", MoversSchema);
    expect(sports.movers.map((m) => m.slug)).toEqual(["gamma"]);
    const all = await ok("/v1/signals/movers?limit=100", MoversSchema);
    expect(all.count).toBe(all.movers.length);
    // The whole 24-hour window's first hour counts (eta, 20 minutes into it); theta, a minute
    // before it, does not.
    expect(all.movers.map((m) => m.slug)).toContain("eta");
    expect(all.movers.map((m) => m.slug)).not.toContain("theta");
  });
});

describe("GET /v1/markets/trending and /v1/markets/moving", () => {
  it("ranks trending by whale volume", async () => {
    const body = await ok("/v1/markets/trending?limit=3", MarketRankPageSchema);
    expect(body.data[0]).toEqual({
      slug: "alpha",
      title: "Will BTC close above 100k?",
      category: "crypto",
      whale_volume: 120_000,
      price_change: expect.closeTo(0.32, 12), // 0.30 before the window, 0.62 at its end
      trade_count: 4,
    });
    expect(body.data.map((m) => m.slug)).toEqual(["alpha", "beta", "gamma"]);
    expect(body.next_cursor).toEqual(expect.any(String));
  });

  it("ranks moving by absolute price change, leaving out markets with fewer than 3 trades", async () => {
    const body = await ok("/v1/markets/moving", MarketRankPageSchema);
    expect(body).toEqual({
      data: [
        expect.objectContaining({ slug: "alpha", price_change: expect.closeTo(0.32, 12) }),
        // beta: 0.50 before the window, last trade NO at 0.60 = YES 0.40.
        expect.objectContaining({
          slug: "beta",
          price_change: expect.closeTo(-0.1, 12),
          whale_volume: 0,
        }),
      ],
      next_cursor: null,
    });
    // One hour: 11:00 onwards; alpha opened it at 10:00's close 0.50 and ended at 0.62.
    const hour = await ok("/v1/markets/moving?period_hours=1", MarketRankPageSchema);
    expect(hour.data).toEqual([
      {
        slug: "alpha",
        title: "Will BTC close above 100k?",
        category: "crypto",
        whale_volume: 20_000,
        price_change: expect.closeTo(0.12, 12),
        trade_count: 3,
      },
    ]);
  });

  it("filters by category and by a case-insensitive title substring", async () => {
    const crypto = await ok("/v1/markets/trending?category=crypto", MarketRankPageSchema);
    expect(crypto.data.map((m) => m.slug)).toEqual(["alpha"]);
    const election = await ok("/v1/markets/trending?search=election", MarketRankPageSchema);
    expect(election.data.map((m) => m.slug)).toEqual(["beta"]);
    const none = await ok("/v1/markets/moving?search=pager", MarketRankPageSchema);
    expect(none).toEqual({ data: [], next_cursor: null });
  });

  it("pages every row exactly once, in rank order, with ties broken by slug", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/v1/markets/trending?category=economics&limit=7${cursor ? `&cursor=${cursor}` : ""}`;
      const page = await ok(path, MarketRankPageSchema);
      seen.push(...page.data.map((m) => m.slug));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    // Volumes 13, 12, 12, 11, 11, ... 1, 1 USD: p24 first, then each pair in slug order.
    const expected = ["p24"];
    for (let k = 11; k >= 0; k--)
      expected.push(`p${String(2 * k).padStart(2, "0")}`, `p${String(2 * k + 1).padStart(2, "0")}`);
    expect(seen).toEqual(expected);
  });

  it("keeps paging correctly when the list is rebuilt between pages", async () => {
    const first = await ok(
      "/v1/markets/trending?category=economics&limit=10",
      MarketRankPageSchema,
    );
    t.app.readModelsChanged();
    const second = await ok(
      `/v1/markets/trending?category=economics&limit=10&cursor=${first.next_cursor}`,
      MarketRankPageSchema,
    );
    expect(second.data[0]!.slug).toBe("p15");
  });

  it("refuses a tampered cursor and one from the other ranking", async () => {
    const { next_cursor } = await ok("/v1/markets/trending?limit=2", MarketRankPageSchema);
    const cursor = next_cursor!;
    const [payload, tag] = cursor.split(".");
    const forged = Buffer.from(JSON.stringify(["markets-trending", 1e12, 0, "a"])).toString(
      "base64url",
    );
    for (const bad of [`${forged}.${tag}`, `${payload}x.${tag}`, `${cursor}x`]) {
      const res = await call(`/v1/markets/trending?cursor=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain("cursor");
    }
    const other = await call(`/v1/markets/moving?cursor=${cursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.message).toContain("cursor");
  });

  it("reuses a ranking until the read models change", async () => {
    const before = await ok("/v1/markets/trending?category=sports", MarketRankPageSchema);
    const gamma = t.db.reader.prepare("SELECT id FROM markets WHERE slug = 'gamma'").get() as {
      id: number;
    };
    const ingest = createIngest(t.db, t.clock);
    t.db.writer.transaction(() => {
      ingest.insertTrades([trade(R1, gamma.id, "NO", "BUY", 0.5, 10, NOW - MIN)]);
    })();
    refreshReadModels(t.db, NOW);
    expect(await ok("/v1/markets/trending?category=sports", MarketRankPageSchema)).toEqual(before);
    t.app.readModelsChanged();
    const after = await ok("/v1/markets/trending?category=sports", MarketRankPageSchema);
    expect(after.data[0]!.trade_count).toBe(before.data[0]!.trade_count! + 1);
  });
});

describe("parameters", () => {
  const bad: [string, string][] = [
    ["/v1/signals/movers?period_hours=0", "period_hours must be an integer from 1 to 168"],
    ["/v1/signals/movers?period_hours=169", "period_hours"],
    ["/v1/signals/movers?period_hours=1.5", "period_hours"],
    ["/v1/signals/movers?period_hours=day", "period_hours"],
    ["/v1/signals/movers?limit=0", "limit must be an integer from 1 to 100"],
    ["/v1/signals/movers?limit=101", "limit"],
    ["/v1/signals/movers?category=", "category must not be empty"],
    ["/v1/markets/trending?period_hours=200", "period_hours"],
    ["/v1/markets/trending?limit=101", "limit"],
    ["/v1/markets/trending?limit=-1", "limit"],
    ["/v1/markets/trending?search=", "search must not be empty"],
    ["/v1/markets/trending?cursor=garbage", "cursor is invalid"],
    ["/v1/markets/trending?cursor=", "cursor must not be empty"],
    ["/v1/markets/moving?period_hours=0", "period_hours"],
    ["/v1/markets/moving?limit=abc", "limit"],
    ["/v1/markets/alpha/flow?minutes=4", "minutes must be an integer from 5 to 1440"],
    ["/v1/markets/alpha/flow?minutes=1441", "minutes"],
    ["/v1/markets/alpha/flow?minutes=60.5", "minutes"],
    ["/v1/markets/alpha/flow?whales_only=yes", "whales_only must be true or false"],
  ];
  it.each(bad)("400 for %s", async (path, message) => {
    const res = await t.get(path, terminal);
    expect(res.status).toBe(400);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("bad_request");
    expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
    expect(body.error.message).toContain(message);
  });

  it("accepts the bounds and ignores unknown parameters", async () => {
    for (const path of [
      "/v1/signals/movers?period_hours=168&limit=100&colour=blue",
      "/v1/signals/movers?period_hours=1&limit=1",
      "/v1/markets/trending?period_hours=168&limit=1&colour=blue",
      "/v1/markets/alpha/flow?minutes=5&whales_only=true",
      "/v1/markets/alpha/flow?minutes=1440",
    ]) {
      expect((await call(path)).status, path).toBe(200);
    }
  });
});

describe("tier gates", () => {
  const terminalPaths = [
    "/v1/signals/movers",
    "/v1/markets/trending",
    "/v1/markets/moving",
    "/v1/markets/alpha",
    "/v1/markets/alpha/sentiment",
    "/v1/markets/alpha/flow",
  ];
  it.each(terminalPaths)("403 for a free key on %s", async (path) => {
    const { status, body } = await call(path, t.key("free"));
    expect(status).toBe(403);
    expect(body.error.code).toBe("forbidden");
    expect(body.error.message).toContain("terminal");
  });
  it.each(terminalPaths)("200 for a terminal_pro key on %s", async (path) => {
    expect((await call(path, t.key("terminal_pro"))).status).toBe(200);
  });
});
