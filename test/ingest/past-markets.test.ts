import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Connection, openDb } from "../../src/db/open";
import { WHALE_VOLUME_USD } from "../../src/domain";
import { withEngine } from "../../src/history/engine";
import { historyReplica } from "../../src/history/replica";
import { historyDir } from "../../src/history/store";
import { type ImportResult, importJsonl } from "../../src/ingest/import";
import { heldFillsWithin, type PastMarketsOptions } from "../../src/ingest/past-markets";
import type { ImportSource } from "../../src/ingest/sources";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets, REPLICA_DELETE_AFTER_MS } from "../../src/refresh/retention";
import type { ReplicaConfig } from "../../src/replication/replica-url";
import { restoreHistory } from "../../src/replication/restore";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { FakeClock } from "../helpers/clock";
import { readModelSnapshot } from "../helpers/read-models";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const RETENTION = 90 * DAY;
const PAST: PastMarketsOptions = { retentionMs: RETENTION, memoryMb: 64, maxHeldFills: 100_000 };
const CATEGORIES = ["politics", "crypto", "sports"];

const apps: TestApp[] = [];
afterEach(() => {
  for (const app of apps.splice(0)) app.close();
});

function app(): TestApp {
  const made = createTestApp({ clock: new FakeClock(NOW) });
  apps.push(made);
  return made;
}

const conditionOf = (slug: string) => `0x${Buffer.from(slug).toString("hex").padStart(64, "0")}`;
const walletOf = (i: number) => `0x${(i + 1).toString(16).padStart(40, "0")}`;
const hashOf = (n: number) =>
  `0x${(n * 2654435761).toString(16).padStart(12, "0")}${"ab".repeat(26)}`;

/**
 * A dump of past markets, as a user would start from: each market's line with its resolution,
 * then the trades of every market in time order. Old markets were traded 200 to 160 days ago
 * and resolved 150 days ago (past a 90-day retention); `recent` is traded up to 2 days ago.
 * Some trades share a time, and wallet 0 trades big (a whale), so ties and whale volume count.
 */
function dump(
  options: { recent?: boolean; markets?: number; trades?: number; firstHash?: number } = {},
): string[] {
  let s = 7;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  const slugs = Array.from({ length: options.markets ?? 5 }, (_, i) => `old${i}`);
  if (options.recent) slugs.push("recent");
  const lines = slugs.map((slug, i) =>
    JSON.stringify({
      type: "market",
      slug,
      title: slug,
      category: CATEGORIES[i % CATEGORIES.length],
      condition_id: conditionOf(slug),
      end_date: new Date(NOW - 150 * DAY).toISOString(),
      created_at: new Date(NOW - 220 * DAY).toISOString(),
      ...(slug === "recent"
        ? {}
        : { resolved_outcome: i % 2 === 0 ? "YES" : "NO", resolved_at: NOW - 150 * DAY }),
    }),
  );
  const trades: { line: string; ts: number }[] = [];
  const count = options.trades ?? 600;
  for (let n = 0; n < count; n++) {
    const slug = slugs[Math.floor(rand() * slugs.length)]!;
    const walletIndex = Math.floor(rand() * 30);
    const to = slug === "recent" ? NOW - 2 * DAY : NOW - 160 * DAY;
    // Whole hours, so some trades share their time.
    const ts = NOW - 200 * DAY + Math.floor((rand() * (to - NOW + 200 * DAY)) / HOUR) * HOUR;
    const price = Math.round((0.05 + rand() * 0.9) * 100) / 100;
    trades.push({
      ts,
      line: JSON.stringify({
        type: "trade",
        tx_hash: hashOf(n + (options.firstHash ?? 1)),
        log_index: n % 3,
        wallet: walletOf(walletIndex),
        condition_id: conditionOf(slug),
        outcome: rand() < 0.5 ? "YES" : "NO",
        side: rand() < 0.75 ? "BUY" : "SELL",
        price,
        size: walletIndex === 0 ? 40_000 : Math.round(10 + rand() * 500),
        timestamp: ts,
      }),
    });
  }
  trades.sort((a, b) => a.ts - b.ts);
  return [...lines, ...trades.map((t) => t.line)];
}

const sourceOf = (lines: readonly string[]): ImportSource => ({
  name: "dump.jsonl",
  open: () => lines,
});

