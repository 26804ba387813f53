import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Outcome, TradeSide } from "../../src/domain";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const RETAIL = addr(1);
const WHALE = addr(2);
const FUNDER = addr(0xf0);
const [I1, I2, I3] = [addr(0xa1), addr(0xa2), addr(0xa3)];

let t: TestApp;
let tx = 0;
const hash = () => `0x${(++tx).toString(16).padStart(64, "0")}`;
/** A trade sized by its USD value: the detector's thresholds are in USD. */
const trade = (
  wallet: string,
  market: number,
  outcome: Outcome,
  side: TradeSide,
  price: number,
  usd: number,
  ts: number,
): NewTrade => newTrade(wallet, market, outcome, side, price, usd / price, ts, usd);

let market = 0;
let ingest: ReturnType<typeof createIngest>;
let account: number;

beforeEach(() => {
  // The scenes' trades are up to an hour old when stored; webhooks/old-news.test.ts holds the
  // default age past which a stored trade alerts nobody.
  t = createTestApp({
    env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", SMARTMONEY_ALERT_MAX_AGE: "2h" },
  });
  t.clock.set(NOW);
  ingest = createIngest(t.db, t.clock, t.app.ingestHooks);
  const created = t.app.accounts.create("alerts", "terminal");
  if (!created.ok) throw new Error(created.reason);
  account = created.value.id;
  t.db.writer.transaction(() => {
    market = addMarket(ingest, {
      slug: "niche",
      title: "Niche?",
      category: "politics",
      condition_id: `0x${"1".repeat(64)}`,
      created_at: NOW - 40 * DAY,
    });
    ingest.insertTrades([
      trade(RETAIL, market, "YES", "BUY", 0.5, 100, NOW - 3 * DAY),
      trade(RETAIL, market, "NO", "BUY", 0.5, 200, NOW - 2 * DAY),
    ]);
  })();
});
afterEach(() => t.close());

function endpoint(
  filters: {
    minScore?: number;
    scoreType?: "whale" | "insider";
    channel?: "api" | "dashboard";
  } = {},
) {
  const created = t.app.webhooks.endpoints.create({
    accountId: account,
    tier: "terminal",
    channel: filters.channel ?? "api",
    callbackUrl: "http://127.0.0.1:9/hook",
    minScore: filters.minScore ?? null,
    scoreType: filters.scoreType ?? null,
    category: null,
  });
  if (!created.ok) throw new Error(created.reason);
  return created.value.endpoint.id as string;
}

const signals = () =>
  t.db.writer.prepare("SELECT * FROM signals ORDER BY id").all() as Record<string, any>[];
const deliveriesOf = (endpointId: string) =>
  t.db.writer.prepare("SELECT * FROM deliveries WHERE endpoint_id = ?").all(endpointId) as Record<
    string,
    any
  >[];

/** A second niche market, with two ordinary retail trades in it; its id. */
function secondNicheMarket(): number {
  let id = 0;
  t.db.writer.transaction(() => {
    id = addMarket(ingest, {
      slug: "niche-2",
      title: "Niche 2?",
      category: "politics",
      condition_id: `0x${"2".repeat(64)}`,
      created_at: NOW - 40 * DAY,
    });
    ingest.insertTrades([
      trade(RETAIL, id, "YES", "BUY", 0.5, 100, NOW - 3 * DAY),
      trade(RETAIL, id, "NO", "BUY", 0.5, 200, NOW - 2 * DAY),
    ]);
  })();
  return id;
}

/**
 * A funder's three fresh wallets buy a long shot in `inMarket` within the hour, the first of them
 * last and biggest, after `prior` tiny trades of its own there from before the 30-day window;
 * the insider signal on the first wallet, if one fired.
 */
