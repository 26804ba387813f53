import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countFills, loadSealedFills, streamFills } from "../../src/backtest/history";
import { type Db, openDb } from "../../src/db/open";
import { withEngine } from "../../src/history/engine";
import { HISTORY_UNREADABLE } from "../../src/history/reader";
import { historyDir, listedFiles, partitions, withHistory } from "../../src/history/store";
import { migrate } from "../../src/migrations/migrate";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { DAY, NOW, RETENTION, sealableWorld } from "./world";

/**
 * Sealing a compacted market's fills into the history (sql/0031): every fill stays stored in
 * exactly one place, `fills` or a listed Parquet file, whatever the moment the process dies.
 */

const STEPS: SealStep[] = ["before-write", "written", "in-transaction", "committed"];

let t: TestApp;
let template: string;
/** Every fill of the world, as stored before any seal: the set each test must find again. */
let before: string[];

beforeAll(() => {
  t = createTestApp();
  sealableWorld(t, { old: 5, recent: 1, trades: 600 });
  before = storedFills(t.db, []);
  t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  template = join(t.dir, "template.db");
  copyFileSync(t.config.dbPath, template);
});
afterAll(() => t.close());

/** Every file the manifest lists (sealed files and their copies in wallet order), sorted. */
function files(db: Db): string[] {
  return listedFiles(db.reader)
    .map((f) => f.file)
    .sort();
}

/** Each fill as one comparable line, in id order; `history` are rows read from the files. */
function storedFills(db: Db, history: string[]): string[] {
  const rows = db.reader
    .prepare(
      `SELECT id, tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts
         FROM trades`,
    )
    .raw()
    .all() as unknown[][];
  return [...rows.map((r) => JSON.stringify(r)), ...history].sort(byId);
}

const byId = (a: string, b: string) =>
  Number(a.slice(1, a.indexOf(","))) - Number(b.slice(1, b.indexOf(",")));

/** The fills in the listed files, as storedFills lines. */
async function historyFills(db: Db): Promise<string[]> {
  return withHistory(db.reader, db.path, 256, async (duck, relation) => {
    if (relation === null) return [];
    const result = await duck.runAndReadAll(
      `SELECT id, '0x' || lower(hex(tx_hash)), log_index, wallet, market_id, outcome, side, price,
              size, usd_value, ts FROM ${relation}`,
    );
    return result
      .getRowsJS()
      .map((r) => JSON.stringify(r.map((v) => (typeof v === "bigint" ? Number(v) : v))));
  });
}

async function expectEveryFillOnce(db: Db): Promise<void> {
  const all = storedFills(db, await historyFills(db));
  expect(all).toHaveLength(before.length);
  expect(all).toEqual(before);
}