async function load(t: TestApp, lines: readonly string[], past: PastMarketsOptions | null) {
  const result = await importJsonl(
    { db: t.db, clock: t.clock, pastMarkets: past },
    sourceOf(lines),
  );
  if (!result.ok) throw new Error(`${result.reason}: ${JSON.stringify(result.errors.slice(0, 3))}`);
  return result.value;
}

/** What the bulk path writes besides the read models: the history's manifest and each wallet's sealed trades. */
function historyRows(db: Connection) {
  return {
    markets: db.prepare("SELECT id, compacted_at FROM markets ORDER BY id").all(),
    historyMarkets: db.prepare("SELECT * FROM history_markets ORDER BY market_id").all(),
    historyWallets: db
      .prepare("SELECT wallet_id, first_ts, last_ts, fills FROM history_wallets ORDER BY wallet_id")
      .all(),
    sealedTrades: db.prepare("SELECT * FROM wallet_sealed_trades ORDER BY wallet_id").all(),
    partitions: db.prepare("SELECT fills, min_ts, max_ts FROM history_partitions").all(),
    walletIds: db.prepare("SELECT * FROM wallet_ids ORDER BY id").all(),
  };
}

/** The rows in `table`. */
const rowsIn = (t: TestApp, table: string) =>
  t.db.reader.prepare(`SELECT count(*) FROM ${table}`).pluck().get();

/** The history's listed files and their copies, sorted. */
const listedFiles = (db: Connection) =>
  (
    db
      .prepare("SELECT file, wallet_file, time_file FROM history_partitions")
      .raw()
      .all() as string[][]
  )
    .flat()
    .sort();

/** Files recorded as on the replica but not listed (sql/0035), sorted. */
const unlistedRecords = (db: Connection) =>
  db.prepare("SELECT file FROM history_replica_unlisted ORDER BY file").pluck().all();

/** The history's files on a folder replica, sorted. */
const onReplica = (path: string) => {
  const dir = join(path, "history");
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};

/** Every fill of the history's files, as stored, in id order. */
async function sealedFills(t: TestApp): Promise<unknown[][]> {
  const dir = historyDir(t.db.path);
  const files = t.db.reader.prepare("SELECT file FROM history_partitions").pluck().all();
  if (files.length === 0) return [];
  return withEngine({ memoryMb: 64 }, async (duck) => {
    const list = files.map((f) => `'${dir}/${f}'`).join(", ");
    const reader = await duck.runAndReadAll(
      `SELECT * EXCLUDE (tx_hash), hex(tx_hash) FROM read_parquet([${list}]) ORDER BY id`,
    );
    return reader.getRowsJS() as unknown[][];
  });
}

