import { readFileSync } from "node:fs";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TIMING_BUCKETS } from "../../src/analytics/timing";
import { FALLBACK_FILL_LIMIT } from "../../src/read/wallet-fallback";
import { EMPTY_TIMING } from "../../src/refresh/wallet-model";
import { refreshWalletSearch } from "../../src/refresh/wallet-search";
import {
  CorrelatedWalletsSchema,
  WalletCategoriesSchema,
  WalletDossierSchema,
  WalletEdgePageSchema,
  WalletProfileLiteSchema,
  WalletSearchSchema,
  WalletSignalSchema,
  WalletTimingSchema,
} from "../../src/schemas/wallets";
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
  DAY,
  E,
  expectError,
  F,
  fill,
  G,
  H,
  HOUR,
  insertStats,
  NOW,
  O,
  ok,
  T,
  tradeAfterRefresh,
  W,
  type World,
} from "./wallet-world";

const iso = (ms: number) => new Date(ms).toISOString();
const FUNDER = `0x${"12".repeat(20)}`;

let world: World;
let terminal: string;
let free: string;

beforeAll(() => {
  world = buildWorld();
  tradeAfterRefresh(world);
  terminal = world.t.key("terminal");
  free = world.t.key("free");
  const w = world.t.db.writer;
  // Two alerts on A's m1 and m4 fills, and A a member of the sybil cluster FUNDER funds.
  const tradeId = (ts: number) =>
    (w.prepare("SELECT id FROM trades WHERE wallet = ? AND ts = ?").get(A, ts) as { id: number })
      .id;
  const signal = w.prepare(
    `INSERT INTO signals (id, type, wallet, wallet_type, market_id, trade_id, score, bet_value, side,
       outcome, price, explanation, created_at) VALUES (?, ?, ?, 'retail', ?, ?, ?, ?, 'BUY', ?, ?, ?, ?)`,
  );
  signal.run(7, "whale", A, world.ids.m1, tradeId(T), 71.5, 40, "YES", 0.4, "Big buy.", T + 1000);
  signal.run(
    9,
    "insider",
    A,
    world.ids.m4,
    tradeId(T + 3 * HOUR),
    88,
    20,
    "NO",
    0.2,
    "Odd.",
    T + 3 * HOUR,
  );
  w.prepare(
    "INSERT INTO wallet_funding (wallet, first_sender, first_amount, first_funded_at, funder) VALUES (?, ?, 100, ?, ?)",
  ).run(A, FUNDER, T - DAY, FUNDER);
  w.prepare(
    `INSERT INTO sybil_clusters (id, funder, member_count, resolved_bets, wins) VALUES (?, ?, 2, 0, 0)`,
  ).run(`clu_${A}`, FUNDER);
});
afterAll(() => world.t.close());

const t = () => world.t;

