import { afterEach, describe, expect, it } from "vitest";
import { seedWorld } from "../../src/fixtures/seed-world";
import { createIngest } from "../../src/ingest/ingest";
import { createTestApp, type TestApp } from "../helpers/app";
import { catchAllEndpoint } from "../helpers/endpoints";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

/**
 * Alerts are for news: a trade older than SMARTMONEY_ALERT_MAX_AGE (default 10 minutes) when it
 * is stored records its signal but queues no webhook delivery, so importing history never sends
 * customers a flood of old alerts.
 */

const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const MINUTE = 60_000;
const apps: TestApp[] = [];
afterEach(() => {
  for (const t of apps.splice(0)) t.close();
});

function appWithEndpoint(env: NodeJS.ProcessEnv = {}) {
  const t = createTestApp({ env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", ...env } });
  apps.push(t);
  t.clock.set(NOW);
  catchAllEndpoint(t);
  return t;
}

const count = (t: TestApp, sql: string) => t.db.reader.prepare(sql).pluck().get() as number;

describe("old trades alert nobody", () => {
  it("importing 120 days of history records every signal and queues deliveries only for the news", async () => {
    const t = appWithEndpoint();
    const seeded = await seedWorld(t.app, {
      scale: "small",
      seed: 42,
      now: NOW,
      manifestPath: `${t.config.dbPath}.manifest.json`,
    });
    expect(seeded.ok).toBe(true);
    const signals = count(t, "SELECT count(*) FROM signals");
    expect(signals).toBeGreaterThan(50);
    const fresh = count(
      t,
      `SELECT count(*) FROM signals s JOIN fills f ON f.id = s.trade_id
        WHERE f.ts >= ${NOW - 10 * MINUTE}`,
    );
    // One delivery per fresh signal (the one endpoint takes every signal), none for the rest.
    expect(count(t, "SELECT count(*) FROM deliveries")).toBe(fresh);
    expect(fresh).toBeLessThan(signals / 10);
  });

  it("queues a trade's alert up to the configured age, and not a millisecond past it", () => {
    const t = appWithEndpoint({ SMARTMONEY_ALERT_MAX_AGE: "30m" });
    const ingest = createIngest(t.db, t.clock, t.app.ingestHooks);
    const whale = `0x${"2".repeat(40)}`;
    t.db.writer.transaction(() => {
      const marketId = addMarket(ingest, {
        slug: "m",
        title: "M?",
        category: "politics",
        condition_id: `0x${"1".repeat(64)}`,
        created_at: NOW - 40 * 24 * 60 * MINUTE,
      });
      // Two whale-sized buys: one exactly 30 minutes old, one a millisecond older.
      ingest.insertTrades([
        newTrade(whale, marketId, "YES", "BUY", 0.5, 50_000, NOW - 30 * MINUTE - 1, 25_000),
        newTrade(whale, marketId, "YES", "BUY", 0.5, 60_000, NOW - 30 * MINUTE, 30_000),
      ]);
    })();
    const rows = t.db.reader
      .prepare(
        `SELECT s.created_at AS at, (SELECT count(*) FROM deliveries d WHERE d.signal_id = s.id) AS n
           FROM signals s WHERE s.type = 'whale' ORDER BY s.created_at`,
      )
      .all();
    expect(rows).toEqual([
      { at: NOW - 30 * MINUTE - 1, n: 0 },
      { at: NOW - 30 * MINUTE, n: 1 },
    ]);
  });
});
