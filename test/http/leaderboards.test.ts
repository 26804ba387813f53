import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { edgeScreenSql } from "../../src/read/edge-screen";
import {
  CATEGORY_SORTS,
  createLeaderboardQueries,
  leaderboardSql,
} from "../../src/read/leaderboards";
import { LeaderboardPageSchema } from "../../src/schemas/wallets";
import { categoryStatsWriter, tieBreakAddress } from "../helpers/wallet-read-models";
import {
  A,
  allPages,
  B,
  B_PNL_AS_OF,
  buildWorld,
  C,
  call,
  D,
  expectError,
  G,
  insertStats,
  NOW,
  O,
  ok,
  W,
  type World,
} from "./wallet-world";

const iso = (ms: number) => new Date(ms).toISOString();
// z = (wins − Σp) / √Σp(1−p) over resolved bets' entry prices.
const zA = (2 - (0.4 + 0.5 + 0.2)) / Math.sqrt(0.24 + 0.25 + 0.16);
const zB = (2 - (0.5 + 0.5)) / Math.sqrt(0.25 + 0.25);

let world: World;
let terminal: string;
beforeAll(() => {
  world = buildWorld();
  terminal = world.t.key("terminal");
});
afterAll(() => world.t.close());

const t = () => world.t;
const addresses = async (path: string) =>
  (await allPages(t(), path, terminal, LeaderboardPageSchema)).rows.map((r) => r.address);

describe("GET /v1/leaderboards/whales", () => {
  it("serves whales (more than 50,000 USD) by volume with every entry field", async () => {
    const page = await ok(t(), "/v1/leaderboards/whales", terminal, LeaderboardPageSchema);
    expect(page).toEqual({
      next_cursor: null,
      data: [
        {
          address: C,
          platform_name: null,
          total_volume: 100_000,
          total_pnl: null,
          pnl_source: "none",
          pnl_as_of: null,
          win_rate: null,
          z_score: null,
          total_bets: 1,
        },
        {
          address: W,
          platform_name: null,
          total_volume: 60_000,
          total_pnl: null,
          pnl_source: "none",
          pnl_as_of: null,
          win_rate: 1,
          z_score: expect.closeTo(1, 12),
          total_bets: 1,
        },
      ],
    });
  });

  it.each([
    ["sort=volume", [C, W]],
    // C has no resolved bet: no win rate, no z-score, so it is not ranked by them.
    ["sort=winRate", [W]],
    ["sort=zScore", [W]],
    // One bet each: ties go to the lower address.
    ["sort=totalBets", [W, C]],
    ["min_volume=70000", [C]],
    ["min_volume=100000", [C]],
    ["min_volume=100000.5", []],
    ["min_volume=0&min_resolved_bets=1", [W]],
    ["sort=totalBets&limit=1", [W, C]],
  ])("%s", async (query, expected) => {
    expect(await addresses(`/v1/leaderboards/whales?${query}`)).toEqual(expected);
  });
});

describe("GET /v1/leaderboards/pnl", () => {
  it("ranks only wallets with a PnL figure, by the routed figure, as-of per source", async () => {
    const page = await ok(
      t(),
      "/v1/leaderboards/pnl?min_resolved_bets=2",
      terminal,
      LeaderboardPageSchema,
    );
    expect(page.data).toEqual([
      {
        address: B,
        platform_name: "CryptoWhale King",
        total_volume: expect.closeTo(60, 9),
        total_pnl: 1234.5,
        pnl_source: "platform_api",
        pnl_as_of: iso(B_PNL_AS_OF),
        win_rate: 1,
        z_score: expect.closeTo(zB, 12),
        total_bets: 3,
      },
      {
        address: A,
        platform_name: null,
        total_volume: expect.closeTo(115, 9),
        total_pnl: expect.closeTo(120, 9),
        pnl_source: "ledger",
        pnl_as_of: iso(NOW),
        win_rate: expect.closeTo(2 / 3, 12),
        z_score: expect.closeTo(zA, 12),
        total_bets: 4,
      },
    ]);
  });

  it.each([
    // Nobody here has 5 resolved bets, the default minimum.
    ["", []],
    // Ledger: O +6 (10 @ 0.40 won), D +4 (10 @ 0.60 won), G +0.5 (10 @ 0.45 marked at 0.50).
    ["min_resolved_bets=0", [B, A, O, D, G]],
    ["min_resolved_bets=0&sort_dir=asc", [G, D, O, A, B]],
    ["min_resolved_bets=0&sort_dir=desc&limit=2", [B, A, O, D, G]],
    ["min_resolved_bets=2&sort_dir=asc", [A, B]],
  ])("?%s", async (query, expected) => {
    expect(await addresses(`/v1/leaderboards/pnl?${query}`)).toEqual(expected);
  });
});