describe("GET /v1/signals/wallet/{address}", () => {
  it("serves the persisted score and the stats of a refreshed wallet, ledger PnL as of the refresh", async () => {
    const body = await ok(
      t(),
      `/v1/signals/wallet/${A.toUpperCase().replace("0X", "0x")}`,
      free,
      WalletSignalSchema,
    );
    const row = t()
      .db.reader.prepare("SELECT * FROM wallet_stats WHERE address = ?")
      .get(A) as Record<string, any>;
    expect(body.wallet).toBe(A);
    expect(body.smart_money_score).toBe(row.smart_money_score);
    expect(body.confidence).toBeCloseTo(3 / 23, 12);
    expect(body.breakdown).toEqual(JSON.parse(row.breakdown));
    expect(body.breakdown.method).toBe("signals");
    expect(body.wallet_type).toBe("retail");
    expect(body.stats).toEqual({
      total_bets: 4,
      resolved_bets: 3,
      win_rate: expect.closeTo(2 / 3, 12),
      bayesian_win_rate: expect.closeTo(12 / 23, 12),
      total_volume: expect.closeTo(115, 9),
      total_pnl: expect.closeTo(120, 9),
      pnl_source: "ledger",
      pnl_as_of: iso(NOW),
      markets_traded: 4,
    });
  });

  it.each([
    // B: the platform's figure with its own date; 3 bets, 2 resolved and won, 60 USD.
    [
      B,
      {
        total_pnl: 1234.5,
        pnl_source: "platform_api",
        pnl_as_of: iso(B_PNL_AS_OF),
        total_bets: 3,
        resolved_bets: 2,
        win_rate: 1,
      },
    ],
    // C: a whale without a platform figure: no PnL, no date.
    [
      C,
      {
        total_pnl: null,
        pnl_source: "none",
        pnl_as_of: null,
        total_bets: 1,
        resolved_bets: 0,
        win_rate: null,
        bayesian_win_rate: null,
      },
    ],
  ])("routes PnL and its as-of for %s", async (wallet, expected) => {
    const body = await ok(t(), `/v1/signals/wallet/${wallet}`, free, WalletSignalSchema);
    expect(body.stats).toMatchObject(expected);
  });

  it("scores a wallet that traded since the refresh with the Bayesian fallback", async () => {
    // F: 2 resolved bets, both won: Bayesian (2 + 10) / (2 + 20).
    const f = await ok(t(), `/v1/signals/wallet/${F}`, free, WalletSignalSchema);
    expect(f).toEqual({
      wallet: F,
      smart_money_score: 54.55,
      confidence: expect.closeTo(2 / 22, 12),
      breakdown: { method: "bayesian_fallback", bayesian_win_rate: expect.closeTo(12 / 22, 12) },
      wallet_type: null,
      stats: {
        total_bets: 2,
        resolved_bets: 2,
        win_rate: 1,
        bayesian_win_rate: expect.closeTo(12 / 22, 12),
        total_volume: expect.closeTo(13, 9),
        total_pnl: null,
        pnl_source: "none",
        pnl_as_of: null,
        markets_traded: 2,
      },
    });
    // H: 1 resolved, lost: (0 + 10) / (1 + 20); its platform figure is served at once.
    const h = await ok(t(), `/v1/signals/wallet/${H}`, free, WalletSignalSchema);
    expect(h.smart_money_score).toBe(47.62);
    expect(h.stats).toMatchObject({
      total_bets: 1,
      resolved_bets: 1,
      win_rate: 0,
      total_pnl: 50,
      pnl_source: "platform_api",
      pnl_as_of: iso(NOW - DAY),
    });
  });

  it("404 for a wallet that never traded (even one the platform names), 400 for a bad address", async () => {
    await expectError(t(), `/v1/signals/wallet/${E}`, free, 404, E);
    await expectError(t(), "/v1/signals/wallet/0x123", free, 400, "address must be an address");
  });
});

