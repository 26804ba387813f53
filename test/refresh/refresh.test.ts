import { availableParallelism } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { sqlFiles } from "../../src/db/sql-files";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { migrate } from "../../src/migrations/migrate";
import { BET_FIELDS } from "../../src/refresh/pass";
import {
  createPriceHistoryReader,
  cutOf,
  PRICE_HISTORY_POINTS,
  TAIL_HOURS,
  unpackPoints,
} from "../../src/refresh/price-history";
import { CATCH_UP_COUNT, MARK_MAX_AGE_MS, refreshReadModels } from "../../src/refresh/refresh";
import { betPnl } from "../../src/refresh/wallet-model";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { READ_MODEL_TABLES, readModelSnapshot } from "../helpers/read-models";
import { newTrade } from "../helpers/trades";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const T = NOW - 20 * DAY;
const X = "0x00000000000000000000000000000000000000aa";
const Y = "0x00000000000000000000000000000000000000bb";
const W = "0x00000000000000000000000000000000000000cc";

let t: TestApp;
afterEach(() => t?.close());

const trade = newTrade;
/**
 * The migrations up to `version`: a test that takes a table back to an older layout applies only
 * the migration it tests, since the later ones are applied to the database already.
 */
const filesThrough = (version: string) => sqlFiles().filter((f) => f.name.slice(0, 4) <= version);

function world() {
  t = createTestApp();
  t.clock.set(NOW);
  const ingest = createIngest(t.db, t.clock);
  const ids: number[] = [];
  t.db.writer.transaction(() => {
    for (const [slug, category] of [
      ["a", "crypto"],
      ["b", "politics"],
    ] as const) {
      const marketId = addMarket(ingest, {
        slug,
        title: slug.toUpperCase(),
        category,
        condition_id: `0x${slug.repeat(64)}`,
        created_at: T - DAY,
      });
      ids.push(marketId);
    }
    const [a, b] = ids as [number, number];
    ingest.insertTrades([
      trade(X, a, "YES", "BUY", 0.4, 100, T),
      trade(X, a, "YES", "BUY", 0.6, 100, T + HOUR),
      trade(X, a, "YES", "SELL", 0.7, 50, T + 2 * HOUR),
      trade(X, b, "NO", "BUY", 0.3, 100, T + 3 * HOUR),
      trade(Y, b, "NO", "BUY", 0.25, 10, T + 4 * HOUR),
      trade(W, b, "YES", "BUY", 0.5, 200_000, NOW - DAY),
    ]);
    ingest.resolveMarket(a, "YES", T + 10 * DAY);
  })();
  return { a: ids[0]!, b: ids[1]! };
}