describe("sealing compacted markets into the history", () => {
  it("moves their fills into listed Parquet files: every fill once, sizes in the manifest", async () => {
    const path = join(t.dir, "sealed.db");
    copyFileSync(template, path);
    const db = openDb(path);
    try {
      migrate(db.writer);
      const summary = await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      expect(summary).toMatchObject({ markets: 5, markets_waiting: 0 });
      const listed = partitions(db.reader);
      // Five markets in batches of two: three files.
      expect(listed.map((p) => p.id)).toEqual([1, 2, 3]);
      for (const p of listed) {
        expect(p.file).toMatch(/^fills-\d{13}-[0-9a-f]{12}\.parquet$/);
        // Each with its copy in wallet order (sql/0032), listed in the same row.
        expect(p.wallet_file).toMatch(/^wallets-\d{13}-[0-9a-f]{12}\.parquet$/);
        expect(p.wallet_bytes).toBeGreaterThan(0);
      }
      expect(listed.reduce((n, p) => n + p.fills, 0)).toBe(summary.fills_deleted);
      expect(readdirSync(historyDir(path)).sort()).toEqual(files(db));
      // Each sealed market names its file: the pairs of a batch of two share one.
      expect(
        db.reader
          .prepare("SELECT partition_id FROM history_markets ORDER BY market_id")
          .pluck()
          .all(),
      ).toEqual([1, 1, 2, 2, 3]);
      await expectEveryFillOnce(db);
    } finally {
      db.close();
    }
  });

  it("keeps every fill once when two seals run at once (the jobs process and one by hand)", async () => {
    const path = join(t.dir, "twice.db");
    copyFileSync(template, path);
    const one = openDb(path);
    const two = openDb(path);
    try {
      const [a, b] = await Promise.all([
        compactResolvedMarkets(one, NOW, RETENTION, { batch: 2 }),
        compactResolvedMarkets(two, NOW, RETENTION, { batch: 2 }),
      ]);
      expect(a.markets + b.markets).toBe(5);
      await expectEveryFillOnce(one);
      // The seal that lost a batch removed its own file and nothing else.
      expect(readdirSync(historyDir(path)).sort()).toEqual(files(one));
    } finally {
      one.close();
      two.close();
    }
  });

  it.each(STEPS)(
    "loses and doubles nothing when the process is killed at %s, and the next seal finishes",
    async (step) => {
      const path = join(t.dir, `killed-${step}.db`);
      copyFileSync(template, path);
      const child = spawnSync(
        process.execPath,
        [
          "--import",
          "tsx",
          fileURLToPath(new URL("./seal-child.ts", import.meta.url)),
          path,
          String(NOW),
          step,
        ],
        { encoding: "utf8", env: { ...process.env, SMARTMONEY_LOG_LEVEL: "error" } },
      );
      expect(child.stderr).toBe("");
      expect(child.signal).toBe("SIGKILL");
      const db = openDb(path);
      try {
        await expectEveryFillOnce(db);
        const sealedBefore = partitions(db.reader).length;
        expect(sealedBefore).toBe(step === "committed" ? 1 : 0);
        // A seal writes two files: the file in market order and its copy in wallet order.
        const filesBefore = files(db).length;
        expect(filesBefore).toBe(2 * sealedBefore);
        // A file written but never listed is no part of the history: the next seal leaves it
        // while it is fresh (it could be another seal's, about to commit), one an hour later
        // removes it.
        const dir = historyDir(path);
        const leftover = existsSync(dir) ? readdirSync(dir) : [];
        const orphans = step === "written" || step === "in-transaction" ? 2 : 0;
        expect(leftover.length).toBe(filesBefore + orphans);
        const summary = await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
        expect(summary.markets).toBe(step === "committed" ? 3 : 5);
        await expectEveryFillOnce(db);
        const listed = files(db);
        expect(readdirSync(dir)).toHaveLength(listed.length + orphans);
        for (const file of listed) expect(readdirSync(dir)).toContain(file);
        await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
        expect(readdirSync(dir).sort()).toEqual([...listed].sort());
        await expectEveryFillOnce(db);
      } finally {
        db.close();
      }
    },
    60_000,
  );
});