describe("GET /v1/leaderboards/category/{cat}", () => {
  it("serves the category's own figures", async () => {
    const page = await ok(
      t(),
      "/v1/leaderboards/category/crypto?min_bets=2",
      terminal,
      LeaderboardPageSchema,
    );
    expect(page.data).toEqual([
      {
        address: A,
        platform_name: null,
        total_volume: expect.closeTo(60, 9),
        total_pnl: expect.closeTo(140, 9),
        pnl_source: "ledger",
        pnl_as_of: iso(NOW),
        win_rate: 1,
        z_score: expect.closeTo(zA, 12),
        total_bets: 2,
      },
    ]);
    const volume = await ok(
      t(),
      "/v1/leaderboards/category/crypto?min_bets=1&sort=volume",
      terminal,
      LeaderboardPageSchema,
    );
    // The whale's category PnL is withheld, as its overall PnL is.
    expect(volume.data[0]).toMatchObject({
      address: W,
      total_volume: 60_000,
      total_pnl: null,
      pnl_source: "none",
      pnl_as_of: null,
    });
  });

  it.each([
    ["crypto", "", []],
    ["crypto", "min_bets=1", [A, B, O, D]],
    ["crypto", "min_bets=1&sort=pnl&limit=3", [A, B, O, D]],
    ["crypto", "min_bets=1&sort=volume", [W, A, B, D, O]],
    ["crypto", "min_bets=1&sort=win_rate", [O, W, A, B, D]],
    ["crypto", "min_bets=1&sort=counter_consensus_wins", [A, O, W, B, D]],
    // B: 10 NO @ 0.50 won, +5; A: 50 YES @ 0.50 lost, −25.
    ["politics", "min_bets=1", [B, A]],
    ["sports", "min_bets=1", []],
    ["breaking-news", "min_bets=1", []],
  ])("%s?%s", async (cat, query, expected) => {
    expect(await addresses(`/v1/leaderboards/category/${cat}?${query}`)).toEqual(expected);
  });

  it("404s a category outside the list, whatever the query", async () => {
    await expectError(t(), "/v1/leaderboards/category/Crypto", terminal, 404, "politics, crypto");
    await expectError(t(), "/v1/leaderboards/category/other?sort=bad", terminal, 404, "use one of");
  });
});

describe("answers kept per read-model generation", () => {
  it("serves a page again until a refresh lands, then the new ranking", async () => {
    const fresh = buildWorld();
    try {
      const key = fresh.t.key("terminal");
      const paths = [
        "/v1/leaderboards/whales?sort=volume&limit=3",
        "/v1/leaderboards/pnl?limit=3",
        "/v1/leaderboards/category/crypto?min_bets=1&sort=volume&limit=3",
      ];
      const read = () =>
        Promise.all(paths.map((path) => ok(fresh.t, path, key, LeaderboardPageSchema)));
      const before = await read();
      // A wallet that tops every ranking, written as a refresh would write it.
      const top = `0x${"7e".repeat(20)}`;
      insertStats(fresh.t, top, { total_volume: 1e9, total_pnl: 1e8, resolved_bets: 5 });
      categoryStatsWriter(fresh.t.db.writer)({
        address: top,
        category: "crypto",
        bets: 5,
        resolved_bets: 5,
        wins: 5,
        win_rate: 1,
        global_win_rate: 1,
        edge: 0,
        pnl: 1e6,
        volume: 1e9,
        counter_consensus_wins: 0,
      });
      // Until the refresh is announced, the answers are the ones the read models had.
      expect(await read()).toEqual(before);
      fresh.t.app.readModelsChanged();
      const after = await read();
      for (const [i, page] of after.entries()) {
        expect(page.data[0]!.address, paths[i]).toBe(top);
        expect(page.data.slice(1), paths[i]).toEqual(before[i]!.data.slice(0, 2));
      }
    } finally {
      fresh.t.close();
    }
  });
});