function insiderScene(funder: string, wallets: string[], inMarket: number, prior: number) {
  t.db.writer.transaction(() => {
    ingest.insertTransfers(
      wallets.map((to, i) => ({
        tx_hash: hash(),
        log_index: 0,
        from_address: funder,
        to_address: to,
        token: "USDC" as const,
        amount: 5_000,
        ts: NOW - 2 * DAY + i * 60_000,
      })),
    );
    ingest.insertTrades(
      Array.from({ length: prior }, (_, i) =>
        trade(wallets[0]!, inMarket, "YES", "BUY", 0.5, 0.01, NOW - 40 * DAY + i * 60_000),
      ),
    );
    ingest.insertTrades([
      trade(wallets[1]!, inMarket, "YES", "BUY", 0.08, 1_500, NOW - 50 * 60_000),
      trade(wallets[2]!, inMarket, "YES", "BUY", 0.08, 1_500, NOW - 40 * 60_000),
      trade(wallets[0]!, inMarket, "YES", "BUY", 0.08, 4_000, NOW - 10 * 60_000),
    ]);
  })();
  return signals().find((s) => s.type === "insider" && s.wallet === wallets[0]);
}

describe("signal detection on ingest", () => {
  it("fires a whale signal with the methodology's score and delivers it to matching endpoints only", () => {
    const loose = endpoint({ minScore: 60, scoreType: "whale" });
    const strict = endpoint({ minScore: 70 });
    const insiderOnly = endpoint({ scoreType: "insider" });
    const at = NOW - HOUR;
    t.db.writer.transaction(() => {
      ingest.insertTrades([trade(WHALE, market, "YES", "BUY", 0.5, 20_000, at)]);
    })();
    const [whale, ...rest] = signals();
    expect(rest.filter((s) => s.type === "whale")).toHaveLength(0);
    // No refreshed score yet: the Bayesian fallback, 50. The largest of the market's 3 trades:
    // percentile 1. Score = 0.7 × 50 + 0.3 × 100 = 65.
    expect(whale).toMatchObject({
      type: "whale",
      wallet: WHALE,
      score: 65,
      bet_value: 20_000,
      side: "BUY",
      outcome: "YES",
      price: 0.5,
      created_at: at,
    });
    expect(whale!.explanation).toBe(
      "Whale score 65: bought $20,000 of YES at 0.5 from a wallet with smart-money score 50; the trade is at least as large as 100% of this market's trades.",
    );
    expect(deliveriesOf(loose)).toHaveLength(1);
    expect(deliveriesOf(loose)[0]).toMatchObject({ event: "signal.whale", status: "pending" });
    expect(deliveriesOf(strict)).toHaveLength(0);
    expect(deliveriesOf(insiderOnly)).toHaveLength(0);
  });

  it("fires an insider signal for a fresh, clustered wallet buying a long shot in a niche market", () => {
    const insiderHook = endpoint({ scoreType: "insider" });
    const followed = endpoint({ channel: "dashboard" });
    expect(t.app.webhooks.follows.followWallet(account, I1).ok).toBe(true);
    t.db.writer.transaction(() => {
      ingest.insertTransfers(
        [I1, I2, I3].map((to, i) => ({
          tx_hash: hash(),
          log_index: 0,
          from_address: FUNDER,
          to_address: to,
          token: "USDC" as const,
          amount: 5_000,
          ts: NOW - 2 * DAY + i * 60_000,
        })),
      );
      ingest.insertTrades([
        trade(I2, market, "YES", "BUY", 0.08, 1_500, NOW - 50 * 60_000),
        trade(I3, market, "YES", "BUY", 0.08, 1_500, NOW - 40 * 60_000),
        trade(I1, market, "YES", "BUY", 0.08, 4_000, NOW - 10 * 60_000),
      ]);
    })();
    const fired = signals().filter((s) => s.type === "insider");
    const mine = fired.find((s) => s.wallet === I1);
    expect(mine).toBeDefined();
    expect(mine!.score).toBeGreaterThanOrEqual(65);
    expect(mine!.explanation).toMatch(/^Insider score \d+: bought \$4,000 of YES at 0\.08;/);
    expect(deliveriesOf(insiderHook).length).toBe(fired.length);
    const alerts = deliveriesOf(followed);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ event: "alert.followed_wallet", signal_id: mine!.id });
  });

  it("counts a wallet's prior trades (up to 20) against its freshness", () => {
    // Two alike scenes in two markets: a funder's three fresh wallets buy a long shot within the
    // hour. In the second, the last buyer already has 19 tiny trades in that market from before
    // the 30-day window, so only its freshness points differ: 15 with none, 1 with 19 of 20.
    const other = secondNicheMarket();
    const [J1, J2, J3] = [addr(0xb1), addr(0xb2), addr(0xb3)];
    const none = insiderScene(FUNDER, [I1, I2, I3], market, 0);
    const many = insiderScene(addr(0xf1), [J1, J2, J3], other, 19);
    expect(none).toBeDefined();
    expect(many).toBeDefined();
    expect(none!.score - many!.score).toBeCloseTo(14, 6);
  });

  it("counts a wallet's trades in markets compacted by fill retention as prior trades", async () => {
    // As above, but the last buyer's 19 tiny trades are in a market resolved 150 days ago, whose
    // fills a 90-day retention deleted: its frozen bet still counts them.
    const [J1, J2, J3] = [addr(0xb1), addr(0xb2), addr(0xb3)];
    t.db.writer.transaction(() => {
      const oldId = addMarket(ingest, {
        slug: "old",
        title: "Old?",
        category: "politics",
        condition_id: `0x${"3".repeat(64)}`,
        created_at: NOW - 300 * DAY,
      });
      ingest.insertTrades(
        Array.from({ length: 19 }, (_, i) =>
          trade(J1, oldId, "YES", "BUY", 0.5, 0.01, NOW - 200 * DAY + i * 60_000),
        ),
      );
      ingest.resolveMarket(oldId, "YES", NOW - 150 * DAY);
    })();
    refreshReadModels(t.db, NOW);
    expect(await compactResolvedMarkets(t.db, NOW, 90 * DAY)).toMatchObject({
      markets: 1,
      fills_deleted: 19,
    });
    const other = secondNicheMarket();
    const none = insiderScene(FUNDER, [I1, I2, I3], market, 0);
    const many = insiderScene(addr(0xf1), [J1, J2, J3], other, 0);
    expect(none).toBeDefined();
    expect(many).toBeDefined();
    expect(none!.score - many!.score).toBeCloseTo(14, 6);
  });

  it("stays quiet for ordinary trades, and a re-ingested trade fires nothing twice", () => {
    const all = endpoint();
    const rows = [
      trade(RETAIL, market, "YES", "BUY", 0.55, 300, NOW - HOUR),
      trade(WHALE, market, "NO", "BUY", 0.4, 50_000, NOW - HOUR),
    ];
    t.db.writer.transaction(() => ingest.insertTrades(rows))();
    const first = signals();
    expect(first.filter((s) => s.wallet === RETAIL)).toHaveLength(0);
    expect(first.filter((s) => s.type === "whale")).toHaveLength(1);
    t.db.writer.transaction(() => ingest.insertTrades(rows))();
    expect(signals()).toEqual(first);
    expect(deliveriesOf(all)).toHaveLength(first.length);
  });

  it("writes nothing when the ingest transaction rolls back", () => {
    endpoint();
    expect(() =>
      t.db.writer.transaction(() => {
        ingest.insertTrades([trade(WHALE, market, "YES", "BUY", 0.5, 20_000, NOW - HOUR)]);
        throw new Error("crash after the hook");
      })(),
    ).toThrow("crash");
    expect(signals()).toHaveLength(0);
    expect(t.db.writer.prepare("SELECT count(*) AS n FROM deliveries").get()).toEqual({ n: 0 });
  });
});
