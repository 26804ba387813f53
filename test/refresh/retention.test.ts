import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config";
import { importJsonl } from "../../src/ingest/import";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshJob } from "../../src/jobs/refresh";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets, retentionStatus } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { READ_MODEL_TABLES, readModelSnapshot } from "../helpers/read-models";
import { newTrade as trade } from "../helpers/trades";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const RETENTION = 90 * DAY;
const conditionOf = (slug: string) => `0x${Buffer.from(slug).toString("hex").padStart(64, "0")}`;

let t: TestApp;
afterEach(() => t?.close());

/**
 * Old markets (traded 200 to 160 days ago, resolved 150 days ago: due for a 90-day retention),
 * recent ones traded up to now, one old market resolved only lately (not due), and a signal
 * naming one old fill. Wallet 0 trades big in every market (a whale).
 */
function world(seed: number, env: NodeJS.ProcessEnv = {}) {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  t = createTestApp({ env });
  const ingest = createIngest(t.db, t.clock);
  const wallets = Array.from(
    { length: 40 },
    (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`,
  );
  const categories = ["politics", "crypto", "sports", "culture"];
  const ids: Record<string, number> = {};
  const slugs = ["old0", "old1", "old2", "old3", "lateResolved", "new0", "new1", "new2"];
  t.db.writer.transaction(() => {
    slugs.forEach((slug, i) => {
      const marketId = addMarket(ingest, {
        slug,
        category: categories[i % 4]!,
        condition_id: conditionOf(slug),
      });
      ids[slug] = marketId;
    });
  })();
  const round = (markets: string[], from: number, to: number, count: number) => {
    const rows: NewTrade[] = [];
    for (let i = 0; i < count; i++) {
      const wallet = wallets[Math.floor(rand() * wallets.length)]!;
      const market = ids[markets[Math.floor(rand() * markets.length)]!]!;
      rows.push(
        trade(
          wallet,
          market,
          rand() < 0.5 ? "YES" : "NO",
          rand() < 0.75 ? "BUY" : "SELL",
          0.05 + rand() * 0.9,
          wallet === wallets[0] ? 40_000 : 10 + rand() * 500,
          from + Math.floor(rand() * (to - from)),
        ),
      );
    }
    rows.sort((p, q) => p.ts - q.ts);
    t.db.writer.transaction(() => ingest.insertTrades(rows))();
  };
  round(["old0", "old1", "old2", "old3", "lateResolved"], NOW - 200 * DAY, NOW - 160 * DAY, 1500);
  round(["new0", "new1", "new2"], NOW - 200 * DAY, NOW - 2 * DAY, 1500);
  t.db.writer.transaction(() => {
    for (const [i, slug] of ["old0", "old1", "old2", "old3"].entries()) {
      ingest.resolveMarket(ids[slug]!, i % 2 === 0 ? "YES" : "NO", NOW - 150 * DAY);
    }
    ingest.resolveMarket(ids.lateResolved!, "YES", NOW - 10 * DAY);
    ingest.resolveMarket(ids.new0!, "NO", NOW - DAY);
  })();
  // A signal naming one fill of old0: that fill is kept.
  const signalled = t.db.writer
    .prepare("SELECT id, wallet, market_id FROM trades WHERE market_id = ? ORDER BY id LIMIT 1")
    .get(ids.old0!) as { id: number; wallet: string; market_id: number };
  t.db.writer
    .prepare(
      `INSERT INTO signals (type, wallet, wallet_type, market_id, trade_id, score, bet_value, side,
         outcome, price, explanation, created_at)
       VALUES ('whale', ?, 'whale', ?, ?, 1, 1000, 'BUY', 'YES', 0.5, 'test', ?)`,
    )
    .run(signalled.wallet, signalled.market_id, signalled.id, NOW - 170 * DAY);
  return { ingest, ids, round, wallets, signalled };
}

const TABLES = READ_MODEL_TABLES;
const snapshot = () => readModelSnapshot(t.db.writer);
const fillsOf = (marketId: number) =>
  t.db.writer.prepare("SELECT count(*) FROM fills WHERE market_id = ?").pluck().get(marketId);

describe("fill retention", () => {
  it("compacts markets resolved before the window; a full rebuild then gives the same read models", async () => {
    const { ids, signalled } = world(3);
    refreshReadModels(t.db, NOW);
    const before = snapshot();

    const summary = await compactResolvedMarkets(t.db, NOW, RETENTION, { batch: 3 });
    expect(summary).toMatchObject({
      retention: "2160h",
      markets: 4,
      fills_kept: 1,
      markets_waiting: 0,
    });
    expect(summary.fills_deleted).toBeGreaterThan(1000);
    // Only the signal's fill is left of the old markets; the rest keep every fill.
    expect(fillsOf(ids.old0!)).toBe(1);
    for (const slug of ["old1", "old2", "old3"]) expect(fillsOf(ids[slug]!)).toBe(0);
    expect(fillsOf(ids.lateResolved!)).toBeGreaterThan(0);
    expect(
      t.db.writer.prepare("SELECT id FROM trades WHERE market_id = ?").pluck().all(ids.old0!),
    ).toEqual([signalled.id]);
    const compacted = t.db.writer
      .prepare("SELECT slug FROM markets WHERE compacted_at = ? ORDER BY slug")
      .pluck()
      .all(NOW);
    expect(compacted).toEqual(["old0", "old1", "old2", "old3"]);
    expect(retentionStatus(t.db)).toMatchObject({
      compacted_markets: 4,
      last_run: { markets: 4, fills_kept: 1, at: new Date(NOW).toISOString() },
    });

    // Compaction leaves every read model as it was, the timing buckets too (they count the
    // sealed trades, sql/0033); a full rebuild agrees.
    const compactedState = snapshot();
    for (const [table] of TABLES) expect(compactedState[table], table).toEqual(before[table]);
    expect(
      t.db.writer.prepare("SELECT count(*) FROM wallet_sealed_trades").pluck().get(),
    ).toBeGreaterThan(10);
    refreshReadModels(t.db, NOW, { full: true });
    const rebuilt = snapshot();
    for (const [table] of TABLES) expect(rebuilt[table], table).toEqual(compactedState[table]);

    // Nothing is due twice.
    expect((await compactResolvedMarkets(t.db, NOW, RETENTION)).markets).toBe(0);
  });

  it("keeps the incremental refresh equal to a full rebuild with compacted markets", async () => {
    const { ingest, ids, round, wallets } = world(5);
    refreshReadModels(t.db, NOW - 2 * DAY);
    await compactResolvedMarkets(t.db, NOW - 2 * DAY, RETENTION);
    // Later: new trades (a wallet of the old markets turns whale), a resolution, a compacted
    // market (with a fill kept for its signal) moved to another category, and time for marks to go stale.
    round(["new1", "new2"], NOW - 2 * DAY, NOW - HOUR, 400);
    t.db.writer.transaction(() => {
      ingest.insertTrades([trade(wallets[5]!, ids.new2!, "YES", "BUY", 0.5, 200_000, NOW - HOUR)]);
      ingest.resolveMarket(ids.new1!, "YES", NOW - HOUR);
      const moved = ingest.upsertMarket({
        slug: "old0",
        title: "old0",
        category: "weather",
        condition_id: conditionOf("old0"),
        end_date: null,
        created_at: 0,
        resolved_outcome: null,
        resolved_at: null,
      });
      if (!moved.ok || moved.status !== "updated") throw new Error("old0 was not updated");
    })();
    const second = refreshReadModels(t.db, NOW);
    expect(second.kind).toBe("incremental");
    const incremental = snapshot();
    refreshReadModels(t.db, NOW, { full: true });
    const full = snapshot();
    for (const [table] of TABLES) expect(incremental[table], table).toEqual(full[table]);
    // The compacted market's bets keep the category they had (documented in docs/operations.md).
    expect(
      t.db.writer
        .prepare("SELECT DISTINCT category FROM wallet_bets WHERE market_id = ?")
        .pluck()
        .all(ids.old0!),
    ).toEqual(["politics"]);
  });

  it("keeps the timing buckets of a wallet with more trades than they count, batch after batch", async () => {
    const { ids, ingest, wallets } = world(11);
    // A wallet with 600 trades in the old markets and 150 in a recent one: the buckets count its
    // 500 newest, of which the old markets' sealed trades hold the older 350.
    const busy = wallets[7]!;
    const old = ["old0", "old1", "old2", "old3"].map((slug) => ids[slug]!);
    t.db.writer.transaction(() => {
      ingest.insertTrades([
        ...Array.from({ length: 600 }, (_, i) =>
          trade(
            busy,
            old[i % 4]!,
            i % 3 ? "YES" : "NO",
            "BUY",
            0.4,
            20,
            NOW - 199 * DAY + i * HOUR,
          ),
        ),
        ...Array.from({ length: 150 }, (_, i) =>
          trade(busy, ids.new0!, "NO", "BUY", 0.5, 20, NOW - 100 * DAY + i * HOUR),
        ),
      ]);
    })();
    refreshReadModels(t.db, NOW);
    const before = snapshot();
    expect((await compactResolvedMarkets(t.db, NOW, RETENTION, { batch: 1 })).markets).toBe(4);
    const sealed = t.db.writer
      .prepare(
        "SELECT length(trades) FROM wallet_sealed_trades WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?)",
      )
      .pluck()
      .get(busy) as number;
    expect(sealed).toBeGreaterThan(0);
    const compacted = snapshot();
    expect(compacted.wallet_timing).toEqual(before.wallet_timing);
    refreshReadModels(t.db, NOW, { full: true });
    for (const [table] of TABLES) expect(snapshot()[table], table).toEqual(compacted[table]);
  });

  it("leaves every market whole when a batch fails, and the next run finishes the work", async () => {
    const { ids } = world(17);
    refreshReadModels(t.db, NOW);
    const before = snapshot();
    const fillsBefore = fillsOf(ids.old2!);
    // The third market's batch fails after its fills are deleted, as a kill or a full disk would.
    t.db.writer.exec(`CREATE TRIGGER fail_old2 BEFORE UPDATE OF compacted_at ON markets
      WHEN NEW.id = ${ids.old2} BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    await expect(compactResolvedMarkets(t.db, NOW, RETENTION, { batch: 1 })).rejects.toThrow(
      "disk full",
    );
    expect(fillsOf(ids.old2!)).toBe(fillsBefore);
    expect(
      t.db.writer
        .prepare("SELECT slug FROM markets WHERE compacted_at IS NOT NULL ORDER BY slug")
        .pluck()
        .all(),
    ).toEqual(["old0", "old1"]);
    t.db.writer.exec("DROP TRIGGER fail_old2");
    expect(await compactResolvedMarkets(t.db, NOW, RETENTION)).toMatchObject({ markets: 2 });
    refreshReadModels(t.db, NOW, { full: true });
    const after = snapshot();
    for (const [table] of TABLES) {
      if (table !== "wallet_timing") expect(after[table], table).toEqual(before[table]);
    }
  });

  it("waits for the refresh to count a due market's fills", async () => {
    const { ids, ingest, wallets } = world(9);
    refreshReadModels(t.db, NOW);
    // A late fill of old2 the read models have not counted yet.
    t.db.writer.transaction(() => {
      ingest.insertTrades([trade(wallets[2]!, ids.old2!, "YES", "BUY", 0.4, 10, NOW - 170 * DAY)]);
    })();
    expect(await compactResolvedMarkets(t.db, NOW, RETENTION)).toMatchObject({
      markets: 3,
      markets_waiting: 1,
    });
    refreshReadModels(t.db, NOW);
    expect(await compactResolvedMarkets(t.db, NOW, RETENTION)).toMatchObject({
      markets: 1,
      markets_waiting: 0,
    });
  });

  it("leaves a market whose fill arrives while it compacts others for the next run", async () => {
    const { ids } = world(9);
    refreshReadModels(t.db, NOW);
    const fillsBefore = fillsOf(ids.old2!);
    // As another process's import would: a fill of old2 stored (and old2 marked dirty) after
    // the due markets were listed, while old0 is compacted.
    t.db.writer.exec(`CREATE TRIGGER late_fill AFTER UPDATE OF compacted_at ON markets
      WHEN NEW.id = ${ids.old0} BEGIN
        INSERT OR IGNORE INTO dirty_markets (market_id) VALUES (${ids.old2});
      END`);
    expect(await compactResolvedMarkets(t.db, NOW, RETENTION, { batch: 1 })).toMatchObject({
      markets: 3,
      markets_waiting: 1,
    });
    t.db.writer.exec("DROP TRIGGER late_fill");
    expect(fillsOf(ids.old2!)).toBe(fillsBefore);
    expect(
      t.db.writer.prepare("SELECT compacted_at FROM markets WHERE id = ?").pluck().get(ids.old2),
    ).toBeNull();
    refreshReadModels(t.db, NOW);
    expect(await compactResolvedMarkets(t.db, NOW, RETENTION)).toMatchObject({ markets: 1 });
  });

  it("refuses later fills of a compacted market on every ingest path, naming it and the setting", async () => {
    const { ids, wallets, signalled } = world(11);
    refreshReadModels(t.db, NOW);
    await compactResolvedMarkets(t.db, NOW, RETENTION);
    const refused: { count: number; reason: string }[] = [];
    const ingest = createIngest(t.db, t.clock, {
      onRefusedTrades: (trades, reason) => refused.push({ count: trades.length, reason }),
    });
    const stored = t.db.writer.transaction(() =>
      ingest.insertTrades([
        trade(wallets[1]!, ids.old3!, "YES", "BUY", 0.4, 10, NOW - 170 * DAY),
        trade(wallets[1]!, ids.new2!, "YES", "BUY", 0.4, 10, NOW - HOUR),
      ]),
    )();
    expect(stored.map((s) => s.market_id)).toEqual([ids.new2]);
    expect(refused).toEqual([
      {
        count: 1,
        reason:
          'market "old3" was compacted by SMARTMONEY_FILL_RETENTION: fills of markets resolved before the retention window are no longer stored',
      },
    ]);

    // An import: the kept fill is present; a deleted one is a line error, which refuses the file.
    const kept = t.db.writer
      .prepare(
        "SELECT tx_hash, log_index, wallet, outcome, side, price, size, ts FROM trades WHERE id = ?",
      )
      .get(signalled.id) as Record<string, any>;
    const line = (over: Record<string, unknown>) =>
      JSON.stringify({
        type: "trade",
        tx_hash: kept.tx_hash,
        log_index: kept.log_index,
        wallet: kept.wallet,
        condition_id: conditionOf("old0"),
        outcome: kept.outcome,
        side: kept.side,
        price: kept.price,
        size: kept.size,
        timestamp: kept.ts,
        ...over,
      });
    const lines = [line({}), line({ log_index: kept.log_index + 1 })];
    const result = await importJsonl(
      { db: t.db, clock: t.clock },
      { name: "late.jsonl", open: () => lines },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      {
        line: 2,
        reason:
          'market "old0" was compacted by SMARTMONEY_FILL_RETENTION: fills of markets resolved before the retention window are no longer stored',
      },
    ]);
    const skipping = await importJsonl(
      { db: t.db, clock: t.clock },
      { name: "late.jsonl", open: () => lines },
      { skipInvalid: true, rejectsPath: `${t.db.path}.rejects.jsonl` },
    );
    expect(skipping).toMatchObject({
      ok: true,
      value: { counts: { trade: { new: 0, present: 1 } }, rejected: 1 },
    });
    expect(fillsOf(ids.old0!)).toBe(1);
  });

  it("runs after the scheduled refresh when SMARTMONEY_FILL_RETENTION is set, with a log line", async () => {
    world(13, { SMARTMONEY_FILL_RETENTION: "2160h" });
    t.clock.set(NOW);
    const job = refreshJob(t.app);
    const first = (await job.run()) as {
      kind: string;
      compaction: { markets: number; fills_deleted: number };
    };
    expect(first).toMatchObject({ kind: "full", compaction: { markets: 4, fills_kept: 1 } });
    expect(job.idle?.(first)).toBe(false);
    expect(t.logs.find((l) => l.compaction)?.msg).toBe(
      "fill retention (SMARTMONEY_FILL_RETENTION=2160h) compacted 4 markets resolved before 2026-08-03T12:00:00.000Z: " +
        `${first.compaction.fills_deleted} fills moved to the history, 1 kept for their signals`,
    );
    const second = await job.run();
    expect(second).toMatchObject({ kind: "incremental", compaction: { markets: 0 } });
  });

  it("is off by default; SMARTMONEY_FILL_RETENTION takes a duration of at least 720h", async () => {
    const off = loadConfig({});
    expect(off.ok && off.config.fillRetentionMs).toBeNull();
    const on = loadConfig({ SMARTMONEY_FILL_RETENTION: "2160h" });
    expect(on.ok && on.config.fillRetentionMs).toBe(RETENTION);
    for (const bad of ["240h", "90 days", "-1h"]) {
      const r = loadConfig({ SMARTMONEY_FILL_RETENTION: bad });
      expect(r.ok ? [] : r.problems).toEqual([
        `SMARTMONEY_FILL_RETENTION: "${bad}" must be a duration of at least 720h (30 days) such as 2160h (90 days), or empty for off`,
      ]);
    }
    t = createTestApp();
    await expect(compactResolvedMarkets(t.db, NOW, DAY)).rejects.toThrow(/at least 720h/);
  });
});