describe("errors and tier gates", () => {
  const bad: [string, string][] = [
    ["/v1/leaderboards/whales?sort=pnl", "sort must be one of volume, winRate, zScore, totalBets"],
    ["/v1/leaderboards/whales?limit=0", "limit must be an integer from 1 to 100"],
    ["/v1/leaderboards/whales?limit=101", "limit"],
    ["/v1/leaderboards/whales?min_volume=-1", "min_volume must be a number of at least 0"],
    ["/v1/leaderboards/whales?min_volume=lots", "min_volume"],
    ["/v1/leaderboards/whales?min_resolved_bets=-1", "min_resolved_bets"],
    ["/v1/leaderboards/whales?cursor=x.y", "cursor is invalid"],
    ["/v1/leaderboards/pnl?sort_dir=up", "sort_dir must be one of asc, desc"],
    ["/v1/leaderboards/pnl?min_resolved_bets=-1", "min_resolved_bets must be an integer from 0"],
    ["/v1/leaderboards/pnl?min_resolved_bets=1.5", "min_resolved_bets"],
    ["/v1/leaderboards/pnl?limit=1000", "limit"],
    ["/v1/leaderboards/category/crypto?min_bets=0", "min_bets must be an integer from 1"],
    [
      "/v1/leaderboards/category/crypto?sort=edge",
      "sort must be one of win_rate, counter_consensus_wins, pnl, volume",
    ],
    ["/v1/leaderboards/category/crypto?limit=-5", "limit"],
  ];
  it.each(bad)("400 for %s", async (path, message) => {
    await expectError(t(), path, terminal, 400, message);
  });

  it("refuses a cursor from another board or another sort", async () => {
    const { body } = await call(t(), "/v1/leaderboards/whales?limit=1", terminal);
    const cursor = body.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    for (const path of [
      "/v1/leaderboards/whales?sort=totalBets",
      "/v1/leaderboards/pnl",
      "/v1/leaderboards/category/crypto",
      "/v1/signals/screen",
    ]) {
      await expectError(
        t(),
        `${path}${path.includes("?") ? "&" : "?"}cursor=${cursor}`,
        terminal,
        400,
        "cursor",
      );
    }
  });

  it.each(["/v1/leaderboards/whales", "/v1/leaderboards/pnl", "/v1/leaderboards/category/crypto"])(
    "403 for a free key on %s",
    async (path) => {
      await expectError(t(), path, t().key("free"), 403, "terminal");
    },
  );
});

describe("depth 500", () => {
  let deep: World;
  let key: string;
  type Row = { address: string; value: number };
  const whales: Row[] = [];
  const retail: Row[] = [];
  beforeAll(() => {
    deep = buildWorld();
    key = deep.t.key("terminal");
    const w = deep.t.db.writer;
    const insertCategory = categoryStatsWriter(w);
    const category = (address: string, pnl: number) =>
      insertCategory({
        address,
        category: "culture",
        bets: 20,
        resolved_bets: 20,
        wins: 10,
        win_rate: 0.5,
        global_win_rate: 0.5,
        edge: 0,
        pnl,
        volume: 10,
        counter_consensus_wins: 0,
      });
    w.transaction(() => {
      for (let i = 0; i < 600; i++) {
        // Pairs share a value, so the address tie-break decides their order.
        const value = 1_000 - Math.floor(i / 2);
        const whale = `0x${(0x100000 + i).toString(16).padStart(40, "0")}`;
        insertStats(deep.t, whale, {
          total_volume: 100_000 + value,
          z_score: value / 100,
          resolved_bets: 1,
        });
        whales.push({ address: whale, value });
        const wallet = tieBreakAddress(0x200000, i);
        insertStats(deep.t, wallet, {
          total_pnl: value - 500,
          resolved_bets: 5,
          total_volume: 100,
        });
        category(wallet, value - 700);
        retail.push({ address: wallet, value });
      }
    })();
  });
  afterAll(() => deep.t.close());

  it("ranks a category the same whether it sorts the qualifying wallets or walks the ranking", () => {
    // Bound 0: always the walk; a bound above the category's 600 wallets: always the sort;
    // the default bound picks per request. Every page of every ranking must agree.
    const plans = [0, 10_000, undefined].map((bound) =>
      createLeaderboardQueries(deep.t.db, { categorySortCandidates: bound }),
    );
    for (const sort of CATEGORY_SORTS) {
      for (const minBets of [1, 20, 21]) {
        for (const limit of [13, 100]) {
          const pages = plans.map((queries) => {
            const rows: unknown[] = [];
            let after: [number, string] | undefined;
            for (let more = true; more; ) {
              const page = queries.category("culture", { sort, minBets }, limit, after);
              rows.push(...page.rows);
              after = page.keys.at(-1);
              more = page.more;
            }
            return rows;
          });
          const label = `${sort} min_bets=${minBets} limit=${limit}`;
          expect(pages[0], label).toHaveLength(minBets <= 20 ? 600 : 0);
          expect(pages[1], label).toEqual(pages[0]);
          expect(pages[2], label).toEqual(pages[0]);
        }
      }
    }
  });

  const order = (rows: Row[], direction: 1 | -1) =>
    [...rows]
      .sort((a, b) => direction * (a.value - b.value) || (a.address < b.address ? -1 : 1))
      .map((r) => r.address);

  it.each([
    ["/v1/leaderboards/whales?sort=volume", () => order(whales, -1)],
    ["/v1/leaderboards/whales?sort=zScore", () => order(whales, -1)],
    ["/v1/leaderboards/pnl", () => order(retail, -1)],
    ["/v1/leaderboards/pnl?sort_dir=asc", () => order(retail, 1)],
    ["/v1/leaderboards/category/culture?sort=pnl", () => order(retail, -1)],
  ])("%s pages to exactly 500 rows, each once and in order", async (path, expected) => {
    for (const limit of [100, 7]) {
      const { rows, pages } = await allPages(
        deep.t,
        `${path}${path.includes("?") ? "&" : "?"}limit=${limit}`,
        key,
        LeaderboardPageSchema,
      );
      expect(pages).toBe(Math.ceil(500 / limit));
      expect(rows.map((r) => r.address)).toEqual(expected().slice(0, 500));
    }
  });
});