describe("refreshReadModels on a hand-built world", () => {
  it("computes bets, ledger PnL, routing, score inputs and types to the cent", () => {
    const { a, b } = world();
    const summary = refreshReadModels(t.db, NOW);
    expect(summary).toMatchObject({ kind: "full", wallets: 3, markets: 2 });
    const stats = t.db.writer.prepare("SELECT * FROM wallet_stats WHERE address = ?");
    const x = stats.get(X) as Record<string, any>;
    // Market A: 200 shares at average 0.50; 50 sold at 0.70 realise +10; 150 settle at 1: +75.
    // Market B: 100 NO at 0.30 marked at the last NO trade, 0.25: −5. Total +80.
    expect(x.ledger_pnl).toBeCloseTo(80, 9);
    expect(x).toMatchObject({
      trade_count: 4,
      total_bets: 2,
      resolved_bets: 1,
      wins: 1,
      win_rate: 1,
      markets_traded: 2,
      pnl_source: "ledger",
      total_pnl: expect.closeTo(80, 9),
      // Marked now: the ledger figure is as of this refresh.
      pnl_as_of: NOW,
      refreshed_at: NOW,
      wallet_type: "retail",
    });
    expect(x.bayesian_win_rate).toBeCloseTo(11 / 21, 12);
    expect(x.total_volume).toBeCloseTo(40 + 60 + 35 + 30, 9);
    expect(x.confidence).toBeCloseTo(1 / 21, 12);
    // One resolved bet entered at 0.50 that won: expected wins 0.5, p = P(W ≥ 1) = 0.5.
    expect(x.expected_wins).toBeCloseTo(0.5, 12);
    expect(x.p_value).toBeCloseTo(0.5, 12);
    const breakdown = JSON.parse(x.breakdown);
    expect(breakdown.method).toBe("signals");
    const points = Object.entries(breakdown)
      .filter(([k]) => k !== "method")
      .reduce((s, [, v]) => s + (v as number), 0);
    expect(points).toBeCloseTo(x.smart_money_score, 1);

    const betA = t.db.writer
      .prepare(
        `SELECT b.* FROM wallet_bets b JOIN wallet_ids w ON w.id = b.wallet_id
          WHERE w.address = ? AND b.market_id = ?`,
      )
      .get(X, a) as Record<string, any>;
    expect(betA).toMatchObject({
      side: "YES",
      entry_price: 0.5,
      resolved: 1,
      won: 1,
      yes_shares: 150,
      no_shares: 0,
    });
    // 10 realised minus the 75 the 150 shares left cost; settled at 1 they bring it to +85.
    expect(betA.pnl_base).toBeCloseTo(-65, 9);
    expect(betPnl(betA as any, "YES", null, null)).toBeCloseTo(85, 9);
    const betB = t.db.writer
      .prepare(
        `SELECT b.* FROM wallet_bets b JOIN wallet_ids w ON w.id = b.wallet_id
          WHERE w.address = ? AND b.market_id = ?`,
      )
      .get(X, b) as Record<string, any>;
    expect(betB.pnl_base).toBeCloseTo(-30, 9);
    expect(betPnl(betB as any, null, 0.5, 0.25)).toBeCloseTo(-5, 9);
    // Entered at T; 24 h later the last YES-equivalent price was X's own sell at 0.70.
    expect(betA.move_24h).toBeCloseTo(0.2, 12);

    const w = stats.get(W) as Record<string, any>;
    expect(w).toMatchObject({ wallet_type: "whale", pnl_source: "none", total_pnl: null });

    const market = t.db.writer
      .prepare("SELECT * FROM market_stats WHERE market_id = ?")
      .get(b) as Record<string, any>;
    expect(market).toMatchObject({
      trade_count: 3,
      unique_wallets: 3,
      last_yes_price: 0.5,
      last_yes_trade: 0.5,
      last_no_trade: 0.25,
      sentiment: "bullish",
      yes_ratio: 1,
      yes_volume: 100_000,
      no_volume: 0,
      total_whale_volume: 100_000,
      unique_whales: 1,
      yes_implied_prob: 1,
      implied_edge: 0.5,
    });
    const marketA = t.db.writer
      .prepare("SELECT * FROM market_stats WHERE market_id = ?")
      .get(a) as Record<string, any>;
    expect(marketA).toMatchObject({
      sentiment: null,
      yes_ratio: null,
      total_whale_volume: null,
      last_yes_price: 0.7,
    });
    const hours = t.db.writer
      .prepare("SELECT * FROM market_hours WHERE market_id = ? ORDER BY hour")
      .all(b) as Record<string, any>[];
    expect(hours.map((h) => h.whale_volume)).toEqual([0, 0, 100_000]);
    expect(hours[0]!.net_flow).toBeCloseTo(-30, 9);
    const rates = t.db.writer.prepare("SELECT * FROM category_base_rates").all();
    expect(rates).toEqual([{ category: "crypto", resolved_bets: 1, wins: 1, base_rate: 1 }]);
    expect(t.db.writer.prepare("SELECT count(*) AS n FROM dirty_wallets").get()).toEqual({ n: 0 });
  });
});

