import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWalletSearch, ftsPhrase } from "../../src/read/wallet-search";
import {
  GROUP_SPAN,
  HOT_WALLETS,
  hotEndSql,
  refreshWalletSearch,
} from "../../src/refresh/wallet-search";
import { seededTestApp, type TestApp } from "../helpers/app";
import { insertStats } from "../http/wallet-world";

/**
 * The hot name index (sql/0018) holds the entries of the largest volume groups under the ids of
 * the full index, and a search reads it first. The answers must be byte for byte those of the full
 * index alone, for every query and page size, after a full rebuild and after incremental refreshes
 * that move wallets across the hot end; and the hot index must hold exactly the full index's
 * entries below its end. On the small fixture world (423 named wallets) with a hot index of HOT,
 * so that searches both stop in it and go on into the full index.
 */
const NOW = Date.parse("2026-11-01T00:00:00.000Z");
const HOT = 60;
let t: TestApp;

beforeAll(async () => {
  ({ t } = await seededTestApp({ now: NOW }));
  refreshWalletSearch(t.db, undefined, HOT);
}, 120_000);
afterAll(() => t.close());

const names = () =>
  t.db.writer
    .prepare("SELECT platform_name FROM wallet_stats WHERE platform_name IS NOT NULL")
    .pluck()
    .all() as string[];

/**
 * Every trigram of the fixture names, their prefixes and words, whole names, fragments that match
 * nothing, fragments of one or two characters, mixed case, quotes and address prefixes.
 */
function queries(): string[] {
  const all = new Set<string>();
  for (const name of names()) {
    for (let i = 0; i + 3 <= name.length; i++) all.add(name.slice(i, i + 3).toLowerCase());
    for (const n of [1, 2, 4, 5, 7]) all.add(name.slice(0, n));
    for (const word of name.split(/[^a-z0-9]+/i)) if (word) all.add(word);
    all.add(name);
    all.add(name.toUpperCase());
  }
  for (const q of ["zzq", "qqqq", 'or"c', '"', "o r", "0x", "0x0", "0xab", "ab", "fe", "0xdead"])
    all.add(q);
  return [...all].sort();
}

const hotEnd = () =>
  t.db.writer.prepare("SELECT id FROM wallet_search_hot_end").pluck().get() as number;

/** The hot index is the full index's entries below its end, and its end closes a volume group. */
function expectHotIsPrefix() {
  const end = hotEnd();
  expect(end % GROUP_SPAN).toBe(0);
  const hot = t.db.writer
    .prepare("SELECT rowid, platform_name FROM wallet_search_hot ORDER BY rowid")
    .all();
  const below = t.db.writer
    .prepare("SELECT rowid, platform_name FROM wallet_search WHERE rowid < ? ORDER BY rowid")
    .all(end);
  expect(hot).toEqual(below);
  return hot.length;
}

/** Answers of every query through the hot index, checked against the full index's alone. */
function answers(): { answers: string[]; settledHot: number; wentOn: number } {
  const hot = createWalletSearch(t.db);
  const full = createWalletSearch(t.db, { hotIndex: false });
  const hotCount = t.db.reader
    .prepare<[string], number>(
      "SELECT count(*) FROM wallet_search_hot WHERE wallet_search_hot MATCH ?",
    )
    .pluck();
  const out: string[] = [];
  let settledHot = 0;
  let wentOn = 0;
  queries().forEach((q, i) => {
    // Page sizes 1 to 100 over the queries, and 1, 10 and 100 in turn.
    const matches = q.length >= 3 ? hotCount.get(ftsPhrase(q))! : 0;
    for (const limit of new Set([(i % 100) + 1, [1, 10, 100][i % 3]!])) {
      const answer = JSON.stringify(hot.search(q, limit));
      expect(answer, `${q} limit ${limit}`).toBe(JSON.stringify(full.search(q, limit)));
      out.push(answer);
      if (q.length >= 3) {
        if (matches >= limit) settledHot++;
        else wentOn++;
      }
    }
  });
  return { answers: out, settledHot, wentOn };
}

const address = (n: number) =>
  t.db.writer
    .prepare<[number], string>(
      `SELECT address FROM wallet_stats WHERE platform_name IS NOT NULL
        ORDER BY total_volume DESC, address LIMIT 1 OFFSET ?`,
    )
    .pluck()
    .get(n)!;