describe("GET /v1/wallets/{address}", () => {
  it("gives a free key the lite profile", async () => {
    const body = await ok(t(), `/v1/wallets/${B}`, free, WalletProfileLiteSchema);
    expect(Object.keys(body)).toEqual(["address", "platform_name", "wallet_type", "stats"]);
    expect(body).toMatchObject({
      address: B,
      platform_name: "CryptoWhale King",
      wallet_type: "retail",
    });
    expect(body.stats).toMatchObject({ total_volume: expect.closeTo(60, 9), markets_traded: 3 });
  });

  it("gives a terminal key the full dossier: latest trades, alerts, funding cluster", async () => {
    for (const key of [terminal, t().key("terminal_pro")]) {
      const body = await ok(t(), `/v1/wallets/${A}`, key, WalletDossierSchema);
      expect(body.stats?.total_pnl).toBeCloseTo(120, 9);
      expect(body.recent_trades.map((r) => [r.market_slug, r.trade_timestamp])).toEqual([
        ["will-d", iso(T + 3 * HOUR)],
        ["will-c", iso(T + 2 * HOUR)],
        ["will-b", iso(T + HOUR)],
        ["will-a", iso(T)],
      ]);
      expect(body.recent_trades[0]).toMatchObject({
        wallet: A,
        side: "BUY",
        outcome: "NO",
        price: 0.2,
        size: 100,
      });
      expect(body.alerts).toEqual([
        {
          id: 9,
          type: "insider",
          score: 88,
          bet_value: 20,
          side: "BUY",
          outcome: "NO",
          price: 0.2,
          explanation: "Odd.",
          created_at: iso(T + 3 * HOUR),
          market: { slug: "will-d", title: "WILL-D?", category: "crypto" },
        },
        expect.objectContaining({ id: 7, type: "whale", created_at: iso(T + 1000) }),
      ]);
      expect(body.funding_cluster).toEqual({ id: `clu_${A}`, role: "member", member_count: 2 });
    }
    const b = await ok(t(), `/v1/wallets/${B}`, terminal, WalletDossierSchema);
    expect(b).toMatchObject({ alerts: [], funding_cluster: null });
  });

  it("profiles an unrefreshed wallet from its fills, and 404s one that never traded", async () => {
    const body = await ok(t(), `/v1/wallets/${F}`, terminal, WalletDossierSchema);
    expect(body).toMatchObject({
      address: F,
      platform_name: "Fresh Fish",
      wallet_type: null,
      alerts: [],
    });
    expect(body.stats).toMatchObject({ total_bets: 2, pnl_source: "none" });
    expect(body.recent_trades).toHaveLength(2);
    await expectError(t(), `/v1/wallets/${E}`, terminal, 404, "never traded");
    await expectError(t(), "/v1/wallets/0xZZ", free, 400, "address");
  });
});

describe("GET /v1/wallets/{address}/categories and /timing", () => {
  it("serves the per-category record, most bets first", async () => {
    const body = await ok(t(), `/v1/wallets/${A}/categories`, terminal, WalletCategoriesSchema);
    expect(body).toEqual({
      address: A,
      categories: [
        {
          category: "crypto",
          bets: 2,
          wins: 2,
          win_rate: 1,
          pnl: expect.closeTo(140, 9),
          volume: expect.closeTo(60, 9),
        },
        {
          category: "politics",
          bets: 1,
          wins: 0,
          win_rate: 0,
          pnl: expect.closeTo(-25, 9),
          volume: expect.closeTo(25, 9),
        },
        {
          category: "sports",
          bets: 1,
          wins: 0,
          win_rate: null,
          pnl: expect.closeTo(5, 9),
          volume: expect.closeTo(30, 9),
        },
      ],
    });
  });

  it("withholds a whale's category PnL and answers an empty list for an unknown wallet", async () => {
    const w = await ok(t(), `/v1/wallets/${W}/categories`, terminal, WalletCategoriesSchema);
    expect(w.categories).toEqual([
      { category: "crypto", bets: 1, wins: 1, win_rate: 1, pnl: null, volume: 60_000 },
    ]);
    const e = await ok(t(), `/v1/wallets/${E}/categories`, terminal, WalletCategoriesSchema);
    expect(e).toEqual({ address: E, categories: [] });
  });

  it("serves timing buckets by hours before resolution", async () => {
    // A's fills in resolved markets are 237 to 240 hours before resolution: all in 7-30d.
    const body = await ok(t(), `/v1/wallets/${A}/timing`, terminal, WalletTimingSchema);
    const empty = (label: string) => ({ label, count: 0, win_rate: null });
    expect(body).toEqual({
      address: A,
      buckets: [
        empty("<1h"),
        empty("1-6h"),
        empty("6-24h"),
        empty("1-7d"),
        { label: "7-30d", count: 3, win_rate: expect.closeTo(2 / 3, 12) },
        empty(">30d"),
      ],
    });
    const f = await ok(t(), `/v1/wallets/${F}/timing`, terminal, WalletTimingSchema);
    expect(f.buckets.map((b) => b.count)).toEqual([0, 0, 0, 0, 0, 0]);
    // Empty buckets are answered, not stored (sql/0014): F, with no resolved trade, has no row.
    const rows = t()
      .db.reader.prepare(
        "SELECT count(*) FROM wallet_timing WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?)",
      )
      .pluck();
    expect(rows.get(F)).toBe(0);
    expect(rows.get(A)).toBe(1);
  });

  it("removes stored empty buckets when migrating: sql/0014 names the empty answer exactly", () => {
    // Before sql/0024 a row held the answer's JSON; EMPTY_TIMING is the stored form since.
    const empty = JSON.stringify(
      TIMING_BUCKETS.map((b) => ({ label: b.label, count: 0, win_rate: null })),
    );
    const sql = readFileSync(new URL("../../sql/0014_sparse_timing.sql", import.meta.url), "utf8");
    expect(sql).toContain(`WHERE buckets = '${empty}'`);
    expect(EMPTY_TIMING).toBe(JSON.stringify(Array(TIMING_BUCKETS.length * 2).fill(0)));
  });
});

