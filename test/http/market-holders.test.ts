import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIngest } from "../../src/ingest/ingest";
import { TOP_HOLDERS } from "../../src/read/market-positions";
import { refreshReadModels } from "../../src/refresh/refresh";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

const NOW = Date.parse("2026-11-01T12:30:00.000Z");
const HOUR = 3_600_000;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

/**
 * Holders' BUY USD per market. Wallets first trade in descending address order, so their ids
 * (which order the bets' index within equal sizes) run against their addresses.
 */
const SIZES: Record<string, number[]> = {
  // Ties inside the top ten only: 11 and 12 are smaller.
  inside: [500, 400, 300, 300, 300, 200, 200, 100, 90, 80, 70, 60],
  // The tenth and eleventh tie: which of the three 50s make the cut is the addresses' call.
  across: [500, 400, 300, 200, 100, 90, 80, 70, 60, 50, 50, 50, 10],
  // Fewer holders than the list's length.
  few: [30, 30, 20],
};

let t: TestApp;
let key: string;

beforeAll(() => {
  t = createTestApp();
  t.clock.set(NOW);
  const ingest = createIngest(t.db, t.clock);
  t.db.writer.transaction(() => {
    Object.entries(SIZES).forEach(([slug, sizes], m) => {
      const marketId = addMarket(ingest, {
        slug,
        category: "crypto",
        condition_id: `0x${(m + 1).toString(16).padStart(64, "0")}`,
        created_at: NOW - 10 * 24 * HOUR,
      });
      // Sizes are handed out in address order but traded from the highest address down.
      const trades = sizes
        .map((usd, i) => newTrade(wallet(100 * m + i + 1), marketId, "YES", "BUY", 0.5, 2 * usd, 0))
        .reverse()
        .map((trade, i) => ({ ...trade, ts: NOW - 2 * HOUR + i * 1000 }));
      // One at a time: a batch numbers its new wallets in address order.
      for (const trade of trades) ingest.insertTrades([trade]);
    });
  })();
  refreshReadModels(t.db, NOW);
  t.app.readModelsChanged();
  key = t.key("terminal");
});
afterAll(() => t.close());

describe("GET /v1/markets/{slug}: the top holders", () => {
  it.each(Object.keys(SIZES))("are the largest by BUY USD, then by address (%s)", async (slug) => {
    const m = Object.keys(SIZES).indexOf(slug);
    const expected = SIZES[slug]!.map((usd, i) => ({ address: wallet(100 * m + i + 1), usd }))
      .sort((a, b) => b.usd - a.usd || (a.address < b.address ? -1 : 1))
      .slice(0, TOP_HOLDERS);
    const res = await t.get(`/v1/markets/${slug}`, key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      top_yes_holders: { address: string; position_usd: number }[];
    };
    expect(body.top_yes_holders.map((h) => ({ address: h.address, usd: h.position_usd }))).toEqual(
      expected,
    );
  });
});