describe("query plans", () => {
  it("walks an index in serving order for every leaderboard and screener statement", () => {
    const params = {
      minVolume: 0,
      minResolvedBets: 0,
      minBets: 1,
      minEdge: -1,
      category: "crypto",
      filterCategory: "crypto",
      keyValue: 0,
      keyAddress: "",
      edge: 0,
      address: "",
      limit: 1,
    };
    const statements = { ...leaderboardSql(), ...edgeScreenSql() };
    expect(Object.keys(statements)).toHaveLength(44);
    for (const [name, sql] of Object.entries(statements)) {
      if (name.startsWith("category-few:")) continue; // a bounded sort, checked below
      const statement = t().db.reader.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      const used = Object.fromEntries(
        Object.entries(params).filter(([k]) => new RegExp(`@${k}\\b`).test(sql)),
      );
      const plan = (statement.all(used) as { detail: string }[]).map((p) => p.detail).join(" | ");
      // The category rankings and the screener walk ties by the address's prefix; their exact
      // statements also sort each run of an equal prefix by the whole address (and category):
      // sql/0024, src/read/prefix-ties.ts. Ascending PnL walks the PnL ranking backwards and
      // sorts each run of equal PnL by address (sql/0028).
      const lastTerms = / \| USE TEMP B-TREE FOR LAST (TERM|2 TERMS) OF ORDER BY$/;
      expect(lastTerms.test(plan), name).toBe(
        name.includes("-exact") || name.startsWith("pnl:asc"),
      );
      expect(plan.replace(lastTerms, ""), name).not.toMatch(/TEMP B-TREE/);
      expect(plan, name).toMatch(/^(SEARCH|SCAN) \w+ USING (COVERING )?INDEX/);
    }
  });

  it("takes a category's qualifying wallets from their index when it sorts them", () => {
    const few = Object.entries(leaderboardSql()).filter(([name]) =>
      name.startsWith("category-few:"),
    );
    expect(few).toHaveLength(8);
    const params = { category: "crypto", minBets: 20, candidates: 2001, limit: 51 };
    for (const [name, sql] of few) {
      const used = Object.fromEntries(
        Object.entries({ ...params, keyValue: 0, keyAddress: "" }).filter(([k]) =>
          new RegExp(`@${k}\\b`).test(sql),
        ),
      );
      const plan = (
        t().db.reader.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(used) as { detail: string }[]
      )
        .map((p) => p.detail)
        .join(" | ");
      expect(plan, name).toMatch(/USING (COVERING )?INDEX wallet_category_by_resolved/);
    }
  });
});
