import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createIngest } from "../../src/ingest/ingest";
import { createWalletSearch, NAME_CANDIDATES } from "../../src/read/wallet-search";
import { MARK_MAX_AGE_MS } from "../../src/refresh/incremental";
import { refreshReadModels } from "../../src/refresh/refresh";
import {
  GROUP_SPAN,
  refreshWalletSearch,
  VOLUME_GROUP_SQL,
  walletSearchRefresh,
} from "../../src/refresh/wallet-search";
import { createTestApp, seededTestApp, type TestApp } from "../helpers/app";
import { newTrade } from "../helpers/trades";
import { insertStats } from "../http/wallet-world";

/**
 * The name index numbers wallets by volume group (sql/0015), so a search reads matches largest
 * first and stops after a page. Every answer must be what ranking all matches by volume (then
 * address) gives, whether the index was built by a full refresh or kept by incremental ones.
 */
let t: TestApp;
beforeEach(() => {
  t = createTestApp();
});
afterEach(() => t.close());

const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const setVolume = (n: number, volume: number) =>
  t.db.writer
    .prepare("UPDATE wallet_stats SET total_volume = ? WHERE address = ?")
    .run(volume, address(n));

/** What the search must answer: every wallet whose name holds `fragment`, by volume, then address. */
function expected(fragment: string, limit: number): string[] {
  return t.db.writer
    .prepare<[string, number], string>(
      `SELECT address FROM wallet_stats WHERE instr(lower(platform_name), lower(?)) > 0
        ORDER BY total_volume DESC, address LIMIT ?`,
    )
    .pluck()
    .all(fragment, limit);
}

const found = (fragment: string, limit: number) =>
  createWalletSearch(t.db)
    .search(fragment, limit)
    .results.map((r) => r.address);

const incremental = (...wallets: number[]) =>
  refreshWalletSearch(t.db, { full: false, wallets: new Set(wallets.map(address)) });

describe("wallet search by volume", () => {
  it("ranks all matches by volume, however many there are", () => {
    // More matches than NAME_CANDIDATES, the smallest first by address.
    const count = NAME_CANDIDATES + 50;
    for (let n = 1; n <= count; n++) {
      insertStats(t, address(n), { platform_name: `Fish ${n}`, total_volume: n * 10 });
    }
    refreshWalletSearch(t.db);
    expect(found("fish", 5)).toEqual(expected("fish", 5));
    expect(found("fish", 5)[0]).toBe(address(count));

    // The smallest wallet becomes the largest, and an incremental refresh sees only it.
    setVolume(1, 1e9);
    incremental(1);
    expect(found("fish", 5)[0]).toBe(address(1));
    expect(found("fish", 25)).toEqual(expected("fish", 25));

    // A new wallet, and a wallet that loses its name.
    insertStats(t, address(999), { platform_name: "Big Fish", total_volume: 5e8 });
    t.db.writer
      .prepare("UPDATE wallet_stats SET platform_name = NULL WHERE address = ?")
      .run(address(count));
    incremental(999, count);
    expect(found("fish", 25)).toEqual(expected("fish", 25));
    expect(found("fish", 25)).not.toContain(address(count));

    // The same answers as a full rebuild of the index.
    const kept = [1, 3, 10, 25].map((limit) => found("fish", limit));
    refreshWalletSearch(t.db, { full: true, wallets: new Set() });
    expect([1, 3, 10, 25].map((limit) => found("fish", limit))).toEqual(kept);
  });

  it("breaks ties of volume by address across the end of the page", () => {
    for (let n = 2; n <= 10; n++) {
      insertStats(t, address(n), { platform_name: `Tuna ${n}`, total_volume: 100 });
    }
    insertStats(t, address(1), { platform_name: "Tuna 1", total_volume: 50 });
    insertStats(t, address(20), { platform_name: "Tuna big", total_volume: 1000 });
    refreshWalletSearch(t.db);
    for (const limit of [1, 2, 4, 11])
      expect(found("tuna", limit)).toEqual(expected("tuna", limit));
    // Wallet 1 joins the tied group in an incremental refresh: numbered after the others in the
    // group, yet first of them by address, so a page that ends inside the group must read it all.
    setVolume(1, 100);
    incremental(1);
    expect(found("tuna", 2)).toEqual([address(20), address(1)]);
    for (const limit of [1, 3, 11]) expect(found("tuna", limit)).toEqual(expected("tuna", limit));
    // A cent more ranks first among them.
    setVolume(5, 100.01);
    incremental(5);
    expect(found("tuna", 2)).toEqual([address(20), address(5)]);
  });

  it("sql/0015 groups volumes with the refresh's expression", () => {
    const migration = readFileSync(
      new URL("../../sql/0015_wallet_search_by_volume.sql", import.meta.url),
      "utf8",
    );
    expect(migration).toContain(VOLUME_GROUP_SQL);
  });
});

describe("wallet search after an incremental refresh", () => {
  const NOW = Date.parse("2026-11-01T00:00:00.000Z");
  let world: TestApp;
  beforeAll(async () => {
    ({ t: world } = await seededTestApp({ now: NOW }));
    // The seed's own refresh ran before its funding graph made some wallets insiders.
    refreshReadModels(world.db, NOW, { full: true, extensions: [walletSearchRefresh] });
  }, 120_000);
  afterAll(() => world?.close());

  /** Each indexed wallet's volume group and name. */
  const entries = () =>
    world.db.writer
      .prepare(
        `SELECT r.address, r.id / ${GROUP_SPAN} AS grp, s.platform_name FROM wallet_search_rows r
           JOIN wallet_search s ON s.rowid = r.id ORDER BY r.address`,
      )
      .all();

  it("looks up only the named wallets whose name or volume moved, as a rebuild would index them", () => {
    const walletsWhere = (named: boolean) =>
      world.db.writer
        .prepare(
          `SELECT address FROM wallet_stats WHERE platform_name IS ${named ? "NOT" : ""} NULL
            ORDER BY address LIMIT 2`,
        )
        .pluck()
        .all() as string[];
    const traders = [...walletsWhere(true), ...walletsWhere(false)];
    const market = world.db.writer
      .prepare("SELECT id FROM markets WHERE resolved_outcome IS NULL ORDER BY id LIMIT 1")
      .pluck()
      .get() as number;
    const ingest = createIngest(world.db, world.clock);
    world.db.writer.transaction(() => {
      ingest.insertTrades(
        traders.map((wallet, i) => newTrade(wallet, market, "YES", "BUY", 0.5, 1000 + i, NOW + i)),
      );
    })();
    const run = refreshReadModels(world.db, NOW + 60_000, { extensions: [walletSearchRefresh] });
    expect(run.kind).toBe("incremental");
    expect(run.wallets).toBeGreaterThanOrEqual(4);
    // The two unnamed wallets have no entry, and are not looked up.
    expect(run.extensions.wallet_search).toEqual({ kind: "incremental", updated: 2 });

    // An hour on, every mark is stale and renewed: named wallets among them, none of whose
    // name or volume changed.
    const later = refreshReadModels(world.db, NOW + 60_000 + MARK_MAX_AGE_MS + 1, {
      extensions: [walletSearchRefresh],
    });
    expect(later.kind).toBe("incremental");
    expect(later.wallets).toBeGreaterThan(100);
    expect(later.extensions.wallet_search).toEqual({ kind: "incremental", updated: 0 });

    const kept = entries();
    expect(kept.length).toBeGreaterThan(100);
    refreshWalletSearch(world.db);
    expect(entries()).toEqual(kept);
  });
});
