import {
  copyFileSync,
  existsSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countFills, loadSealedFills, readFills, streamFills } from "../../src/backtest/history";
import { type Db, openDb } from "../../src/db/open";
import { withEngine } from "../../src/history/engine";
import { HISTORY_UNREADABLE } from "../../src/history/reader";
import {
  historyDir,
  historyRelation,
  holdsWalletIds,
  listedFiles,
  partitions,
  WALLET_ID_FILE,
  withHistory,
} from "../../src/history/store";
import { migrate } from "../../src/migrations/migrate";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { compactionKilledAt, DAY, NOW, RETENTION, sealableWorld, withoutCopies } from "./world";

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

/** A copy of the unsealed world, named `name` in the test's directory: its path. */
function worldCopy(name: string): string {
  const path = join(t.dir, name);
  copyFileSync(template, path);
  return path;
}

/** Every file the manifest lists (sealed files and their copies), sorted. */
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

/** Runs `work` on the database at `path`, opened for it and closed after. */
async function withDb(path: string, work: (db: Db) => Promise<void>): Promise<void> {
  const db = openDb(path);
  try {
    await work(db);
  } finally {
    db.close();
  }
}

async function expectEveryFillOnce(db: Db): Promise<void> {
  const all = storedFills(db, await historyFills(db));
  expect(all).toHaveLength(before.length);
  expect(all).toEqual(before);
  await expectTimeCopiesAgree(db);
  // Where each wallet's sealed fills are (sql/0036) is what the frozen bets of each listed
  // file's markets say, whatever seal, merge or kill came before.
  const spans = (sql: string) => db.reader.prepare(sql).raw().all();
  expect(
    spans(
      "SELECT wallet_id, partition_id, first_ts, last_ts, fills FROM history_wallets ORDER BY 1, 2",
    ),
  ).toEqual(
    spans(
      `SELECT b.wallet_id, hm.partition_id, min(b.first_ts), max(b.last_ts), sum(b.trade_count)
         FROM history_markets hm JOIN wallet_bets b ON b.market_id = hm.market_id
        GROUP BY 1, 2 ORDER BY 1, 2`,
    ),
  );
}

/** Each listed file's copy in time order (sql/0037) holds its rows, stored in (ts, id) order. */
async function expectTimeCopiesAgree(db: Db): Promise<void> {
  const dir = historyDir(db.path);
  await withEngine({ memoryMb: 256, threads: 1 }, async (duck) => {
    for (const p of partitions(db.reader)) {
      if (p.time_file === null) continue;
      const rows = async (sql: string) =>
        JSON.stringify((await duck.runAndReadAll(sql)).getRowsJS(), (_, v) =>
          typeof v === "bigint" ? Number(v) : v,
        );
      expect(await rows(`SELECT * FROM read_parquet('${join(dir, p.time_file)}')`)).toEqual(
        await rows(`SELECT * FROM read_parquet('${join(dir, p.file)}') ORDER BY ts, id`),
      );
    }
  });
}