describe("an import's past markets", () => {
  it("go straight to the fill history, with the rows importing, refreshing and compacting them leaves", async () => {
    // An installation with a market traded lately, the old markets known, and a refresh run: the
    // next one is incremental, and only the trades are new.
    const dumped = dump();
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const before = [
      ...dump({ markets: 0, recent: true, trades: 50, firstHash: 10_000 }),
      ...dumped.filter((line) => !isTrade(line)),
    ];
    const lines = dumped.filter(isTrade);
    const stored = app();
    await load(stored, before, null);
    refreshReadModels(stored.db, NOW);
    await load(stored, lines, null);
    expect(refreshReadModels(stored.db, NOW).kind).toBe("incremental");
    const compaction = await compactResolvedMarkets(stored.db, NOW, RETENTION);
    expect(compaction.markets).toBe(5);

    const bulk = app();
    await load(bulk, before, null);
    refreshReadModels(bulk.db, NOW);
    const summary = await load(bulk, lines, PAST);
    expect(summary.counts.trade).toEqual({ new: 600, updated: 0, present: 0 });
    expect(bulk.db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(50);
    expect(refreshReadModels(bulk.db, NOW).kind).toBe("incremental");

    expect(readModelSnapshot(bulk.db.reader)).toEqual(readModelSnapshot(stored.db.reader));
    expect(historyRows(bulk.db.reader)).toEqual(historyRows(stored.db.reader));
    const fills = await sealedFills(bulk);
    expect(fills).toHaveLength(600);
    expect(fills).toEqual(await sealedFills(stored));

    // A full rebuild gives the same tables.
    const incremental = readModelSnapshot(bulk.db.reader);
    refreshReadModels(bulk.db, NOW, { full: true });
    expect(readModelSnapshot(bulk.db.reader)).toEqual(incremental);
  });

  it("count a wallet within a cent of the whale line as the refresh will, in its order", async () => {
    const dumped = dump();
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const wallet = walletOf(99);
    const trade = (n: number, slug: string, usd: number, ts: number) =>
      JSON.stringify({
        type: "trade",
        tx_hash: hashOf(n),
        log_index: 0,
        wallet,
        condition_id: conditionOf(slug),
        outcome: "YES",
        side: "BUY",
        price: 0.5,
        size: usd * 2,
        timestamp: ts,
      });
    // A bet stored before, in the recent market, and two in past markets: 50,000.005 USD in all.
    const before = [
      ...dump({ markets: 0, recent: true, trades: 50, firstHash: 10_000 }),
      ...dumped.filter((line) => !isTrade(line)),
      trade(20_000, "recent", 10_000.005, NOW - 3 * DAY),
    ];
    const lines = [
      ...dumped.filter(isTrade),
      trade(20_001, "old0", 25_000, NOW - 170 * DAY),
      trade(20_002, "old1", 15_000, NOW - 170 * DAY),
    ];
    const stored = app();
    await load(stored, before, null);
    refreshReadModels(stored.db, NOW);
    await load(stored, lines, null);
    refreshReadModels(stored.db, NOW);
    await compactResolvedMarkets(stored.db, NOW, RETENTION);

    const bulk = app();
    await load(bulk, before, null);
    refreshReadModels(bulk.db, NOW);
    await load(bulk, lines, PAST);
    refreshReadModels(bulk.db, NOW);
    const total = bulk.db.reader
      .prepare("SELECT total_volume FROM wallet_stats WHERE address = ?")
      .pluck()
      .get(wallet) as number;
    expect(total).toBeGreaterThan(WHALE_VOLUME_USD);
    expect(total - WHALE_VOLUME_USD).toBeLessThan(0.01);
    expect(readModelSnapshot(bulk.db.reader)).toEqual(readModelSnapshot(stored.db.reader));
  });

  it("stores a market still traded after the cut, beside the past ones, as any other", async () => {
    const lines = dump({ recent: true });
    const stored = app();
    await load(stored, lines, null);
    refreshReadModels(stored.db, NOW);
    await compactResolvedMarkets(stored.db, NOW, RETENTION);

    const bulk = app();
    await load(bulk, lines, PAST);
    const recentFills = bulk.db.reader.prepare("SELECT count(*) FROM fills").pluck().get();
    expect(recentFills).toBeGreaterThan(0);
    expect(recentFills).toBe(stored.db.reader.prepare("SELECT count(*) FROM fills").pluck().get());
    refreshReadModels(bulk.db, NOW);
    // The recent market's fills came last, so their ids differ: compare what ids do not key.
    const byAddress = (t: TestApp) =>
      t.db.reader
        .prepare(
          `SELECT address, trade_count, total_bets, resolved_bets, wins, total_volume, ledger_pnl,
                  smart_money_score, wallet_type FROM wallet_stats ORDER BY address`,
        )
        .all();
    expect(byAddress(bulk)).toEqual(byAddress(stored));
    expect(readModelSnapshot(bulk.db.reader).market_stats).toEqual(
      readModelSnapshot(stored.db.reader).market_stats,
    );
  });

  it("finds every line of the same file present when it is imported again", async () => {
    const lines = dump();
    const t = app();
    await load(t, lines, PAST);
    const again = await load(t, lines, PAST);
    expect(again.counts.trade).toEqual({ new: 0, updated: 0, present: 600 });
    expect(await sealedFills(t)).toHaveLength(600);
  });

  it("refuses a file repeating a past market's trade, naming both lines, and keeps nothing of it", async () => {
    const lines = dump();
    const repeated = [...lines, lines[lines.length - 1]!];
    const t = app();
    const result: ImportResult = await importJsonl(
      { db: t.db, clock: t.clock, pastMarkets: PAST },
      sourceOf(repeated),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      {
        line: repeated.length,
        reason: expect.stringMatching(/^duplicate trade: .* is also on line \d+$/),
      },
    ]);
    expect(t.db.reader.prepare("SELECT count(*) FROM history_partitions").pluck().get()).toBe(0);
    expect(t.db.reader.prepare("SELECT count(*) FROM markets").pluck().get()).toBe(0);
    // No file was written for a refused import.
    expect(
      readdirSync(t.db.path.replace(/[^/]+$/, "")).filter((f) => f.endsWith("-history")),
    ).toEqual([]);
  });

  it("take this path in `smartmoney import` with fill retention on, and put the file on a replica", async () => {
    const dir = mkdtempSync(join(tmpdir(), "smartmoney-past-"));
    const file = join(dir, "dump.jsonl");
    writeFileSync(file, `${dump().join("\n")}\n`);
    const retention = { SMARTMONEY_FILL_RETENTION: "2160h" };
    const report = (stdout: string) => JSON.parse(stdout)[0];

    const bulk = await runCli(["import", file, "--db", join(dir, "bulk.db"), "--json"], retention);
    expect(bulk.code).toBe(0);
    expect(report(bulk.stdout).history).toEqual({ markets: 5, fills: 600 });
    const human = await runCli(["import", file, "--db", join(dir, "again.db")], retention);
    expect(human.stdout).toContain(
      "600 of the new trades, in 5 past market(s), went straight to the fill history",
    );
    const status = await runCli(["status", "--db", join(dir, "bulk.db"), "--json"]);
    expect(JSON.parse(status.stdout).fills.total).toBe(600);

    // With a replica: the file and its copies are put there, listed, and no record is left to
    // delete them; a restore from the replica finds every file the database lists.
    const path = join(dir, "replicated.db");
    const replica: ReplicaConfig = { type: "file", path: join(dir, "replica") };
    const env = { ...retention, SMARTMONEY_REPLICA_URL: `file://${replica.path}` };
    const replicated = await runCli(["import", file, "--db", path, "--json"], env);
    expect(replicated.code, replicated.stderr).toBe(0);
    expect(report(replicated.stdout).history).toEqual({ markets: 5, fills: 600 });
    const again = await runCli(["import", file, "--db", path, "--json"], env);
    expect(report(again.stdout).counts.trade.present).toBe(600);
    const db = openDb(path);
    try {
      const files = listedFiles(db.reader);
      expect(files).toHaveLength(3);
      expect(onReplica(replica.path)).toEqual(files);
      expect(unlistedRecords(db.reader)).toEqual([]);
      const fetched = await restoreHistory(path, join(dir, "restored-history"), replica);
      expect(fetched.ok).toBe(true);
      expect(readdirSync(join(dir, "restored-history")).sort()).toEqual(files);
    } finally {
      db.close();
    }
  });

  it("refuse the file whole when the replica refuses the history file", async () => {
    const t = app();
    const dir = mkdtempSync(join(tmpdir(), "smartmoney-past-"));
    const notAFolder = join(dir, "replica");
    writeFileSync(notAFolder, "");
    const replica = historyReplica({ type: "file", path: notAFolder });
    const result = await importJsonl(
      { db: t.db, clock: t.clock, pastMarkets: { ...PAST, replica } },
      sourceOf(dump()),
    );
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.reason).toMatch(
      /^dump\.jsonl: refused, the history's replica refused the file for its past markets \(file:\/\/.*ENOTDIR.*\); import it again once the replica takes files$/,
    );
    expect([rowsIn(t, "markets"), rowsIn(t, "history_partitions"), rowsIn(t, "fills")]).toEqual([
      0, 0, 0,
    ]);
    expect(readdirSync(historyDir(t.db.path))).toEqual([]);
    // Its names stay recorded, committed before the import: a compaction deletes them in time.
    expect(unlistedRecords(t.db.reader)).toHaveLength(3);
  });

  it("leave a file put on the replica but never listed for a compaction to delete in time", async () => {
    const t = app();
    const replicaPath = mkdtempSync(join(tmpdir(), "smartmoney-past-replica-"));
    const replica = historyReplica({ type: "file", path: replicaPath });
    t.db.writer.exec(`CREATE TRIGGER fail_listing BEFORE INSERT ON history_markets
      BEGIN SELECT RAISE(ABORT, 'listing failed'); END`);
    await expect(load(t, dump(), { ...PAST, replica })).rejects.toThrow("listing failed");
    expect(onReplica(replicaPath)).toHaveLength(3);
    expect(unlistedRecords(t.db.reader)).toEqual(onReplica(replicaPath));
    t.db.writer.exec("DROP TRIGGER fail_listing");

    // Within Litestream's retention they stay; past it, they are deleted.
    const compact = (at: number) =>
      compactResolvedMarkets(t.db, NOW, RETENTION, { replica, clock: () => at });
    expect(await compact(NOW + DAY)).toMatchObject({ replica_files_deleted: 0 });
    expect(await compact(NOW + REPLICA_DELETE_AFTER_MS + 1)).toMatchObject({
      replica_files_deleted: 3,
      replica_error: null,
    });
    expect(onReplica(replicaPath)).toEqual([]);
    expect(unlistedRecords(t.db.reader)).toEqual([]);

    expect((await load(t, dump(), { ...PAST, replica })).history).toEqual({
      markets: 5,
      fills: 600,
    });
    expect(onReplica(replicaPath)).toEqual(listedFiles(t.db.reader));
    expect(unlistedRecords(t.db.reader)).toEqual([]);
  });

  it("refuse a file whose past markets hold more trades than its memory allows, keeping nothing", async () => {
    const t = app();
    const lines = dump();
    const result = await importJsonl(
      { db: t.db, clock: t.clock, pastMarkets: { ...PAST, maxHeldFills: 250 } },
      sourceOf(lines),
    );
    // The 251st trade, after the five markets' lines.
    expect(result.ok ? "" : result.reason).toBe(
      "dump.jsonl: refused at line 256: the trades of its past markets (with the stored fills of those already in the history) pass 250, the most one import holds within SMARTMONEY_MEMORY_MB; nothing was imported from it: split it into files of whole markets (sorted by market) of fewer trades, or raise SMARTMONEY_MEMORY_MB",
    );
    expect([rowsIn(t, "markets"), rowsIn(t, "fills"), rowsIn(t, "history_partitions")]).toEqual([
      0, 0, 0,
    ]);
    // With room for every trade, the same file goes to the history.
    expect((await load(t, lines, { ...PAST, maxHeldFills: 600 })).history).toEqual({
      markets: 5,
      fills: 600,
    });
    expect(heldFillsWithin(1024)).toBe(1_048_576);

    // A later file's trades count with the stored fills of its markets in the history, which
    // it loads to model them again: 250 new and 350 stored, 600 in all.
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const trades = lines.filter(isTrade);
    const split = app();
    await load(split, [...lines.filter((line) => !isTrade(line)), ...trades.slice(0, 350)], PAST);
    refreshReadModels(split.db, NOW);
    const before = readModelSnapshot(split.db.reader);
    const second = await importJsonl(
      { db: split.db, clock: split.clock, pastMarkets: { ...PAST, maxHeldFills: 599 } },
      sourceOf(trades.slice(350)),
    );
    expect(second.ok ? "" : second.reason).toMatch(
      /^dump\.jsonl: refused at line 250: .* pass 599,/,
    );
    expect(readModelSnapshot(split.db.reader)).toEqual(before);
    expect((await load(split, trades.slice(350), { ...PAST, maxHeldFills: 601 })).history).toEqual({
      markets: 5,
      fills: 250,
    });
  });

  it("leaves nothing, not even the file, when listing it fails, and the next try writes it", async () => {
    const t = app();
    t.db.writer.exec(`CREATE TRIGGER fail_listing BEFORE INSERT ON history_markets
      BEGIN SELECT RAISE(ABORT, 'listing failed'); END`);
    await expect(load(t, dump(), PAST)).rejects.toThrow("listing failed");
    expect([
      rowsIn(t, "markets"),
      rowsIn(t, "history_partitions"),
      rowsIn(t, "wallet_bets"),
    ]).toEqual([0, 0, 0]);
    expect(readdirSync(historyDir(t.db.path))).toEqual([]);
    t.db.writer.exec("DROP TRIGGER fail_listing");
    expect((await load(t, dump(), PAST)).history).toEqual({ markets: 5, fills: 600 });
    expect(await sealedFills(t)).toHaveLength(600);
  });

  it("add a later file's fills of a market already in the history, as if both files had been one", async () => {
    const lines = dump();
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const trades = lines.filter(isTrade);
    const first = [...lines.filter((line) => !isTrade(line)), ...trades.slice(0, 350)];
    const second = trades.slice(350);

    const whole = app();
    await load(whole, lines, PAST);
    refreshReadModels(whole.db, NOW);

    const split = app();
    await load(split, first, PAST);
    refreshReadModels(split.db, NOW);
    const added = await load(split, second, PAST);
    expect(added.counts.trade).toEqual({ new: 250, updated: 0, present: 0 });
    expect(added.history).toEqual({ markets: 5, fills: 250 });
    expect(refreshReadModels(split.db, NOW).kind).toBe("incremental");

    expect(readModelSnapshot(split.db.reader)).toEqual(readModelSnapshot(whole.db.reader));
    const sealedTrades = (t: TestApp) =>
      t.db.reader.prepare("SELECT * FROM wallet_sealed_trades ORDER BY wallet_id").all();
    expect(sealedTrades(split)).toEqual(sealedTrades(whole));
    expect(await sealedFills(split)).toEqual(await sealedFills(whole));
    // Each market is in both files now.
    expect(split.db.reader.prepare("SELECT count(*) FROM history_markets").pluck().get()).toBe(10);

    refreshReadModels(split.db, NOW, { full: true });
    expect(readModelSnapshot(split.db.reader)).toEqual(readModelSnapshot(whole.db.reader));
    // And a third look finds every line present.
    expect((await load(split, second, PAST)).counts.trade).toEqual({
      new: 0,
      updated: 0,
      present: 250,
    });
  });

  it("are merged by a compaction's run with the files they share a market with", async () => {
    const lines = dump();
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const trades = lines.filter(isTrade);
    const t = app();
    await load(
      t,
      lines.filter((line) => !isTrade(line)),
      null,
    );
    for (let from = 0; from < trades.length; from += 150) {
      await load(t, trades.slice(from, from + 150), PAST);
    }
    expect(rowsIn(t, "history_partitions")).toBe(4);
    expect(rowsIn(t, "history_markets")).toBe(20);
    refreshReadModels(t.db, NOW);
    const before = readModelSnapshot(t.db.reader);
    const sealed = await sealedFills(t);
    expect(sealed).toHaveLength(600);

    const run = await compactResolvedMarkets(t.db, NOW, RETENTION);
    expect(run.files_merged).toBe(4);
    expect(rowsIn(t, "history_partitions")).toBe(1);
    expect(rowsIn(t, "history_markets")).toBe(5);
    expect(await sealedFills(t)).toEqual(sealed);
    expect(readModelSnapshot(t.db.reader)).toEqual(before);
  });

  it("model a compacted market again with the fill a signal kept in the database", async () => {
    const lines = dump();
    const isTrade = (line: string) => line.startsWith('{"type":"trade"');
    const trades = lines.filter(isTrade);
    const first = [...lines.filter((line) => !isTrade(line)), ...trades.slice(0, 350)];
    /** A whale signal naming the first fill of old0: a compaction keeps that fill in `fills`. */
    const signalFirstFill = (t: TestApp) => {
      const fill = t.db.reader
        .prepare(
          `SELECT id, wallet, market_id FROM trades WHERE market_id =
             (SELECT id FROM markets WHERE slug = 'old0') ORDER BY ts, id LIMIT 1`,
        )
        .get() as { id: number; wallet: string; market_id: number };
      t.db.writer
        .prepare(
          `INSERT INTO signals (type, wallet, wallet_type, market_id, trade_id, score, bet_value,
             side, outcome, price, explanation, created_at)
           VALUES ('whale', ?, NULL, ?, ?, 1, 1000, 'BUY', 'YES', 0.5, 'test', ?)`,
        )
        .run(fill.wallet, fill.market_id, fill.id, NOW - 170 * DAY);
    };

    const whole = app();
    await load(whole, lines, null);
    signalFirstFill(whole);
    refreshReadModels(whole.db, NOW);
    await compactResolvedMarkets(whole.db, NOW, RETENTION);

    const split = app();
    await load(split, first, null);
    signalFirstFill(split);
    refreshReadModels(split.db, NOW);
    expect((await compactResolvedMarkets(split.db, NOW, RETENTION)).fills_kept).toBe(1);
    await load(split, trades.slice(350), PAST);
    refreshReadModels(split.db, NOW);

    expect(readModelSnapshot(split.db.reader)).toEqual(readModelSnapshot(whole.db.reader));
    expect(await sealedFills(split)).toEqual(await sealedFills(whole));
  });

  it("refuse a new fill of a market in the history dated at or after the cut", async () => {
    const t = app();
    await load(t, dump(), PAST);
    const late = JSON.stringify({
      type: "trade",
      tx_hash: hashOf(99_999),
      log_index: 0,
      wallet: walletOf(1),
      condition_id: conditionOf("old0"),
      outcome: "YES",
      side: "BUY",
      price: 0.5,
      size: 10,
      timestamp: NOW - DAY,
    });
    const result = await importJsonl(
      { db: t.db, clock: t.clock, pastMarkets: PAST },
      sourceOf([late]),
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      { line: 1, reason: expect.stringContaining("was compacted by SMARTMONEY_FILL_RETENTION") },
    ]);
    expect(await sealedFills(t)).toHaveLength(600);
  });
});