describe("GET /v1/wallets/{address}/correlated", () => {
  it("ranks wallets by shared anchor markets, then same-side ratio, then address", async () => {
    // B: m1 and m3 on A's side, m2 on the other: 3 shared, 2/3. W and D: m1 only, same side.
    // C and G only took the other side of m3; O traded m1 outside the 30 days.
    const body = await ok(
      t(),
      `/v1/wallets/${A}/correlated?limit=20`,
      terminal,
      CorrelatedWalletsSchema,
    );
    expect(body).toEqual({
      address: A,
      correlated: [
        {
          address: B,
          platform_name: "CryptoWhale King",
          shared_markets: 3,
          same_side_ratio: expect.closeTo(2 / 3, 12),
        },
        { address: W, platform_name: null, shared_markets: 1, same_side_ratio: 1 },
        { address: D, platform_name: "deadbeef fan", shared_markets: 1, same_side_ratio: 1 },
      ],
    });
    const top = await ok(t(), `/v1/wallets/${A}/correlated`, terminal, CorrelatedWalletsSchema);
    expect(top.correlated).toHaveLength(3);
    const two = await ok(
      t(),
      `/v1/wallets/${A}/correlated?limit=2`,
      terminal,
      CorrelatedWalletsSchema,
    );
    expect(two.correlated.map((c) => c.address)).toEqual([B, W]);
  });

  it("is cached per refresh generation", async () => {
    const fresh = buildWorld();
    try {
      const key = fresh.t.key("terminal");
      const before = await ok(fresh.t, `/v1/wallets/${A}/correlated`, key, CorrelatedWalletsSchema);
      expect(before.correlated.map((c) => c.address)).toEqual([B, W, D]);
      // G joins A's side in m4; it shows only once a refresh has recomputed the read models.
      fresh.trade([fill(G, fresh.ids.m4, "NO", "BUY", 0.3, 10, NOW - HOUR)]);
      fresh.t.db.writer
        .prepare(
          `INSERT INTO wallet_bets (wallet_id, market_id, category, side_code, entry_price_units,
             buy_usd_units, volume_units, yes_flow_units, no_flow_units, yes_shares_units,
             no_shares_units, trade_count, two_sided, first_ts, entry_offset, last_offset, resolved,
             won, pnl_base, move_24h)
           SELECT (SELECT id FROM wallet_ids WHERE address = ?), market_id, category, side_code,
             entry_price_units, buy_usd_units, volume_units, yes_flow_units, no_flow_units,
             yes_shares_units, no_shares_units, trade_count, two_sided, first_ts, entry_offset,
             ? - first_ts, resolved, won, pnl_base, move_24h
             FROM wallet_bets
            WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?) AND market_id = ?`,
        )
        .run(G, NOW - HOUR, A, fresh.ids.m4);
      const cached = await ok(fresh.t, `/v1/wallets/${A}/correlated`, key, CorrelatedWalletsSchema);
      expect(cached).toEqual(before);
      fresh.t.db.writer
        .prepare(
          `DELETE FROM wallet_bets
            WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?) AND market_id = ?`,
        )
        .run(G, fresh.ids.m4);
      fresh.t.clock.advance(HOUR);
      fresh.refresh();
      const after = await ok(fresh.t, `/v1/wallets/${A}/correlated`, key, CorrelatedWalletsSchema);
      expect(after.correlated.map((c) => [c.address, c.shared_markets])).toEqual([
        [B, 3],
        [G, 2],
        [W, 1],
        [D, 1],
      ]);
      expect(after.correlated[1]!.same_side_ratio).toBeCloseTo(0.5, 12);
    } finally {
      fresh.t.close();
    }
  });
});