describe("sealing compacted markets into the history", () => {
  it("moves their fills into listed Parquet files: every fill once, sizes in the manifest", async () => {
    const path = worldCopy("sealed.db");
    const db = openDb(path);
    try {
      migrate(db.writer);
      const summary = await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      expect(summary).toMatchObject({ markets: 5, markets_waiting: 0 });
      const listed = partitions(db.reader);
      // Five markets in batches of two: three files.
      expect(listed.map((p) => p.id)).toEqual([1, 2, 3]);
      for (const p of listed) {
        // Of wallet ids (WALLET_ID_FILE), each with its copies in wallet order (sql/0034) and
        // time order (sql/0037), listed in the same row.
        expect(p.file).toMatch(/^fills-\d{13}-[0-9a-f]{12}\.v2\.parquet$/);
        expect(p.wallet_file).toMatch(/^wallets-\d{13}-[0-9a-f]{12}\.v2\.parquet$/);
        expect(p.wallet_bytes).toBeGreaterThan(0);
        expect(p.time_file).toMatch(/^times-\d{13}-[0-9a-f]{12}\.v2\.parquet$/);
        expect(p.time_bytes).toBeGreaterThan(0);
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
    const path = worldCopy("twice.db");
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
      const path = worldCopy(`killed-${step}.db`);
      compactionKilledAt(path, step);
      const db = openDb(path);
      try {
        await expectEveryFillOnce(db);
        const sealedBefore = partitions(db.reader).length;
        expect(sealedBefore).toBe(step === "committed" ? 1 : 0);
        // A seal writes three files: the file in market order and its copies in wallet and
        // time order.
        const filesBefore = files(db).length;
        expect(filesBefore).toBe(3 * sealedBefore);
        // A file written but never listed is no part of the history: the next seal leaves it
        // while it is fresh (it could be another seal's, about to commit), one an hour later
        // removes it.
        const dir = historyDir(path);
        const leftover = existsSync(dir) ? readdirSync(dir) : [];
        const orphans = step === "written" || step === "in-transaction" ? 3 : 0;
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

describe("upgrading to sql/0036", () => {
  it("lists where each wallet's sealed fills are for a history sealed before it", async () => {
    const path = worldCopy("before-0036.db");
    const db = openDb(path);
    try {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      // The database as sealed at schema 35: no history_wallets, no copies in time order, no
      // blocks for the hash keys, no index of signals by fill.
      db.writer.exec(`DROP TABLE history_wallets; DROP INDEX history_partitions_by_time_file;
        ALTER TABLE history_partitions DROP COLUMN time_file;
        ALTER TABLE history_partitions DROP COLUMN time_bytes;
        ALTER TABLE history_tx_keys DROP COLUMN blocks; DROP INDEX signals_by_trade;
        DROP TABLE fill_id_floor;`);
      db.writer.pragma("user_version = 35");
      expect(migrate(db.writer).applied).toEqual([
        "0036_history_wallets.sql",
        "0037_history_time_files.sql",
        "0038_history_tx_places.sql",
        "0039_signals_by_trade.sql",
        "0040_fill_id_floor.sql",
        "0041_history_markets_by_file.sql",
      ]);
      expect(
        db.reader.prepare("SELECT count(DISTINCT partition_id) FROM history_wallets").pluck().get(),
      ).toBe(3);
      await expectEveryFillOnce(db);
    } finally {
      db.close();
    }
  });
});

describe("upgrading to sql/0037", () => {
  it("gives each file sealed before it its copy in time order, a few files a run, the rest as they were", async () => {
    const path = worldCopy("before-0037.db");
    const dir = historyDir(path);
    const db = openDb(path);
    try {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      // As sealed at schema 36: each file with its copy in wallet order, none in time order.
      const sealed = partitions(db.reader);
      expect(withoutCopies(db, ["time"])).toHaveLength(3);
      const first = await compactResolvedMarkets(db, NOW, RETENTION, { upgradesPerRun: 2 });
      expect(first).toMatchObject({ time_copies_written: 2, files_rewritten: 0, files_merged: 0 });
      expect(partitions(db.reader).map((p) => p.time_file === null)).toEqual([false, false, true]);
      const second = await compactResolvedMarkets(db, NOW, RETENTION, { upgradesPerRun: 2 });
      expect(second.time_copies_written).toBe(1);
      const upgraded = partitions(db.reader);
      // The files and their copies in wallet order are the same files; each has a new copy.
      expect(upgraded.map(({ time_file, time_bytes, ...p }) => p)).toEqual(
        sealed.map(({ time_file, time_bytes, ...p }) => p),
      );
      for (const p of upgraded) {
        expect(p.time_file).toMatch(/^times-\d{13}-[0-9a-f]{12}\.v2\.parquet$/);
        expect(p.time_bytes).toBe(statSync(join(dir, p.time_file!)).size);
      }
      expect(readdirSync(dir).sort()).toEqual(files(db));
      await expectEveryFillOnce(db);
      expect((await compactResolvedMarkets(db, NOW, RETENTION)).time_copies_written).toBe(0);
    } finally {
      db.close();
    }
    await expectPagesAsUnsealed(path);
  });
});

describe("the history beside the database", () => {
  it("runs by hand (`jobs run compact`) with its progress on stderr, every fill once", async () => {
    const path = worldCopy("by-hand.db");
    const env = {
      SMARTMONEY_DB: path,
      SMARTMONEY_LOG_LEVEL: "error",
      SMARTMONEY_FILL_RETENTION: `${RETENTION / 3_600_000}h`,
    };
    const run = await runCli(
      ["jobs", "run", "compact", "--now", new Date(NOW).toISOString(), "--json"],
      env,
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ job: "compact", markets: 5 });
    // Piped stderr: one plain line when it ends (and one every ten seconds before).
    expect(run.stderr.trim().split("\n").at(-1)).toMatch(/^compacting: 100%, 5 of 5 markets/);
    await withDb(path, expectEveryFillOnce);
  });

  it("is counted by status, exported with the recent fills, and copied by backup", async () => {
    const path = worldCopy("operated.db");
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

/**
 * Every page of the trade queries, the dossier's trades and a trade by hash on the database at
 * `sealedPath` as on the world before any seal.
 */
async function expectPagesAsUnsealed(sealedPath: string): Promise<void> {
  const unsealedPath = worldCopy(`unsealed-for-${sealedPath.split("/").pop()}`);
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
      // Windows of many sealed fills, read from the copies in time order step by step back in
      // time (windowSealedPage).
      `/v1/trades?start=${day(NOW - 250 * DAY)}&end=${day(NOW - 165 * DAY)}`,
      `/v1/trades?start=${day(NOW - 250 * DAY)}&end=${day(NOW - 165 * DAY)}&side=SELL&min_bet=5`,
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
}

describe("trade pages over the history", () => {
  it("answer as before the seal: the same rows, in the same order, page by page", async () => {
    const sealedPath = worldCopy("pages-sealed.db");
    const db = openDb(sealedPath);
    expect((await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 })).markets).toBe(5);
    db.close();
    await expectPagesAsUnsealed(sealedPath);
  });

  it("read the trades window from the copies in time order, and a market's page from its file", async () => {
    const sealedPath = worldCopy("window-sealed.db");
    await withDb(sealedPath, async (db) => {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      // Without the files in market order, only what reads the copies in time order answers.
      for (const p of partitions(db.reader)) rmSync(join(historyDir(sealedPath), p.file));
    });
    const unsealed = createTestApp({ env: { SMARTMONEY_DB: worldCopy("window-unsealed.db") } });
    const sealed = createTestApp({ env: { SMARTMONEY_DB: sealedPath } });
    try {
      const day = (ms: number) => new Date(ms).toISOString();
      const window = `/v1/trades?start=${day(NOW - 250 * DAY)}&end=${day(NOW - 165 * DAY)}&limit=100`;
      const page = async (app: TestApp, url: string) => {
        const res = await app.get(url, app.key("terminal_pro"));
        const body = (await res.json()) as { next_cursor?: string | null };
        // A cursor is signed by its instance's secret: its position is the part before the dot.
        return { status: res.status, body, at: body.next_cursor?.split(".")[0] };
      };
      const expected = await page(unsealed, window);
      expect(expected.status).toBe(200);
      const read = await page(sealed, window);
      expect({ ...read, body: (read.body as { data: unknown }).data }).toEqual({
        ...expected,
        body: (expected.body as { data: unknown }).data,
      });
      const market = await page(sealed, `/v1/trades?market=0x${"1".padStart(64, "0")}`);
      expect(market).toMatchObject({ status: 500, body: { error: { code: "internal_error" } } });
    } finally {
      unsealed.close();
      sealed.close();
    }
  });

  it("answer the same from files sealed with wallet addresses, which a compaction writes again with ids", async () => {
    const path = worldCopy("addresses.db");
    await withDb(path, async (db) => {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      // The first two files (and their copies) as a seal wrote them before WALLET_ID_FILE: the
      // wallet's address as text, named without the suffix; the third is left as it is.
      const dir = historyDir(path);
      const listed = partitions(db.reader);
      for (const p of listed.slice(0, 2)) {
        const file = p.file.replace(WALLET_ID_FILE, ".parquet");
        const walletFile = p.wallet_file!.replace(WALLET_ID_FILE, ".parquet");
        await withEngine({ memoryMb: 256 }, async (duck) => {
          const rows = await historyRelation(duck, db.reader, dir, [p]);
          for (const [name, order] of [
            [file, "market_id, ts, id"],
            [walletFile, "wallet, ts, id"],
          ]) {
            await duck.run(
              `COPY (SELECT * FROM ${rows} ORDER BY ${order}) TO '${join(dir, name!)}'
                 (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384)`,
            );
          }
        });
        db.writer
          .prepare(
            `UPDATE history_partitions SET file = ?, bytes = ?, wallet_file = ?, wallet_bytes = ?,
                    time_file = NULL, time_bytes = NULL WHERE id = ?`,
          )
          .run(
            file,
            statSync(join(dir, file)).size,
            walletFile,
            statSync(join(dir, walletFile)).size,
            p.id,
          );
        rmSync(join(dir, p.file));
        rmSync(join(dir, p.wallet_file!));
        rmSync(join(dir, p.time_file!));
      }
      const schema = await withEngine({ memoryMb: 256 }, async (duck) =>
        (
          await duck.runAndReadAll(
            `SELECT name, type FROM parquet_schema('${join(dir, partitions(db.reader)[0]!.file)}')`,
          )
        ).getRowsJS(),
      );
      expect(schema).toContainEqual(["wallet", "BYTE_ARRAY"]);
      await expectEveryFillOnce(db);
    });
    // Read as they are, beside a file of ids.
    await expectPagesAsUnsealed(path);
    await withDb(path, async (db) => {
      const summary = await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
      expect(summary.files_rewritten).toBe(2);
      for (const p of partitions(db.reader)) {
        expect(holdsWalletIds(p.file)).toBe(true);
        expect(holdsWalletIds(p.wallet_file!)).toBe(true);
        expect(holdsWalletIds(p.time_file!)).toBe(true);
      }
      await expectEveryFillOnce(db);
      // The files they replace, unlisted, are removed an hour after (here: at once).
      await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
      expect(readdirSync(historyDir(path)).sort()).toEqual(files(db));
    });
    await expectPagesAsUnsealed(path);
  });
});

describe("a damaged history", () => {
  it("fails only the answers that need the file, clearly, and status names it", async () => {
    const path = worldCopy("damaged.db");
    const db = openDb(path);
    const inFirst = db.reader
      .prepare(
        `SELECT '0x' || lower(hex(tx_hash)) FROM fills
          WHERE market_id = (SELECT id FROM markets WHERE condition_id = ?) LIMIT 1`,
      )
      .pluck()
      .get(`0x${"1".padStart(64, "0")}`) as string;
    await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
    const [first, second] = partitions(db.reader);
    db.close();
    rmSync(join(historyDir(path), first!.file));
    rmSync(join(historyDir(path), first!.wallet_file!));
    truncateSync(join(historyDir(path), second!.file), 100);
    rmSync(join(historyDir(path), second!.time_file!));
    const app = createTestApp({ env: { SMARTMONEY_DB: path } });
    try {
      const key = app.key("terminal_pro");
      // Market 1's fills were in the first file.
      const res = await app.raw(`/v1/trades?market=0x${"1".padStart(64, "0")}`, key);
      expect(res.status).toBe(500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error).toMatchObject({ code: "internal_error", message: HISTORY_UNREADABLE });
      expect(app.logText()).toContain(first!.file);
      // What does not need the file is served: the recent market's trades, a leaderboard, and a
      // wallet's newest page when its recent fills fill it (all newer than any sealed fill).
      expect((await app.get(`/v1/trades?market=0x${"6".padStart(64, "0")}`, key)).status).toBe(200);
      const wallet = `0x${"1".padStart(40, "0")}`;
      expect((await app.get(`/v1/wallets/${wallet}/trades?limit=1`, key)).status).toBe(200);
      expect((await app.raw(`/v1/wallets/${wallet}/trades?limit=3`, key)).status).toBe(500);
      expect((await app.get("/v1/leaderboards/whales", key)).status).toBe(200);
      // A hash is looked for only in the files whose keys hold it (sql/0032): one of the
      // missing file fails, one no file holds is a 404 without opening any.
      expect((await app.raw(`/v1/trades/${inFirst}`, key)).status).toBe(500);
      const nowhere = `0x${"ab".repeat(32)}`;
      expect((await app.get(`/v1/trades/${nowhere}`, key)).status).toBe(404);
      // Files listed before keys were kept may hold any hash: they are read.
      app.db.writer.exec("DELETE FROM history_tx_keys");
      expect((await app.raw(`/v1/trades/${nowhere}`, key)).status).toBe(500);
      // The trades window over sealed times reads the copies in time order: one is missing.
      const day = (ms: number) => new Date(ms).toISOString();
      const window = await app.raw(
        `/v1/trades?start=${day(NOW - 201 * DAY)}&end=${day(NOW - 199 * DAY)}`,
        key,
      );
      expect(window.status).toBe(500);
      expect(((await window.json()) as { error: unknown }).error).toMatchObject({
        code: "internal_error",
        message: HISTORY_UNREADABLE,
      });
      expect(app.logText()).toContain(second!.time_file!);
    } finally {
      app.close();
    }
    const env = { SMARTMONEY_DB: path, SMARTMONEY_LOG_LEVEL: "error" };
    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(1);
    expect(JSON.parse(status.stdout).history).toMatchObject({
      missing: [first!.file, first!.wallet_file, second!.time_file],
      damaged: [second!.file],
    });
    expect(status.stderr.trim().split("\n")).toHaveLength(1);
    expect(status.stderr).toContain("4 file(s) of the fill history are missing or damaged");
  });
});

describe("the backtest's seam over the history", () => {
  it("streams every fill in (ts, id) order wherever it is stored", async () => {
    const sealedPath = worldCopy("backtest-sealed.db");
    const db = openDb(sealedPath);
    try {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2 });
      const sealed = await loadSealedFills(db.reader, db.path, 256);
      expect(sealed.length).toBeGreaterThan(0);
      const merged = [...streamFills(db.reader, sealed)];
      expect(merged).toEqual([...streamFills(t.db.reader)]);
      expect(countFills(db.reader)).toBe(merged.length);
      // The index's reader gives the same fills, in the same order, to the last bit.
      const read: unknown[] = [];
      const wallets: string[] = [];
      readFills(
        db.reader,
        sealed,
      )({
        wallet: (address) => wallets.push(address) - 1,
        push: (id, wallet, marketId, kind, price, size, usd, ts) =>
          read.push({
            id,
            wallet: wallets[wallet],
            marketId,
            outcome: kind & 1 ? "NO" : "YES",
            side: kind & 2 ? "SELL" : "BUY",
            price,
            size,
            usd,
            ts,
          }),
      });
      expect(read).toStrictEqual(merged.map((fill) => ({ ...fill })));
    } finally {
      db.close();
    }
  });
});

describe("merging the history's small files", () => {
  it("swaps many files for one, sorted as a seal sorts: every fill once, the same answers", async () => {
    const path = worldCopy("merged.db");
    const dir = historyDir(path);
    const db = openDb(path);
    try {
      // Five files (a market each) and their copies, merged by the next run.
      const summary = await compactResolvedMarkets(db, NOW, RETENTION, {
        batch: 1,
        mergeTiers: [],
      });
      expect(partitions(db.reader)).toHaveLength(5);
      // Sealed two hours ago: the merge unlists them now, and they stay an hour from now.
      const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
      for (const file of files(db)) utimesSync(join(dir, file), twoHoursAgo, twoHoursAgo);
      const merged = await compactResolvedMarkets(db, NOW, RETENTION);
      expect(merged.files_merged).toBe(5);
      const [only, ...others] = partitions(db.reader);
      expect(others).toEqual([]);
      expect(only!.fills).toBe(summary.fills_deleted);
      // Every sealed market points at the merged file; the hash keys are the merged file's.
      expect(
        db.reader.prepare("SELECT DISTINCT partition_id FROM history_markets").pluck().all(),
      ).toEqual([only!.id]);
      expect(
        db.reader.prepare("SELECT DISTINCT partition_id FROM history_tx_keys").pluck().all(),
      ).toEqual([only!.id]);
      await expectEveryFillOnce(db);
      const order = await withHistory(db.reader, path, 256, async (duck, relation) =>
        (await duck.runAndReadAll(`SELECT market_id, ts, id FROM ${relation}`)).getRowsJS(),
      );
      const sorted = [...order].sort(
        (a, b) =>
          Number(a[0]) - Number(b[0]) || Number(a[1]) - Number(b[1]) || Number(a[2]) - Number(b[2]),
      );
      expect(order).toEqual(sorted);
      // The fifteen old files stay for an hour from their unlisting: a reader may have chosen
      // them.
      expect(readdirSync(dir)).toHaveLength(18);
      await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 60_000 });
      expect(readdirSync(dir)).toHaveLength(18);
      await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
      expect(readdirSync(dir).sort()).toEqual(files(db));
    } finally {
      db.close();
    }
    // Served as before: a sealed market's page and a trade by hash.
    const app = createTestApp({ env: { SMARTMONEY_DB: path } });
    try {
      const key = app.key("terminal_pro");
      const page = await app.get(`/v1/trades?market=0x${"1".padStart(64, "0")}&limit=5`, key);
      expect(page.status).toBe(200);
      const [first] = ((await page.json()) as { data: { tx_hash: string }[] }).data;
      expect((await app.get(`/v1/trades/${first!.tx_hash}`, key)).status).toBe(200);
    } finally {
      app.close();
    }
  });

  it("merges the first tier's files into the second's once enough of them are listed", async () => {
    const path = worldCopy("tiers.db");
    // Each market's file holds about 100 fills: the first tier makes files of two markets, the
    // second of two such files.
    const mergeTiers = [
      { from: 0, below: 250, minFiles: 4 },
      { from: 180, below: 10_000, minFiles: 2 },
    ];
    await withDb(path, async (db) => {
      const sealOnly = { batch: 1, mergeTiers: [] };
      expect((await compactResolvedMarkets(db, NOW, RETENTION, sealOnly)).files_merged).toBe(0);
      const perMarket = partitions(db.reader).map((p) => p.fills);
      expect(perMarket).toHaveLength(5);
      for (const fills of perMarket) expect(fills).toBeGreaterThan(90);
      for (const fills of perMarket) expect(fills).toBeLessThan(125);
      const run = await compactResolvedMarkets(db, NOW, RETENTION, { mergeTiers });
      // Markets 1 and 2, and 3 and 4, in the first tier; those two files in the second; market
      // 5's file, alone in the first tier, as it was.
      expect(run.files_merged).toBe(6);
      const [lone, merged, ...none] = partitions(db.reader);
      expect(none).toEqual([]);
      expect([lone!.fills, merged!.fills]).toEqual([
        perMarket[4],
        perMarket.slice(0, 4).reduce((a, b) => a + b, 0),
      ]);
      const marketsOf = (id: number) =>
        db.reader
          .prepare("SELECT count(*) FROM history_markets WHERE partition_id = ?")
          .pluck()
          .get(id);
      expect(marketsOf(merged!.id)).toBe(4);
      await expectEveryFillOnce(db);
      expect((await compactResolvedMarkets(db, NOW, RETENTION, { mergeTiers })).files_merged).toBe(
        0,
      );
    });
    await expectPagesAsUnsealed(path);
  });

  it("merges the files a run seals in that same run", async () => {
    const path = worldCopy("sealed-and-merged.db");
    await withDb(path, async (db) => {
      // Five files (a market each), merged into one before the run ends.
      const run = await compactResolvedMarkets(db, NOW, RETENTION, { batch: 1 });
      expect(run).toMatchObject({ markets: 5, files_merged: 5 });
      const [only, ...others] = partitions(db.reader);
      expect(others).toEqual([]);
      expect(only!.fills).toBe(run.fills_deleted);
      await expectEveryFillOnce(db);
    });
    await expectPagesAsUnsealed(path);
  });

  it.each([
    ["merge-written", "next-run"],
    ["merge-committed", "next-run"],
    ["merge-written", "same-run"],
    ["merge-committed", "same-run"],
  ] as const)(
    "loses and doubles nothing when the process is killed at %s (merging in the %s)",
    async (step, merge) => {
      const path = worldCopy(`killed-${step}-${merge}.db`);
      // The child seals five files, then is killed merging them: in the run after, or in the
      // run that sealed them.
      compactionKilledAt(path, step, { merge });
      await withDb(path, async (db) => {
        await expectEveryFillOnce(db);
        expect(partitions(db.reader)).toHaveLength(step === "merge-committed" ? 1 : 5);
        // Fifteen sealed files and the three merged ones, listed or not.
        expect(readdirSync(historyDir(path))).toHaveLength(18);
        await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
        await expectEveryFillOnce(db);
        expect(partitions(db.reader)).toHaveLength(1);
        await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
        expect(readdirSync(historyDir(path)).sort()).toEqual(files(db));
        await expectEveryFillOnce(db);
      });
    },
    60_000,
  );
});