describe("the history beside the database", () => {
  it("is counted by status, exported with the recent fills, and copied by backup", async () => {
    const path = join(t.dir, "operated.db");
    copyFileSync(template, path);
    const db = openDb(path);
    const sealed = await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
    db.close();
    const env = { SMARTMONEY_DB: path, SMARTMONEY_LOG_LEVEL: "error" };
    const status = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(status.fills).toMatchObject({
      total: before.length,
      history: sealed.fills_deleted,
      recent: before.length - sealed.fills_deleted,
    });
    expect(status.history.files).toBe(3);
    expect(status.history.bytes).toBeGreaterThan(0);

    const out = join(t.dir, "operated-export");
    expect((await runCli(["export", "--out", out], env)).code).toBe(0);
    const exported = await withEngine({ memoryMb: 256 }, async (duck) =>
      (
        await duck.runAndReadAll(
          `SELECT tx_hash, log_index, epoch_ms(timestamp) FROM read_parquet('${join(out, "fills.parquet")}')`,
        )
      )
        .getRowsJS()
        .map((r) => `${r[0]}:${r[1]}:${r[2]}`),
    );
    const keys = before.map((line) => {
      const [, hash, logIndex, , , , , , , , ts] = JSON.parse(line) as unknown[];
      return `${hash}:${logIndex}:${ts}`;
    });
    // Every fill once, in time order (ties in id order, as stored).
    expect(exported).toHaveLength(keys.length);
    expect([...exported].sort()).toEqual([...keys].sort());
    const times = exported.map((k) => Number(k.split(":")[2]));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // Importing the export back changes nothing: every fill is present, sealed ones included.
    const again = await runCli(["import", join(out, "fills.parquet"), "--json"], env);
    expect(again.stderr).toBe("");
    expect(JSON.parse(again.stdout)[0].counts.trade).toEqual({
      new: 0,
      updated: 0,
      present: before.length,
    });
    // A fill a sealed market never had is still refused, naming the market and the setting.
    const stray = join(t.dir, "stray.jsonl");
    writeFileSync(
      stray,
      `${JSON.stringify({
        type: "trade",
        tx_hash: `0x${"ab".repeat(32)}`,
        log_index: 0,
        wallet: `0x${"1".padStart(40, "0")}`,
        condition_id: `0x${"1".padStart(64, "0")}`,
        outcome: "YES",
        side: "BUY",
        price: 0.5,
        size: 1,
        timestamp: NOW - 199 * DAY,
      })}\n`,
    );
    const refused = await runCli(["import", stray], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('stray.jsonl:1: market "old0" was compacted');

    const backup = join(t.dir, "operated-backup.db");
    const result = await runCli(["backup", backup, "--json"], env);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).history_path).toBe(historyDir(backup));
    const restored = openDb(backup);
    try {
      await expectEveryFillOnce(restored);
    } finally {
      restored.close();
    }
  });
});

describe("trade pages over the history", () => {
  it("answer as before the seal: the same rows, in the same order, page by page", async () => {
    const unsealedPath = join(t.dir, "pages-unsealed.db");
    const sealedPath = join(t.dir, "pages-sealed.db");
    copyFileSync(template, unsealedPath);
    copyFileSync(template, sealedPath);
    const db = openDb(sealedPath);
    expect((await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 })).markets).toBe(5);
    db.close();
    const unsealed = createTestApp({ env: { SMARTMONEY_DB: unsealedPath } });
    const sealed = createTestApp({ env: { SMARTMONEY_DB: sealedPath } });
    try {
      const keys = [unsealed.key("terminal_pro"), sealed.key("terminal_pro")] as const;
      const fills = before.map((line) => JSON.parse(line) as unknown[]);
      const oldFill = fills.find((f) => f[4] === 1)!;
      const [hash, wallet] = [oldFill[1] as string, oldFill[3] as string];
      const condition = `0x${"1".padStart(64, "0")}`;
      const day = (ms: number) => new Date(ms).toISOString();
      const queries = [
        `/v1/trades?market=${condition}`,
        `/v1/wallets/${wallet}/trades`,
        `/v1/trades?wallet=${wallet}`,
        `/v1/trades?wallet=${wallet}&side=BUY`,
        // A window of sealed fills (the wallet pages above mix both places), big trades only too.
        `/v1/trades?start=${day(NOW - 201 * DAY)}&end=${day(NOW - 199 * DAY)}`,
        `/v1/trades?start=${day(NOW - 201 * DAY)}&end=${day(NOW - 199 * DAY)}&min_bet=5`,
      ];
      /** Every page of `query` on one app, as lists of trades. */
      async function walk(app: TestApp, key: string, query: string): Promise<unknown[][]> {
        const pages: unknown[][] = [];
        let cursor: string | null = null;
        do {
          const sep = query.includes("?") ? "&" : "?";
          const url = `${query}${sep}limit=7${cursor ? `&cursor=${cursor}` : ""}`;
          const res = await app.get(url, key);
          expect(res.status, url).toBe(200);
          const page = (await res.json()) as { data: unknown[]; next_cursor: string | null };
          pages.push(page.data);
          cursor = page.next_cursor;
        } while (cursor !== null && pages.length < 200);
        return pages;
      }
      for (const query of queries) {
        const expected = await walk(unsealed, keys[0], query);
        expect(expected.flat().length, query).toBeGreaterThan(7);
        expect(await walk(sealed, keys[1], query), query).toEqual(expected);
      }
      // The dossier's latest trades, too.
      const dossier = async (app: TestApp, key: string) =>
        ((await (await app.get(`/v1/wallets/${wallet}`, key)).json()) as { recent_trades: unknown })
          .recent_trades;
      expect(await dossier(sealed, keys[1])).toEqual(await dossier(unsealed, keys[0]));
      // The page really came from the history: the market's fills are all sealed.
      expect(
        sealed.db.reader.prepare("SELECT count(*) FROM fills WHERE market_id = 1").pluck().get(),
      ).toBe(0);
      const byHash = async (app: TestApp, key: string, h: string) => {
        const res = await app.get(`/v1/trades/${h}`, key);
        return { status: res.status, body: await res.json() };
      };
      expect(await byHash(sealed, keys[1], hash)).toEqual(await byHash(unsealed, keys[0], hash));
      const unknown = `0x${"e".repeat(64)}`;
      expect((await byHash(sealed, keys[1], unknown)).status).toBe(404);
    } finally {
      unsealed.close();
      sealed.close();
    }
  });
});