/** A small random world pushed through the ingest path in rounds. */
function randomWorld(seed: number) {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  const wallets = Array.from(
    { length: 60 },
    (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`,
  );
  const markets: number[] = [];
  const categories = ["politics", "crypto", "sports", "culture", "economics", "breaking-news"];
  t.db.writer.transaction(() => {
    for (let i = 0; i < 14; i++) {
      const marketId = addMarket(ingest, {
        slug: `m${i}`,
        title: `M${i}`,
        category: categories[i % 6]!,
        condition_id: `0x${i.toString(16).padStart(64, "0")}`,
      });
      markets.push(marketId);
    }
    ingest.upsertWallet({
      address: wallets[3]!,
      platform_name: "Neo",
      platform_pnl: 1234.5,
      platform_pnl_as_of: NOW - DAY,
      created_at: null,
    });
  })();
  const round = (from: number, to: number, count: number, bigFrom = 0) => {
    t.db.writer.transaction(() => {
      const rows: NewTrade[] = [];
      for (let i = 0; i < count; i++) {
        const wallet = wallets[Math.floor(rand() * wallets.length)]!;
        const market = markets[Math.floor(rand() * markets.length)]!;
        const big = bigFrom > 0 && wallet === wallets[0];
        rows.push(
          trade(
            wallet,
            market,
            rand() < 0.5 ? "YES" : "NO",
            rand() < 0.75 ? "BUY" : "SELL",
            0.05 + rand() * 0.9,
            big ? bigFrom : 10 + rand() * 500,
            from + Math.floor(rand() * (to - from)),
          ),
        );
      }
      rows.sort((p, q) => p.ts - q.ts);
      ingest.insertTrades(rows);
    })();
  };
  return { ingest, markets, round, wallets };
}

const TABLES = READ_MODEL_TABLES;
const snapshot = () => readModelSnapshot(t.db.writer);

describe("incremental refresh", () => {
  // The wallet step reads and models on the writer's thread for a small run, in a worker thread
  // for a large one (WALLETS_IN_WORKER_FROM): both must give what a full rebuild gives.
  it.each([
    ["on the writer's thread", Number.POSITIVE_INFINITY],
    ["in a worker thread", 0],
  ])(
    "gives the same tables as a full rebuild after trades, resolutions, a new whale and time passing, its wallets modelled %s",
    (_, walletsInWorkerFrom) => {
      const { ingest, markets, round } = randomWorld(7);
      const t1 = NOW - 40 * DAY;
      round(t1 - 60 * DAY, t1, 2500);
      // Quiet corners that nothing touches later, so only the time-driven rules can update them:
      // an entry 2 h before the first refresh (its 24-hour-later price appears afterwards) and a
      // whale's fills 10 days before it (they leave the 30-day sentiment window afterwards).
      const quiet = "0x00000000000000000000000000000000000000f1";
      const quietWhale = "0x00000000000000000000000000000000000000f2";
      // A wallet that later turns whale elsewhere: its old market q3 gets no new trades, yet its
      // hours' whale volume and its sentiment change.
      const risingWhale = "0x00000000000000000000000000000000000000f5";
      let q3 = 0;
      t.db.writer.transaction(() => {
        const ids = ["q1", "q2", "q3"].map((slug, i) => {
          return addMarket(ingest, {
            slug,
            category: "culture",
            condition_id: `0x${"f".repeat(63)}${i}`,
          });
        });
        ingest.insertTrades([
          trade(quiet, ids[0]!, "YES", "BUY", 0.3, 100, t1 - 2 * HOUR),
          trade(quietWhale, ids[1]!, "YES", "BUY", 0.6, 100_000, t1 - 10 * DAY),
          trade(quiet, ids[0]!, "YES", "BUY", 0.35, 10, t1 - HOUR),
          trade(risingWhale, ids[2]!, "NO", "BUY", 0.4, 500, t1 - 3 * DAY),
          trade(quietWhale, ids[2]!, "YES", "BUY", 0.6, 1000, t1 - 3 * DAY + HOUR),
        ]);
        q3 = ids[2]!;
        ingest.resolveMarket(markets[0]!, "YES", t1 - 5 * DAY);
        ingest.resolveMarket(markets[1]!, "NO", t1 - 2 * DAY);
      })();
      const first = refreshReadModels(t.db, t1);
      expect(first.kind).toBe("full");

      // Later: more trades (wallet 0 becomes a whale), two more resolutions, and enough time for
      // entries to age past 24 h and fills to leave the 30-day sentiment window.
      const t2 = NOW;
      round(t1, t2, 1500, 30_000);
      // Late arrivals dated before the first refresh: they reorder ledgers and can become the last
      // trade before an earlier entry's 24-hour mark.
      round(t1 - 5 * DAY, t1, 60);
      t.db.writer.transaction(() => {
        ingest.insertTrades([
          trade(risingWhale, markets[5]!, "YES", "BUY", 0.5, 120_000, t2 - HOUR),
        ]);
      })();
      t.db.writer.transaction(() => {
        ingest.resolveMarket(markets[2]!, "YES", t2 - DAY);
        ingest.resolveMarket(markets[3]!, "NO", t2 - HOUR);
        // A market moved to another category: every bet in it (and two base rates) changes.
        const moved = ingest.upsertMarket({
          slug: "m7",
          title: "M7",
          category: "weather",
          condition_id: `0x${(7).toString(16).padStart(64, "0")}`,
          end_date: null,
          created_at: 0,
          resolved_outcome: null,
          resolved_at: null,
        });
        if (!moved.ok || moved.status !== "updated") throw new Error("m7 was not updated");
      })();
      const second = refreshReadModels(t.db, t2, { walletsInWorkerFrom });
      expect(second.kind).toBe("incremental");
      const incremental = snapshot();
      expect(incremental.wallet_stats?.length).toBe(63);
      const q3Hours = t.db.writer
        .prepare("SELECT whale_volume FROM market_hours WHERE market_id = ? ORDER BY hour")
        .pluck()
        .all(q3);
      expect(q3Hours).toEqual([200, 600]);
      expect(
        t.db.writer
          .prepare("SELECT last_trade_at FROM market_stats WHERE market_id = ?")
          .pluck()
          .get(q3),
      ).toBe(t1 - 3 * DAY + HOUR);

      refreshReadModels(t.db, t2, { full: true });
      const full = snapshot();
      for (const [table] of TABLES) expect(incremental[table], table).toEqual(full[table]);
    },
  );

  it("rebuilds in full when a run would recompute a share of all wallets, and says why", () => {
    const { markets, round, wallets } = randomWorld(11);
    const t1 = NOW - 10 * DAY;
    round(t1 - 30 * DAY, t1, 800);
    expect(refreshReadModels(t.db, t1).kind).toBe("full");
    // A rule small enough for this world: at least 10 wallets, and a third of them.
    const catchUp = { wallets: 10, share: 1 / 3 };
    round(t1, t1 + HOUR, 400);
    const caughtUp = refreshReadModels(t.db, t1 + 2 * HOUR, { catchUp });
    expect(caughtUp.kind).toBe("full");
    expect(caughtUp.catch_up?.of).toBe(wallets.length);
    expect(caughtUp.catch_up?.wallets).toBeGreaterThanOrEqual(wallets.length / 3);
    // Choosing the kind of run is a phase of its own, as the count is taken before the run.
    expect(caughtUp.phases).toHaveProperty("plan", expect.any(Number));
    // One wallet's trade is no catch-up: the run stays incremental.
    t.db.writer.transaction(() => {
      createIngest(t.db, t.clock).insertTrades([
        trade(wallets[0]!, markets[0]!, "YES", "BUY", 0.5, 10, t1 + 3 * HOUR),
      ]);
    })();
    const next = refreshReadModels(t.db, t1 + 4 * HOUR, { catchUp });
    expect(next.kind).toBe("incremental");
    expect(next.catch_up).toBeUndefined();
    // Under the default rule (CATCH_UP) a world this small never catches up in full.
    round(t1 + 4 * HOUR, t1 + 5 * HOUR, 400);
    expect(refreshReadModels(t.db, t1 + 6 * HOUR).kind).toBe("incremental");
  });

  it("counts a catch-up's wallets by the new fills' ids and the dirty marks, not by a scan", () => {
    const { round, wallets } = randomWorld(12);
    const t1 = NOW - 10 * DAY;
    round(t1 - 30 * DAY, t1, 800);
    refreshReadModels(t.db, t1);
    const watermark = t.db.writer.prepare("SELECT max(id) FROM fills").pluck().get() as number;
    round(t1, t1 + HOUR, 50);
    t.db.writer.prepare("INSERT OR IGNORE INTO dirty_wallets (address) VALUES (?)").run(wallets[3]);
    const count = t.db.writer.prepare(CATCH_UP_COUNT).pluck();
    // The same wallets as the plain definition: those with fills past the watermark, and the
    // dirty ones.
    const expected = t.db.writer
      .prepare(
        `SELECT count(DISTINCT id) FROM (SELECT wallet_id AS id FROM fills WHERE id > ?
          UNION ALL SELECT w.id FROM wallet_ids w WHERE w.address IN (SELECT address FROM dirty_wallets))`,
      )
      .pluck()
      .get(watermark);
    expect(count.get(watermark)).toBe(expected);
    expect(expected).toBeGreaterThan(1);
    // Each side read by its key: the fills by id, the wallets by address.
    const plan = t.db.writer
      .prepare(`EXPLAIN QUERY PLAN ${CATCH_UP_COUNT}`)
      .all(watermark)
      .map((r) => (r as { detail: string }).detail);
    expect(plan).toContain("SEARCH fills USING INTEGER PRIMARY KEY (rowid>?)");
    expect(plan.some((d) => d.startsWith("SEARCH w USING"))).toBe(true);
    expect(plan.filter((d) => /^SCAN (fills|w)\b/.test(d))).toEqual([]);
  });

  it("marks at the last trade when a new fill is dated before it", () => {
    const { b } = world();
    refreshReadModels(t.db, NOW);
    // Market B's last NO trade is Y's at 0.25 (T + 4 h). A fill that arrives now, dated between
    // X's and Y's, is the newest fill stored but not the last NO trade.
    const Z = "0x00000000000000000000000000000000000000dd";
    t.db.writer.transaction(() => {
      createIngest(t.db, t.clock).insertTrades([
        trade(Z, b, "NO", "BUY", 0.6, 100, T + 3 * HOUR + HOUR / 2),
      ]);
    })();
    expect(refreshReadModels(t.db, NOW + 60_000).kind).toBe("incremental");
    const statsOf = t.db.writer.prepare("SELECT * FROM wallet_stats WHERE address = ?");
    const incremental = statsOf.get(Z) as Record<string, any>;
    // 100 NO shares bought at 0.60 and marked at 0.25.
    expect(incremental.ledger_pnl).toBeCloseTo(-35, 9);
    refreshReadModels(t.db, NOW + 60_000, { full: true });
    expect(statsOf.get(Z)).toEqual(incremental);
  });

  it("keeps an untouched holder's marks until they are stale, then marks it as a full rebuild does", () => {
    const { ingest, markets, round } = randomWorld(5);
    round(NOW - 30 * DAY, NOW - 3 * DAY, 1500);
    const holder = "0x00000000000000000000000000000000000000f3";
    const market = markets[4]!;
    // A wallet that turns whale in another market: this one gets no new trade, yet the hour of
    // its fill gains whale volume and its sentiment counts it.
    const rising = "0x00000000000000000000000000000000000000f5";
    const quietMarket = markets[6]!;
    t.db.writer.transaction(() => {
      ingest.insertTrades([
        trade(holder, market, "YES", "BUY", 0.3, 100, NOW - 3 * DAY + HOUR),
        trade(rising, quietMarket, "YES", "BUY", 0.3, 200, NOW - 5 * DAY),
      ]);
    })();
    const t1 = NOW - DAY;
    refreshReadModels(t.db, t1);
    const statsOf = t.db.writer.prepare("SELECT * FROM wallet_stats WHERE address = ?");
    const before = statsOf.get(holder) as Record<string, any>;

    // Someone else trades the holder's market at a new price a second after the refresh.
    const other = "0x00000000000000000000000000000000000000f4";
    t.db.writer.transaction(() => {
      ingest.insertTrades([
        trade(other, market, "YES", "BUY", 0.9, 50, t1 + 1000),
        trade(rising, markets[5]!, "NO", "BUY", 0.5, 120_000, t1 + 2000),
      ]);
    })();
    const hourOf = t.db.writer.prepare(
      "SELECT whale_volume FROM market_hours WHERE market_id = ? AND hour = ?",
    );
    const risingHour = Math.floor((NOW - 5 * DAY) / HOUR);
    const quietBefore = t.db.writer
      .prepare("SELECT * FROM market_stats WHERE market_id = ?")
      .get(quietMarket) as Record<string, any>;
    const second = refreshReadModels(t.db, t1 + 60_000);
    expect(second.kind).toBe("incremental");
    const incremental = snapshot();
    expect((hourOf.get(quietMarket, risingHour) as any).whale_volume).toBeGreaterThanOrEqual(60);
    const quietAfter = t.db.writer
      .prepare("SELECT * FROM market_stats WHERE market_id = ?")
      .get(quietMarket) as Record<string, any>;
    expect(quietAfter.last_trade_at).toBe(quietBefore.last_trade_at);
    expect(quietAfter.total_whale_volume).toBeGreaterThan(quietBefore.total_whale_volume ?? 0);
    // The holder was not recomputed: its row, marks included, is the one of the last refresh.
    expect(statsOf.get(holder)).toEqual(before);
    expect(before.refreshed_at).toBe(t1);

    refreshReadModels(t.db, t1 + 60_000, { full: true });
    const full = snapshot();
    const afterFull = statsOf.get(holder) as Record<string, any>;
    // A full rebuild marks the holder's 100 YES shares at 0.90 instead of the earlier price.
    expect(afterFull.ledger_pnl).not.toBe(before.ledger_pnl);
    const MARKED = [
      "ledger_pnl",
      "total_pnl",
      "pnl_as_of",
      "refreshed_at",
      "smart_money_score",
      "breakdown",
      "wallet_type",
    ];
    // Wallets this run did not recompute keep the marks of their own refreshed_at; everything
    // else about them, and every other row, is what a full rebuild gives.
    const kept = new Set(
      incremental
        .wallet_stats!.filter((row: any) => row.refreshed_at !== t1 + 60_000)
        .map((row: any) => row.address),
    );
    expect(kept.has(holder)).toBe(true);
    expect(kept.has(other)).toBe(false);
    const withoutMarks = (rows: any[]) =>
      rows.map((row) =>
        kept.has(row.address)
          ? Object.fromEntries(Object.entries(row).filter(([k]) => !MARKED.includes(k)))
          : row,
      );
    expect(withoutMarks(incremental.wallet_stats!)).toEqual(withoutMarks(full.wallet_stats!));
    const idOf = t.db.reader.prepare("SELECT id FROM wallet_ids WHERE address = ?").pluck();
    const keptIds = new Set([...kept].map((address) => idOf.get(address)));
    const categoryWithoutPnl = (rows: any[]) =>
      rows.map((row) => (keptIds.has(row.wallet_id) ? { ...row, pnl: 0 } : row));
    expect(categoryWithoutPnl(incremental.wallet_category_stats!)).toEqual(
      categoryWithoutPnl(full.wallet_category_stats!),
    );
    for (const [table] of TABLES.filter(([name]) => !name.startsWith("wallet_stats"))) {
      if (table === "wallet_category_stats") continue;
      expect(incremental[table], table).toEqual(full[table]);
    }

    // Once its mark is older than MARK_MAX_AGE_MS, an incremental run marks it again.
    const later = t1 + 60_000 + MARK_MAX_AGE_MS + 1;
    refreshReadModels(t.db, later);
    const remarked = snapshot();
    refreshReadModels(t.db, later, { full: true });
    for (const [table] of TABLES) expect(remarked[table], table).toEqual(snapshot()[table]);
  });

  it("touches only what changed when little did", () => {
    const { round } = randomWorld(11);
    round(NOW - 30 * DAY, NOW - 2 * DAY, 2000);
    refreshReadModels(t.db, NOW - DAY);
    const again = refreshReadModels(t.db, NOW - DAY + 60_000);
    expect(again).toMatchObject({ kind: "incremental", wallets: 0, fills_read: 0 });
  });
});

describe("a full refresh's connection settings", () => {
  it("reads without the memory map and sorts on disk with helper threads through its extensions, then puts them back", () => {
    world();
    const settings = () =>
      [t.db.writer, t.db.reader].map((c) => ({
        mmap: c.pragma("mmap_size", { simple: true }),
        tempStore: c.pragma("temp_store", { simple: true }),
        threads: c.pragma("threads", { simple: true }),
        foreignKeys: c.pragma("foreign_keys", { simple: true }),
      }));
    const before = settings();
    expect(before[0]).toMatchObject({ threads: 0, foreignKeys: 1 });
    expect(before[0]!.mmap).toBeGreaterThan(0);
    const seen: ReturnType<typeof settings>[] = [];
    const extension = { name: "probe", run: () => seen.push(settings()) };
    refreshReadModels(t.db, NOW, { full: true, extensions: [extension] });
    // temp_store 1 is FILE. The extensions keep their foreign keys, which only the rebuild's own
    // transaction goes without.
    const threads = Math.min(4, availableParallelism());
    expect(seen).toEqual([
      [
        { mmap: 0, tempStore: 1, threads, foreignKeys: 1 },
        { mmap: 0, tempStore: 1, threads, foreignKeys: before[1]!.foreignKeys },
      ],
    ]);
    expect(settings()).toEqual(before);
    // An incremental refresh leaves them as they are.
    refreshReadModels(t.db, NOW + 60_000, { extensions: [extension] });
    expect(seen[1]).toEqual(before);
  });
});

describe("market_price_history (sql/0017, sql/0019, sql/0020)", () => {
  /** The stored array: the served history up to the market's cut (price-history.ts). */
  const storedOf = (marketId: number) => {
    const packed = t.db.writer
      .prepare("SELECT points FROM market_price_history WHERE market_id = ?")
      .pluck()
      .get(marketId) as Buffer | undefined;
    return packed && unpackPoints(packed);
  };
  /** The served history, as GET /v1/markets/{slug} reads it. */
  const pointsOf = (marketId: number) =>
    JSON.parse(createPriceHistoryReader(t.db.writer)(marketId)) as {
      hour: string;
      price: number;
      volume: number;
      trade_count: number;
    }[];
  const iso = (ms: number) => new Date(ms).toISOString();

  it("keeps a market's last 720 trading hours as served, rendered again when one changes", () => {
    const { a, b } = world();
    const start = Math.floor(NOW / HOUR) * HOUR - 800 * HOUR;
    t.db.writer.transaction(() => {
      const rows: NewTrade[] = [];
      // 725 trading hours, every other hour: the first five fall off the history.
      for (let i = 0; i < 725; i++) {
        rows.push(trade(X, b, "YES", "BUY", 0.1 + (i % 80) / 100, 10 + i, start - i * 2 * HOUR));
      }
      createIngest(t.db, t.clock).insertTrades(rows.reverse());
    })();
    refreshReadModels(t.db, NOW);
    const full = pointsOf(b);
    expect(full).toHaveLength(PRICE_HISTORY_POINTS);
    // The market's newest hours: world()'s three trades, then its 717 latest of the 725.
    expect(full[0]).toEqual({
      hour: iso(start - 716 * 2 * HOUR),
      price: 0.1 + (716 % 80) / 100,
      volume: expect.closeTo((0.1 + (716 % 80) / 100) * (10 + 716), 9),
      trade_count: 1,
    });
    expect(full.at(-1)).toMatchObject({ hour: iso(NOW - DAY), price: 0.5, trade_count: 1 });
    expect(pointsOf(a).map((p) => p.hour)).toEqual([T, T + HOUR, T + 2 * HOUR].map(iso));

    // A trade in the latest hour changes its point, and the stored part stays as it was.
    const stored = storedOf(b);
    t.db.writer.transaction(() => {
      createIngest(t.db, t.clock).insertTrades([
        trade(Y, b, "NO", "BUY", 0.2, 100, NOW - DAY + 60_000),
      ]);
    })();
    expect(refreshReadModels(t.db, NOW + HOUR).kind).toBe("incremental");
    expect(storedOf(b)).toBe(stored);
    expect(pointsOf(b).at(-1)).toMatchObject({ hour: iso(NOW - DAY), price: 0.8, trade_count: 2 });
    // New hours are read by each answer until TAIL_HOURS of them follow the cut: then the cut
    // moves on and the stored part is rendered again.
    const hourCount = () =>
      t.db.writer
        .prepare("SELECT count(*) FROM market_hours WHERE market_id = ?")
        .pluck()
        .get(b) as number;
    const cut = cutOf(hourCount());
    let rendered = 0;
    for (let k = 1; k <= TAIL_HOURS; k++) {
      t.db.writer.transaction(() => {
        createIngest(t.db, t.clock).insertTrades([
          trade(Y, b, "YES", "BUY", 0.7, 100, NOW + k * HOUR),
        ]);
      })();
      expect(refreshReadModels(t.db, NOW + (k + 1) * HOUR).kind).toBe("incremental");
      const moved = cutOf(hourCount()) !== cut;
      expect(storedOf(b) !== stored, `after ${k} new hours`).toBe(moved);
      if (moved) rendered = k;
      const history = pointsOf(b);
      expect(history).toHaveLength(PRICE_HISTORY_POINTS);
      expect(history[0]!.hour).toBe(iso(start - (716 - k) * 2 * HOUR));
      expect(history.at(-1)).toEqual({
        hour: iso(NOW + k * HOUR),
        price: 0.7,
        volume: 70,
        trade_count: 1,
      });
      if (moved) break;
    }
    expect(rendered).toBeGreaterThan(0);
    const incremental = pointsOf(b);
    expect(incremental.at(-rendered - 1)).toMatchObject({
      hour: iso(NOW - DAY),
      price: 0.8,
      trade_count: 2,
    });
    // A market whose hours did not change keeps its row as it was.
    expect(pointsOf(a).map((p) => p.hour)).toEqual([T, T + HOUR, T + 2 * HOUR].map(iso));
    refreshReadModels(t.db, NOW + (rendered + 1) * HOUR, { full: true });
    expect(pointsOf(b)).toEqual(incremental);
  });

  it("is rendered by the migration for a database refreshed before it, as the refresh renders it", () => {
    const { round, markets } = randomWorld(11);
    round(NOW - 40 * DAY, NOW, 2000);
    refreshReadModels(t.db, NOW);
    const rendered = t.db.writer
      .prepare("SELECT * FROM market_price_history ORDER BY market_id")
      .all();
    expect(rendered).toHaveLength(markets.length);
    // The database as 0018 left it: 0017's table, each history all but its newest point.
    t.db.writer.exec(`DROP TABLE market_price_history;
      CREATE TABLE market_price_history (
        market_id INTEGER PRIMARY KEY REFERENCES markets (id),
        points    TEXT    NOT NULL
      );
      INSERT INTO market_price_history (market_id, points)
      SELECT DISTINCT market_id, '[]' FROM market_hours;`);
    t.db.writer.pragma("user_version = 18");
    // Only 0019: later migrations are applied to this database already.
    expect(migrate(t.db.writer, filesThrough("0019")).applied).toEqual([
      "0019_price_history_tail.sql",
    ]);
    expect(
      t.db.writer.prepare("SELECT * FROM market_price_history ORDER BY market_id").all(),
    ).toEqual(rendered);
  });

  it("is deflated by the migration from 0019's text, every answer the same", () => {
    const { round, markets } = randomWorld(12);
    round(NOW - 40 * DAY, NOW, 2000);
    refreshReadModels(t.db, NOW);
    const all = () =>
      t.db.writer.prepare("SELECT * FROM market_price_history ORDER BY market_id").all() as {
        market_id: number;
        points: Buffer;
      }[];
    const rendered = all();
    expect(rendered).toHaveLength(markets.length);
    const served = rendered.map((r) => createPriceHistoryReader(t.db.writer)(r.market_id));
    // The database as 0019 left it: the same rows, each history's points as JSON text.
    t.db.writer.exec(`CREATE TABLE text_rows AS SELECT * FROM market_price_history;
      DROP TABLE market_price_history;
      CREATE TABLE market_price_history (
        market_id    INTEGER PRIMARY KEY REFERENCES markets (id),
        through_hour INTEGER,
        point_count  INTEGER NOT NULL,
        points       TEXT    NOT NULL
      );`);
    const put = t.db.writer.prepare("INSERT INTO market_price_history VALUES (?, ?, ?, ?)");
    for (const r of t.db.writer.prepare("SELECT * FROM text_rows").raw().all()) {
      const [id, through, count, points] = r as [number, number | null, number, Buffer];
      put.run(id, through, count, unpackPoints(points));
    }
    t.db.writer.exec("DROP TABLE text_rows");
    expect(
      t.db.writer
        .prepare("SELECT count(*) FROM market_price_history WHERE typeof(points) = 'text'")
        .pluck()
        .get(),
    ).toBe(markets.length);
    t.db.writer.pragma("user_version = 19");
    expect(migrate(t.db.writer, filesThrough("0020")).applied).toEqual([
      "0020_price_history_deflated.sql",
    ]);
    expect(all()).toEqual(rendered);
    expect(rendered.map((r) => createPriceHistoryReader(t.db.writer)(r.market_id))).toEqual(served);
    expect(served.some((s) => JSON.parse(s).length > 100)).toBe(true);
  });
});

describe("wallet_bets stored compactly (sql/0021)", () => {
  const STORED = `wallet_id, market_id, category, side_code, entry_price_units, buy_usd_units,
    volume_units, yes_flow_units, no_flow_units, yes_shares_units, no_shares_units, trade_count,
    two_sided, first_ts, entry_offset, last_offset, resolved, won, pnl_base, move_24h`;
  const rows = (columns: string) =>
    t.db.writer
      .prepare(`SELECT ${columns} FROM wallet_bets ORDER BY wallet_id, market_id`)
      .all() as Record<string, unknown>[];

  it("is migrated from the served columns, every bet the same to the bit and stored as a refresh stores it", () => {
    const { ingest, markets, round, wallets } = randomWorld(13);
    round(NOW - 40 * DAY, NOW - 2 * DAY, 1500);
    // Amounts exact in millionths, beside the random ones that are not.
    t.db.writer.transaction(() => {
      ingest.insertTrades([
        trade(wallets[5]!, markets[2]!, "YES", "BUY", 0.25, 40, NOW - DAY),
        trade(wallets[5]!, markets[2]!, "YES", "SELL", 0.5, 10, NOW - DAY + HOUR),
        trade(wallets[6]!, markets[3]!, "NO", "BUY", 0.125, 8, NOW - DAY),
      ]);
    })();
    refreshReadModels(t.db, NOW, { full: true });
    const served = `wallet_id, ${BET_FIELDS.join(", ")}`;
    const before = rows(served);
    const stored = rows(STORED);
    const kinds = t.db.writer
      .prepare(
        `SELECT typeof(buy_usd_units) AS kind, count(*) AS n FROM wallet_bets GROUP BY 1 ORDER BY 1`,
      )
      .all();
    expect(kinds.map((k) => (k as { kind: string }).kind)).toEqual(["integer", "real"]);
    expect(stored.some((r) => r.entry_offset !== 0 || r.last_offset !== 0)).toBe(true);
    expect(new Set(stored.map((r) => r.side_code))).toEqual(new Set([0, 1]));

    // The table as 0020 left it: every served column stored.
    t.db.writer.exec(`CREATE TABLE served_bets AS SELECT ${served} FROM wallet_bets;
      DROP TABLE wallet_bets;
      CREATE TABLE wallet_bets (
        wallet_id INTEGER NOT NULL, market_id INTEGER NOT NULL REFERENCES markets (id),
        category TEXT, side TEXT NOT NULL CHECK (side IN ('YES', 'NO')), entry_price REAL,
        buy_usd REAL NOT NULL, volume REAL NOT NULL, yes_flow REAL NOT NULL,
        no_flow REAL NOT NULL, yes_shares REAL NOT NULL, no_shares REAL NOT NULL,
        trade_count INTEGER NOT NULL, two_sided INTEGER NOT NULL, first_ts INTEGER NOT NULL,
        entry_ts INTEGER NOT NULL, last_ts INTEGER NOT NULL, resolved INTEGER NOT NULL,
        won INTEGER, pnl_base REAL NOT NULL, move_24h REAL,
        PRIMARY KEY (wallet_id, market_id)
      ) WITHOUT ROWID;
      INSERT INTO wallet_bets SELECT * FROM served_bets;
      DROP TABLE served_bets;
      CREATE INDEX wallet_bets_by_market ON wallet_bets (market_id, side, buy_usd DESC);`);
    expect(rows(served)).toEqual(before);
    t.db.writer.pragma("user_version = 20");
    expect(migrate(t.db.writer, filesThrough("0021")).applied).toEqual(["0021_compact_bets.sql"]);
    expect(rows(served)).toEqual(before);
    expect(rows(STORED)).toEqual(stored);
    const plan = t.db.writer
      .prepare(
        `EXPLAIN QUERY PLAN SELECT wallet_id FROM wallet_bets
          WHERE market_id = ? AND side = 'YES' ORDER BY buy_usd DESC`,
      )
      .all(1)
      .map((r) => (r as { detail: string }).detail);
    expect(plan.join("\n")).toContain("USING INDEX wallet_bets_by_market");
    expect(plan.join("\n")).not.toContain("TEMP B-TREE");
  });
});

describe("market_hours stored compactly (sql/0022)", () => {
  const SERVED =
    "market_id, hour, volume, whale_volume, trade_count, net_flow, open_yes, close_yes";
  const STORED = `market_id, hour, trade_count, volume_units, whale_volume_units, net_flow_units,
    open_yes_units, close_yes_units`;
  const rows = (columns: string) =>
    t.db.writer.prepare(`SELECT ${columns} FROM market_hours ORDER BY market_id, hour`).all();

  it("is migrated from the served columns, every hour the same to the bit and stored as a refresh stores it", () => {
    const { ingest, markets, round, wallets } = randomWorld(14);
    round(NOW - 40 * DAY, NOW - 2 * DAY, 1500);
    t.db.writer.transaction(() => {
      ingest.insertTrades([
        trade(wallets[5]!, markets[2]!, "YES", "BUY", 0.25, 40, NOW - DAY),
        trade(wallets[6]!, markets[2]!, "NO", "BUY", 0.5, 8, NOW - DAY + 60_000),
      ]);
    })();
    refreshReadModels(t.db, NOW, { full: true });
    const before = rows(SERVED);
    const stored = rows(STORED);
    const kinds = t.db.writer
      .prepare("SELECT DISTINCT typeof(volume_units) FROM market_hours ORDER BY 1")
      .pluck()
      .all();
    expect(kinds).toEqual(["integer", "real"]);

    // The table as 0021 left it: every served column stored.
    t.db.writer.exec(`CREATE TABLE served_hours AS SELECT ${SERVED} FROM market_hours;
      DROP TABLE market_hours;
      CREATE TABLE market_hours (
        market_id INTEGER NOT NULL REFERENCES markets (id), hour INTEGER NOT NULL,
        volume REAL NOT NULL, whale_volume REAL NOT NULL, trade_count INTEGER NOT NULL,
        net_flow REAL NOT NULL, open_yes REAL, close_yes REAL,
        PRIMARY KEY (market_id, hour)
      ) WITHOUT ROWID;
      INSERT INTO market_hours SELECT * FROM served_hours;
      DROP TABLE served_hours;
      CREATE INDEX market_hours_by_hour ON market_hours (hour, market_id);`);
    expect(rows(SERVED)).toEqual(before);
    t.db.writer.pragma("user_version = 21");
    expect(migrate(t.db.writer, filesThrough("0022")).applied).toEqual([
      "0022_compact_market_hours.sql",
    ]);
    expect(rows(SERVED)).toEqual(before);
    expect(rows(STORED)).toEqual(stored);
  });
});