describe("GET /v1/wallets/search", () => {
  it.each([
    ["0xaaaa", [A]],
    ["AAAAAAA", [A]],
    ["0xdead", [G]],
    // Address prefix first, then the name "deadbeef fan".
    ["dead", [G, D]],
    ["cryptowhale", [B]],
    ["KING", [B]],
    ["whale k", [B]],
    ['"x" OR a', []],
    ["Fresh", []],
    ["nobody-by-that-name", []],
  ])("q=%s", async (q, expected) => {
    const body = await ok(
      t(),
      `/v1/wallets/search?q=${encodeURIComponent(q)}`,
      terminal,
      WalletSearchSchema,
    );
    expect(body.query).toBe(q);
    expect(body.results.map((r) => r.address)).toEqual(expected);
  });

  it("serves each result's volume and PnL and honours limit", async () => {
    const body = await ok(t(), "/v1/wallets/search?q=king", terminal, WalletSearchSchema);
    expect(body.results).toEqual([
      {
        address: B,
        platform_name: "CryptoWhale King",
        total_volume: expect.closeTo(60, 9),
        total_pnl: 1234.5,
      },
    ]);
    const one = await ok(t(), "/v1/wallets/search?q=dead&limit=1", terminal, WalletSearchSchema);
    expect(one.results.map((r) => r.address)).toEqual([G]);
  });

  it("indexes names the refresh recomputes, and ranks name matches by volume", async () => {
    const fresh = buildWorld();
    try {
      const key = fresh.t.key("terminal");
      tradeAfterRefresh(fresh);
      expect(
        (await ok(fresh.t, "/v1/wallets/search?q=fish", key, WalletSearchSchema)).results,
      ).toEqual([]);
      fresh.t.clock.advance(HOUR);
      fresh.refresh();
      const found = await ok(fresh.t, "/v1/wallets/search?q=fish", key, WalletSearchSchema);
      expect(found.results.map((r) => r.address)).toEqual([F]);
      // Renamed without a refresh of its own: "deadbeef fan" → "Fish Two" once D is recomputed.
      fresh.t.db.writer
        .prepare("UPDATE wallet_stats SET platform_name = 'Fish Two' WHERE address = ?")
        .run(D);
      fresh.t.db.writer.transaction(() =>
        refreshWalletSearch(fresh.t.db, { full: false, wallets: new Set([D]) }),
      )();
      const both = await ok(fresh.t, "/v1/wallets/search?q=FISH", key, WalletSearchSchema);
      // F has 13 USD of volume, D 6 USD.
      expect(both.results.map((r) => r.address)).toEqual([F, D]);
      expect(
        (await ok(fresh.t, "/v1/wallets/search?q=deadbeef", key, WalletSearchSchema)).results,
      ).toEqual([]);
    } finally {
      fresh.t.close();
    }
  });
});