describe("a damaged history", () => {
  it("fails only the answers that need the file, clearly, and status names it", async () => {
    const path = join(t.dir, "damaged.db");
    copyFileSync(template, path);
    const db = openDb(path);
    await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
    const [first, second] = partitions(db.reader);
    db.close();
    rmSync(join(historyDir(path), first!.file));
    truncateSync(join(historyDir(path), second!.file), 100);
    const app = createTestApp({ env: { SMARTMONEY_DB: path } });
    try {
      const key = app.key("terminal_pro");
      // Market 1's fills were in the first file.
      const res = await app.raw(`/v1/trades?market=0x${"1".padStart(64, "0")}`, key);
      expect(res.status).toBe(500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error).toMatchObject({ code: "internal_error", message: HISTORY_UNREADABLE });
      expect(app.logText()).toContain(first!.file);
      // What does not need the file is served: the recent market's trades, a leaderboard.
      expect((await app.get(`/v1/trades?market=0x${"6".padStart(64, "0")}`, key)).status).toBe(200);
      expect((await app.get("/v1/leaderboards/whales", key)).status).toBe(200);
    } finally {
      app.close();
    }
    const env = { SMARTMONEY_DB: path, SMARTMONEY_LOG_LEVEL: "error" };
    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(1);
    expect(JSON.parse(status.stdout).history).toMatchObject({
      missing: [first!.file],
      damaged: [second!.file],
    });
    expect(status.stderr.trim().split("\n")).toHaveLength(1);
    expect(status.stderr).toContain("2 file(s) of the fill history are missing or damaged");
  });
});

describe("the backtest's seam over the history", () => {
  it("streams every fill in (ts, id) order wherever it is stored", async () => {
    const sealedPath = join(t.dir, "backtest-sealed.db");
    copyFileSync(template, sealedPath);
    const db = openDb(sealedPath);
    try {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      const sealed = await loadSealedFills(db.reader, db.path, 256);
      expect(sealed.length).toBeGreaterThan(0);
      const merged = [...streamFills(db.reader, sealed)];
      expect(merged).toEqual([...streamFills(t.db.reader)]);
      expect(countFills(db.reader)).toBe(merged.length);
    } finally {
      db.close();
    }
  });
});
