import { copyFileSync, cpSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/open";
import type { HistoryReader, SealedFill } from "../../src/history/reader";
import { historyDir, listedFiles, partitions } from "../../src/history/store";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { type SealedSource, walletSealedPage } from "../../src/read/trades";
import { refreshReadModels } from "../../src/refresh/refresh";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { newTrade } from "../helpers/trades";
import { DAY, NOW, RETENTION, withoutCopies } from "./world";

/**
 * A wallet's pages over the history read the sealed files' copies in wallet order (sql/0034):
 * they must be the very pages of the unsealed database, whatever the page size, cursor or
 * filter, and whether a file has its copy yet or not.
 */

const OLD = 12;
const WALLETS = 9;
const wallet = (w: number) => `0x${(w + 1).toString(16).padStart(40, "0")}`;

let t: TestApp;
let template: string;

/**
 * Old markets traded one after another (market m over its own day, some overlapping the next),
 * each by most wallets but not all, then two open markets traded lately by every wallet.
 */
beforeAll(() => {
  t = createTestApp();
  const ingest = createIngest(t.db, t.clock);
  const ids = t.db.writer.transaction(() =>
    Array.from({ length: OLD + 2 }, (_, i) => {
      const r = ingest.upsertMarket({
        slug: i < OLD ? `old${i}` : `new${i}`,
        title: `m${i}`,
        category: "politics",
        condition_id: `0x${(i + 1).toString(16).padStart(64, "0")}`,
        end_date: null,
        created_at: 0,
        resolved_outcome: null,
        resolved_at: null,
      });
      if (!r.ok) throw new Error(r.reason);
      return r.id;
    }),
  )();
  const trades: NewTrade[] = [];
  let n = 0;
  for (const [m, id] of ids.entries()) {
    const old = m < OLD;
    const start = old ? NOW - 300 * DAY + m * DAY : NOW - 20 * DAY + (m - OLD) * DAY;
    for (let i = 0; i < 60; i++) {
      const w = (i * 7 + m) % WALLETS;
      if (old && (w + m) % 4 === 0) continue;
      n++;
      trades.push(
        newTrade(
          wallet(w),
          id,
          n % 3 === 0 ? "NO" : "YES",
          n % 4 === 0 ? "SELL" : "BUY",
          0.1 + (n % 80) / 100,
          10 + (n % 13),
          // Every fifth market runs into the next one's day; some fills share a time.
          start + Math.floor(i / 2) * (m % 5 === 0 ? 90 : 40) * 60_000,
        ),
      );
    }
  }
  t.db.writer.transaction(() => {
    ingest.insertTrades(trades);
    for (const id of ids.slice(0, OLD)) ingest.resolveMarket(id, "YES", NOW - 200 * DAY);
  })();
  refreshReadModels(t.db, NOW);
  t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  template = join(t.dir, "template.db");
  copyFileSync(t.config.dbPath, template);
});
afterAll(() => t.close());

describe("a wallet's trade pages over the history", () => {
  it("are the unsealed pages, page by page, for every page size, cursor and filter", async () => {
    const sealedPath = join(t.dir, "sealed.db");
    copyFileSync(template, sealedPath);
    const db = openDb(sealedPath);
    expect((await compactResolvedMarkets(db, NOW, RETENTION, { batch: 5 })).markets).toBe(OLD);
    db.close();
    // The same files as sealed before sql/0034: without their copies.
    const legacyPath = join(t.dir, "legacy.db");
    copyFileSync(sealedPath, legacyPath);
    cpSync(historyDir(sealedPath), historyDir(legacyPath), { recursive: true });
    const legacyDb = openDb(legacyPath);
    expect(withoutCopies(legacyDb, ["wallet", "time"])).toHaveLength(6);
    legacyDb.close();
    const unsealed = createTestApp({ env: { SMARTMONEY_DB: template } });
    const sealed = createTestApp({ env: { SMARTMONEY_DB: sealedPath } });
    const legacy = createTestApp({ env: { SMARTMONEY_DB: legacyPath } });
    try {
      const keys = [
        unsealed.key("terminal_pro"),
        sealed.key("terminal_pro"),
        legacy.key("terminal_pro"),
      ] as const;
      async function walk(app: TestApp, key: string, query: string, limit: number) {
        const pages: unknown[][] = [];
        let cursor: string | null = null;
        do {
          const sep = query.includes("?") ? "&" : "?";
          const url = `${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`;
          const res = await app.get(url, key);
          expect(res.status, url).toBe(200);
          const page = (await res.json()) as { data: unknown[]; next_cursor: string | null };
          pages.push(page.data);
          cursor = page.next_cursor;
        } while (cursor !== null && pages.length < 500);
        return pages;
      }
      for (let w = 0; w < WALLETS; w += 2) {
        for (const [query, limits] of [
          [`/v1/wallets/${wallet(w)}/trades`, [1, 3, 20]],
          [`/v1/trades?wallet=${wallet(w)}&side=SELL`, [2]],
          [`/v1/trades?wallet=${wallet(w)}&min_bet=8`, [5]],
        ] as const) {
          for (const limit of limits) {
            const expected = await walk(unsealed, keys[0], query, limit);
            expect(expected.flat().length, query).toBeGreaterThan(limit);
            expect(await walk(sealed, keys[1], query, limit), `${query} limit ${limit}`).toEqual(
              expected,
            );
            expect(await walk(legacy, keys[2], query, limit), `${query} limit ${limit}`).toEqual(
              expected,
            );
          }
        }
      }
      // The next compaction writes the legacy files again with their copies and swaps them in,
      // and the pages stay the same.
      const summary = await compactResolvedMarkets(legacy.db, NOW, RETENTION);
      expect(summary).toMatchObject({ markets: 0, files_rewritten: 3 });
      expect(
        legacy.db.reader
          .prepare("SELECT count(*) FROM history_partitions WHERE wallet_file IS NOT NULL")
          .pluck()
          .get(),
      ).toBe(3);
      const query = `/v1/wallets/${wallet(1)}/trades`;
      const legacyAfter = createTestApp({ env: { SMARTMONEY_DB: legacyPath } });
      try {
        expect(await walk(legacyAfter, legacyAfter.key("terminal_pro"), query, 3)).toEqual(
          await walk(unsealed, keys[0], query, 3),
        );
      } finally {
        legacyAfter.close();
      }
    } finally {
      unsealed.close();
      sealed.close();
      legacy.close();
    }
  });
});

describe("merging the history's small files", () => {
  it("swaps them for one in a transaction: the same pages, every market pointed at it", async () => {
    const path = join(t.dir, "merged.db");
    copyFileSync(template, path);
    const db = openDb(path);
    try {
      // Twelve markets in batches of two: six files, then the next run merges them into one.
      const sealOnly = { batch: 2, mergeTiers: [] };
      expect((await compactResolvedMarkets(db, NOW, RETENTION, sealOnly)).markets).toBe(OLD);
      const before = listedFiles(db.reader).map((f) => f.file);
      expect(before).toHaveLength(18);
      const fills = db.reader.prepare("SELECT sum(fills) FROM history_partitions").pluck().get();
      const merged = await compactResolvedMarkets(db, NOW, RETENTION);
      expect(merged).toMatchObject({ markets: 0, files_merged: 6 });
      const [only, ...others] = partitions(db.reader);
      expect(others).toEqual([]);
      expect(only!.fills).toBe(fills);
      expect(
        db.reader.prepare("SELECT DISTINCT partition_id FROM history_markets").pluck().all(),
      ).toEqual([only!.id]);
      // The old files are unlisted, and stay an hour for a page still reading them.
      const dir = historyDir(path);
      expect(readdirSync(dir).sort()).toEqual([...before, ...files(db)].sort());
      await compactResolvedMarkets(db, NOW, RETENTION);
      expect(readdirSync(dir)).toHaveLength(21);
      await compactResolvedMarkets(db, NOW, RETENTION, { unlistedMinAgeMs: 0 });
      expect(readdirSync(dir).sort()).toEqual(files(db));
    } finally {
      db.close();
    }
    const unsealed = createTestApp({ env: { SMARTMONEY_DB: template } });
    const app = createTestApp({ env: { SMARTMONEY_DB: path } });
    try {
      for (const query of [
        `/v1/wallets/${wallet(3)}/trades?limit=4`,
        `/v1/trades?market=0x${"3".padStart(64, "0")}&limit=9`,
      ]) {
        expect(await walkAll(app, app.key("terminal_pro"), query)).toEqual(
          await walkAll(unsealed, unsealed.key("terminal_pro"), query),
        );
      }
    } finally {
      unsealed.close();
      app.close();
    }
  });
});

/** Every page of `query`, as lists of trades. */
async function walkAll(app: TestApp, key: string, query: string): Promise<unknown[][]> {
  const pages: unknown[][] = [];
  let cursor: string | null = null;
  do {
    const res = await app.get(`${query}${cursor ? `&cursor=${cursor}` : ""}`, key);
    expect(res.status, query).toBe(200);
    const page = (await res.json()) as { data: unknown[]; next_cursor: string | null };
    pages.push(page.data);
    cursor = page.next_cursor;
  } while (cursor !== null && pages.length < 500);
  expect(pages.flat().length).toBeGreaterThan(4);
  return pages;
}

/** Every file the manifest lists, sorted. */
function files(db: ReturnType<typeof openDb>): string[] {
  return listedFiles(db.reader)
    .map((f) => f.file)
    .sort();
}

describe("walletSealedPage", () => {
  /** A wallet's sealed fills, file `f<m>` holding market m's: records the files each read asks. */
  function fakeHistory(fills: SealedFill[]) {
    const reads: string[][] = [];
    const history: HistoryReader = {
      byTxHash: () => Promise.reject(new Error("not used")),
      close: () => {},
      async page(files, filter, limit) {
        reads.push([...files]);
        return fills
          .filter((f) => files.includes(`f${f.market_id}`))
          .filter((f) => !filter.before || f.ts < filter.before[0])
          .filter((f) => !filter.after || f.ts > filter.after[0])
          .sort((a, b) => b.ts - a.ts || b.id - a.id)
          .slice(0, limit);
      },
    };
    return { history, reads };
  }
  const fill = (id: number, market: number, ts: number): SealedFill => ({
    id,
    tx_hash: `0x${id}`,
    log_index: 0,
    wallet: wallet(0),
    market_id: market,
    outcome: "YES",
    side: "BUY",
    price: 0.5,
    size: 1,
    usd_value: 0.5,
    ts,
  });
  // Ten files one after another in time, ten fills each, 100 ms apart.
  const fills = Array.from({ length: 100 }, (_, i) => fill(i + 1, Math.floor(i / 10), i * 100));
  const sources = (lastOf: (m: number) => number = (m) => m * 1000 + 900): SealedSource[] =>
    Array.from({ length: 10 }, (_, m) => ({
      file: `f${m}`,
      firstTs: m * 1000,
      lastTs: lastOf(m),
      fills: 10,
      newest: lastOf(m),
    }));

  it("reads only the newest files that can fill the page, in one read", async () => {
    const { history, reads } = fakeHistory(fills);
    const page = await walletSealedPage(history, sources(), {}, 6);
    expect(page.map((f) => f.id)).toEqual([100, 99, 98, 97, 96, 95]);
    expect(reads).toEqual([["f9"]]);
  });

  it("reads the older files that reach above the page's last fill in a second read", async () => {
    // File 8's last fill is the newest of all: read first, then file 9 reaches above the page's
    // last fill.
    const late = [...fills, fill(101, 8, 9950)];
    const lastOf = (m: number) => (m === 8 ? 9950 : m * 1000 + 900);
    const short = fakeHistory(late);
    const page = await walletSealedPage(short.history, sources(lastOf), {}, 3);
    expect(page.map((f) => f.id)).toEqual([101, 100, 99]);
    expect(short.reads).toEqual([["f8"], ["f9"]]);
    // Files 8 and 9 at once (20 fills planned), then none: file 7 ends below the 15th fill.
    const long = fakeHistory(late);
    const page15 = await walletSealedPage(long.history, sources(lastOf), {}, 15);
    expect(page15.map((f) => f.id)).toEqual([
      101, 100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 88, 87,
    ]);
    expect(long.reads).toEqual([["f8", "f9"]]);
  });

  it("reads every other file when the first read finds fewer fills than the page needs", async () => {
    const { history, reads } = fakeHistory(fills.filter((f) => f.market_id !== 9));
    const page = await walletSealedPage(history, sources(), {}, 4);
    expect(page.map((f) => f.id)).toEqual([90, 89, 88, 87]);
    expect(reads).toEqual([["f9"], ["f8", "f7", "f6", "f5", "f4", "f3", "f2", "f1", "f0"]]);
  });
});