describe("GET /v1/signals/screen", () => {
  // Edges: A crypto 1 − 2/3; O, W, B (crypto and politics) and D at 0; A politics 0 − 2/3.
  const ORDER = [
    [A, "crypto"],
    [O, "crypto"],
    [W, "crypto"],
    [B, "crypto"],
    [B, "politics"],
    [D, "crypto"],
    [A, "politics"],
  ];

  it("ranks (wallet, category) rows by edge, then address, then category, across pages", async () => {
    const { rows, pages } = await allPages(
      t(),
      "/v1/signals/screen?limit=2",
      terminal,
      WalletEdgePageSchema,
    );
    expect(pages).toBe(4);
    expect(rows.map((r) => [r.address, r.category])).toEqual(ORDER);
    expect(rows[0]).toEqual({
      address: A,
      platform_name: null,
      category: "crypto",
      category_win_rate: 1,
      global_win_rate: expect.closeTo(2 / 3, 12),
      edge: expect.closeTo(1 / 3, 12),
      bets: 2,
      total_pnl: expect.closeTo(120, 9),
    });
    expect(rows[3]).toMatchObject({
      platform_name: "CryptoWhale King",
      total_pnl: 1234.5,
      edge: 0,
      bets: 1,
    });
    expect(rows[2]).toMatchObject({ address: W, total_pnl: null });
  });

  it.each([
    ["min_edge=0", ORDER.slice(0, 6)],
    ["min_edge=0.3", ORDER.slice(0, 1)],
    ["min_edge=-1", ORDER],
    ["min_bets=2", ORDER.slice(0, 1)],
    [
      "category=politics",
      [
        [B, "politics"],
        [A, "politics"],
      ],
    ],
    ["category=politics&min_edge=-0.5", [[B, "politics"]]],
    ["category=nothing", []],
  ])("filters: %s", async (query, expected) => {
    const { rows } = await allPages(
      t(),
      `/v1/signals/screen?${query}&limit=1`,
      terminal,
      WalletEdgePageSchema,
    );
    expect(rows.map((r) => [r.address, r.category])).toEqual(expected);
  });
});

describe("errors and tier gates", () => {
  const bad: [string, string][] = [
    ["/v1/signals/screen?limit=0", "limit must be an integer from 1 to 100"],
    ["/v1/signals/screen?limit=101", "limit"],
    ["/v1/signals/screen?limit=abc", "limit"],
    ["/v1/signals/screen?min_edge=1.5", "min_edge must be a number from -1 to 1"],
    ["/v1/signals/screen?min_edge=x", "min_edge"],
    ["/v1/signals/screen?min_bets=-1", "min_bets must be an integer"],
    ["/v1/signals/screen?min_bets=2.5", "min_bets"],
    ["/v1/signals/screen?category=", "category must not be empty"],
    ["/v1/signals/screen?cursor=garbage", "cursor is invalid"],
    ["/v1/wallets/search", "q is required"],
    ["/v1/wallets/search?q=ab", "q must be at least 3 characters"],
    [`/v1/wallets/search?q=${"x".repeat(101)}`, "q must be at most 100"],
    ["/v1/wallets/search?q=abc&limit=26", "limit must be an integer from 1 to 25"],
    ["/v1/wallets/search?q=abc&limit=0", "limit"],
    [`/v1/wallets/${A}/correlated?limit=21`, "limit must be an integer from 1 to 20"],
    [`/v1/wallets/${A}/correlated?limit=0`, "limit"],
    ["/v1/wallets/0x12/correlated", "address"],
    ["/v1/wallets/0x12/categories", "address"],
    ["/v1/wallets/not-an-address/timing", "address"],
  ];
  it.each(bad)("400 for %s", async (path, message) => {
    await expectError(t(), path, terminal, 400, message);
  });

  it("refuses a screen cursor from another endpoint and one edited by hand", async () => {
    const page = (await call(t(), "/v1/signals/screen?limit=1", terminal)).body;
    const trades = (await call(t(), `/v1/wallets/${A}/trades?limit=1`, terminal)).body;
    await expectError(
      t(),
      `/v1/signals/screen?cursor=${trades.next_cursor}`,
      terminal,
      400,
      "cursor",
    );
    await expectError(
      t(),
      `/v1/wallets/${A}/trades?cursor=${page.next_cursor}`,
      terminal,
      400,
      "cursor",
    );
    const tag = (page.next_cursor as string).split(".")[1];
    const edited = Buffer.from(JSON.stringify(["signals-screen", 1, A, "crypto", 999])).toString(
      "base64url",
    );
    await expectError(t(), `/v1/signals/screen?cursor=${edited}.${tag}`, terminal, 400, "cursor");
  });

  it.each([
    "/v1/signals/screen",
    `/v1/wallets/${A}/categories`,
    `/v1/wallets/${A}/timing`,
    `/v1/wallets/${A}/correlated`,
    "/v1/wallets/search?q=king",
  ])("403 for a free key on %s", async (path) => {
    await expectError(t(), path, free, 403, "terminal");
  });

  it("documents every wallet endpoint in the OpenAPI document", async () => {
    const doc = (await (await t().get("/v1/openapi.json")).json()) as {
      paths: Record<string, any>;
    };
    for (const path of [
      "/v1/signals/wallet/{address}",
      "/v1/signals/screen",
      "/v1/wallets/{address}",
      "/v1/wallets/{address}/categories",
      "/v1/wallets/{address}/timing",
      "/v1/wallets/{address}/correlated",
      "/v1/wallets/search",
    ]) {
      expect(doc.paths[path]?.get?.responses?.["200"], path).toBeDefined();
    }
  });
});