const setVolume = (wallet: string, volume: number) =>
  t.db.writer
    .prepare("UPDATE wallet_stats SET total_volume = ? WHERE address = ?")
    .run(volume, wallet);
const volumeOf = (wallet: string) =>
  t.db.writer
    .prepare("SELECT total_volume FROM wallet_stats WHERE address = ?")
    .pluck()
    .get(wallet) as number;
const incremental = (wallets: string[]) =>
  refreshWalletSearch(t.db, { full: false, wallets: new Set(wallets) }, HOT);

describe("the hot name index", { timeout: 120_000 }, () => {
  it("answers as the full index does after a full rebuild, stopping in it or going on", () => {
    const hot = expectHotIsPrefix();
    expect(hot).toBeGreaterThanOrEqual(HOT);
    expect(hot).toBeLessThan(HOT + 5);
    const { settledHot, wentOn } = answers();
    // Both ways are taken many times: the comparison tests each.
    expect(settledHot).toBeGreaterThan(200);
    expect(wentOn).toBeGreaterThan(200);
  });

  it("answers as a full rebuild after incremental refreshes move wallets across the hot end", () => {
    const end = hotEnd();
    const edge = volumeOf(address(HOT));
    // Hot wallets fall below the end; cold ones rise above it; one hot wallet is renamed, one
    // loses its name; a new wallet arrives among the largest, another just below the end.
    const fallen = [0, 5, HOT - 1].map(address);
    const risen = [HOT + 1, 200, 400].map(address);
    const renamed = address(3);
    const unnamed = address(7);
    for (const w of fallen) setVolume(w, 1);
    for (const [i, w] of risen.entries()) setVolume(w, edge * (2 + i));
    t.db.writer
      .prepare("UPDATE wallet_stats SET platform_name = ? WHERE address = ?")
      .run("Hot Renamed Orca", renamed);
    t.db.writer
      .prepare("UPDATE wallet_stats SET platform_name = NULL WHERE address = ?")
      .run(unnamed);
    const arrivals = [
      "0x00000000000000000000000000000000000000a1",
      "0x00000000000000000000000000000000000000a2",
    ];
    insertStats(t, arrivals[0]!, { platform_name: "New Orca Whale", total_volume: edge * 10 });
    insertStats(t, arrivals[1]!, { platform_name: "New Orca Minnow", total_volume: edge / 2 });
    incremental([...fallen, ...risen, renamed, unnamed, ...arrivals]);

    // The end held: the moved wallets crossed it, in both directions.
    expect(hotEnd()).toBe(end);
    const hotRows = new Set(
      t.db.writer.prepare("SELECT address FROM wallet_search_rows WHERE id < ?").pluck().all(end),
    );
    for (const w of [...risen, renamed, arrivals[0]]) expect(hotRows.has(w), w).toBe(true);
    for (const w of [...fallen, unnamed, arrivals[1]]) expect(hotRows.has(w), w).toBe(false);
    expectHotIsPrefix();
    const kept = answers().answers;

    refreshWalletSearch(t.db, { full: true, wallets: new Set() }, HOT);
    expectHotIsPrefix();
    expect(answers().answers).toEqual(kept);
  });

  it("picks its end anew when an incremental refresh leaves it under half full", () => {
    const end = hotEnd();
    const before = expectHotIsPrefix();
    // More than half of the hot wallets fall to the smallest volumes.
    const fallen = Array.from({ length: Math.ceil(before / 2) + 1 }, (_, i) => address(i));
    for (const w of fallen) setVolume(w, 0.5);
    incremental(fallen);
    expect(hotEnd()).toBeGreaterThan(end);
    const after = expectHotIsPrefix();
    expect(after).toBeGreaterThanOrEqual(HOT);
    const kept = answers().answers;
    refreshWalletSearch(t.db, { full: true, wallets: new Set() }, HOT);
    expect(answers().answers).toEqual(kept);
  });

  it("sql/0018 picks the end with the refresh's expression", () => {
    const migration = readFileSync(
      new URL("../../sql/0018_wallet_search_hot.sql", import.meta.url),
      "utf8",
    );
    expect(migration).toContain(hotEndSql(HOT_WALLETS));
  });
});