describe("screen depth", () => {
  it("pages to exactly 1,000 rows, each once and in order, then stops", async () => {
    const fresh = buildWorld();
    try {
      const w = fresh.t.db.writer;
      const insert = categoryStatsWriter(w);
      const row = { bets: 10, resolved_bets: 10, wins: 5, win_rate: 0.5, global_win_rate: 0.4 };
      w.transaction(() => {
        for (let i = 0; i < 600; i++) {
          const address = tieBreakAddress(0x5000, i);
          insertStats(fresh.t, address);
          // Pairs of equal edges exercise the address and category tie-breaks.
          for (const category of ["economics", "culture"]) {
            const edge = 0.1 - Math.floor(i / 2) * 1e-4;
            insert({
              ...row,
              address,
              category,
              edge,
              pnl: 0,
              volume: 0,
              counter_consensus_wins: 0,
            });
          }
        }
      })();
      const key = fresh.t.key("terminal");
      for (const limit of [100, 7]) {
        const { rows, pages } = await allPages(
          fresh.t,
          `/v1/signals/screen?min_edge=-0.5&limit=${limit}`,
          key,
          WalletEdgePageSchema,
        );
        expect(rows).toHaveLength(1_000);
        expect(pages).toBe(Math.ceil(1_000 / limit));
        const keys = rows.map((r) => `${r.address}/${r.category}`);
        expect(new Set(keys).size).toBe(1_000);
        const sorted = [...rows].sort(
          (a, b) =>
            b.edge - a.edge ||
            (a.address < b.address
              ? -1
              : a.address > b.address
                ? 1
                : a.category < b.category
                  ? -1
                  : 1),
        );
        expect(keys).toEqual(sorted.map((r) => `${r.address}/${r.category}`));
      }
    } finally {
      fresh.t.close();
    }
  });
});

describe("fallback bound", () => {
  it("serves null stats rather than part of a record past the fill bound", async () => {
    const fresh = buildWorld();
    try {
      const many = `0x${"ab".repeat(20)}`;
      const rows = Array.from({ length: FALLBACK_FILL_LIMIT + 1 }, (_, i) =>
        fill(many, fresh.ids.m3, "YES", "BUY", 0.5, 1, NOW + i),
      );
      fresh.trade(rows);
      const key = fresh.t.key("free");
      const body = await ok(fresh.t, `/v1/signals/wallet/${many}`, key, WalletSignalSchema);
      expect(body).toMatchObject({
        smart_money_score: 50,
        confidence: 0,
        stats: null,
        wallet_type: null,
      });
      expect(
        v.is(WalletProfileLiteSchema, (await call(fresh.t, `/v1/wallets/${many}`, key)).body),
      ).toBe(true);
    } finally {
      fresh.t.close();
    }
  });
});
