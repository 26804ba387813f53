import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INVESTIGATIONS_EVERY_MS, refreshFunding } from "../../src/funding/refresh";
import { InvestigationSchema, InvestigationSummarySchema } from "../../src/schemas/funding";
import { PageOf } from "../../src/schemas/shared";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, HOUR, rows, T0 } from "./rows";

/** P(W ≥ wins) by summing the probability of every one of the 2^n win/loss outcomes. */
function bruteForceP(prices: readonly number[], wins: number): number {
  const n = prices.length;
  let total = 0;
  for (let mask = 0; mask < 1 << n; mask++) {
    let probability = 1;
    let won = 0;
    for (let i = 0; i < n; i++) {
      if ((mask >> i) & 1) {
        probability *= prices[i]!;
        won++;
      } else probability *= 1 - prices[i]!;
    }
    if (won >= wins) total += probability;
  }
  return total;
}

const RESOLVED_AT = T0 + 60 * DAY;
const ALPHA = addr("alpha", 1);
const DELTA = addr("delta", 1);
const FUNDER = addr("ring", 1);
const MEMBERS = [1, 2, 3].map((i) => addr("ringm", i));
const ALPHA_PRICES = Array.from({ length: 20 }, (_, i) => 0.2 + 0.01 * i);
const RING_PRICES = Array.from({ length: 21 }, (_, i) => 0.3 + 0.01 * i);

let t: TestApp;
let pro: string;
const markets: Record<string, number[]> = {};

/**
 * A wallet's resolved bets in one category, `wins` of them won (the first ones), with its
 * category record to match.
 */
function record(
  wallet: string,
  category: string,
  prices: readonly number[],
  wins: number,
  options: { pnl?: number; usd?: (i: number) => number; offset?: number } = {},
) {
  const b = rows(t.db);
  const pool = markets[category] ?? [];
  markets[category] = pool;
  prices.forEach((price, i) => {
    const k = (options.offset ?? 0) + i;
    while (pool.length <= k) pool.push(b.market(category, "YES", RESOLVED_AT));
    b.bet({
      wallet,
      market: pool[k]!,
      category,
      side: i < wins ? "YES" : "NO",
      price,
      usd: options.usd ? options.usd(i) : 100 + i,
      ts: T0 + i * DAY,
      won: i < wins,
    });
  });
  b.categoryStats(wallet, category, prices.length, wins, options.pnl ?? 500);
}

beforeAll(() => {
  t = createTestApp();
  const b = rows(t.db);
  b.baseRate("politics", 0.5);
  b.baseRate("crypto", 0.45);
  b.baseRate("sports", 0.6);
  b.batch(() => {
    record(ALPHA, "politics", ALPHA_PRICES, 16);
    record(DELTA, "politics", Array(20).fill(0.3), 14); // exactly 70%
    record(addr("pricey", 1), "politics", Array(20).fill(0.85), 16); // expected 17: p ≈ 0.8
    record(addr("short", 1), "politics", Array(19).fill(0.3), 19); // 19 bets
    record(addr("loser", 1), "politics", Array(20).fill(0.3), 16, { pnl: -10 }); // lost money
    record(addr("sporty", 1), "sports", Array(25).fill(0.3), 18); // 72% vs 60%: 12 points
    record(addr("sixtyfive", 1), "politics", Array(20).fill(0.3), 13); // 65%
    // A ring: three wallets of 7 bets (6 won) each, together 21 bets, 18 won.
    for (const [j, member] of MEMBERS.entries()) {
      b.transfer(FUNDER, member, 1_000, T0 - DAY + j * HOUR);
      record(member, "crypto", RING_PRICES.slice(7 * j, 7 * j + 7), 6, {
        pnl: 100,
        usd: (i) => 1_000 * (j + 1) + i,
        offset: 7 * j,
      });
      b.stats({ address: member, bets: 7, resolved: 7, wins: 6, volume: 5_000, pnl: 100 + j });
    }
    // Twelve more politics cases with rising p-values, two of them identical.
    for (let k = 0; k < 12; k++) {
      const price = 0.3 + 0.02 * Math.min(k, 10);
      record(addr("zeta", k), "politics", Array(20).fill(price), 15);
    }
  });
  refreshFunding(t.db, t.clock.now());
  pro = t.key("terminal_pro");
});
afterAll(() => t.close());

async function json(path: string, key = pro) {
  const res = await t.get(path, key);
  const body = (await res.json()) as Record<string, any>;
  if (res.status === 200 && path.startsWith("/v1/investigations")) {
    const schema = /^\/v1\/investigations\/\d+$/.test(path)
      ? InvestigationSchema
      : PageOf(InvestigationSummarySchema);
    expect(v.safeParse(schema, body).issues).toBeUndefined();
  }
  return { status: res.status, body };
}

async function all(path: string) {
  const seen: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const { status, body } = await json(
      cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
    );
    expect(status).toBe(200);
    seen.push(...body.data);
    cursor = body.next_cursor;
  } while (cursor);
  return seen;
}

/** How a wallet case's title names its wallet. */
const short = (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`;
const indexOf = (rows: Record<string, any>[], wallet: string) =>
  rows.findIndex((r) => r.type === "wallet" && r.title.includes(short(wallet)));
const idOf = (rows: Record<string, any>[], wallet: string) =>
  rows[indexOf(rows, wallet)]?.id as number;

describe("candidates", () => {
  it("opens exactly the wallets and clusters that meet every rule", async () => {
    const listed = await all("/v1/investigations?limit=100");
    const subjects = listed.map((r) => r.title);
    expect(listed).toHaveLength(15); // alpha, delta, the ring, twelve zetas
    expect(subjects.some((s) => s.includes(short(ALPHA)))).toBe(true);
    for (const excluded of ["pricey", "short", "loser", "sporty", "sixtyfive"]) {
      const wallet = addr(excluded, 1);
      expect(t.app.funding.investigations.inOpenInvestigation(wallet)).toBe(false);
    }
    expect(t.app.funding.investigations.inOpenInvestigation(DELTA)).toBe(true);
    // Each ring member alone has 7 bets; only the cluster qualifies.
    const clusters = await all("/v1/investigations?type=cluster");
    expect(clusters).toHaveLength(1);
    expect(clusters[0]).toMatchObject({ type: "cluster", category: "crypto", wallet_count: 3 });
    for (const m of MEMBERS) expect(t.app.funding.investigations.inOpenInvestigation(m)).toBe(true);
  });

  it("computes the exact p-value of a wallet case, as brute-force enumeration does", async () => {
    const listed = await all("/v1/investigations?category=politics&type=wallet");
    const { status, body } = await json(`/v1/investigations/${idOf(listed, ALPHA)}`);
    expect(status).toBe(200);
    const expected = bruteForceP(ALPHA_PRICES, 16);
    expect(Math.abs(body.stats.p_value - expected) / expected).toBeLessThan(1e-9);
    expect(body.stats).toMatchObject({
      n: 20,
      wins: 16,
      win_rate: 0.8,
      base_rate: 0.5,
      method: "exact",
    });
    expect(body.stats.expected_wins).toBeCloseTo(
      ALPHA_PRICES.reduce((a, p) => a + p, 0),
      9,
    );
    expect(body.stats.edge).toBeCloseTo(0.3, 12);
    expect(body).toMatchObject({
      type: "wallet",
      category: "politics",
      status: "open",
      wallet_count: 1,
      resolved_bets: 20,
      win_rate: 0.8,
      p_value: body.stats.p_value,
    });
    expect(body.wallets).toEqual([
      {
        address: ALPHA,
        role: "subject",
        resolved_bets: 20,
        wins: 16,
        win_rate: 0.8,
        total_pnl: null,
      },
    ]);
    expect(body.summary).toContain("won 16 of 20 resolved politics bets (80%)");
  });

  it("computes the exact p-value of a cluster over all its members' bets", async () => {
    const [ring] = await all("/v1/investigations?type=cluster");
    const { body } = await json(`/v1/investigations/${ring!.id}`);
    const wins = RING_PRICES.map((_, i) => i % 7 < 6);
    const expected = bruteForceP(RING_PRICES, wins.filter(Boolean).length);
    expect(Math.abs(body.stats.p_value - expected) / expected).toBeLessThan(1e-9);
    expect(body.stats).toMatchObject({ n: 21, wins: 18, base_rate: 0.45, method: "exact" });
    expect(body.title).toContain(`clu_${MEMBERS[0]}`);
    expect(body.wallets).toEqual(
      MEMBERS.map((address, j) => ({
        address,
        role: "member",
        resolved_bets: 7,
        wins: 6,
        win_rate: 6 / 7,
        total_pnl: 100 + j,
      })),
    );
    // Evidence: largest bets first, with their markets and timing.
    expect(body.evidence).toHaveLength(21);
    expect(body.evidence[0]).toEqual({
      market_slug: `m-${markets.crypto![20]}`,
      market_title: `Market ${markets.crypto![20]}?`,
      side: "NO",
      entry_price: RING_PRICES[20],
      usd_value: 3_006,
      outcome: "YES",
      won: false,
      hours_before_resolution: (60 - 6) * 24,
    });
    const usd = body.evidence.map((e: any) => e.usd_value);
    expect(usd).toEqual([...usd].sort((a: number, b: number) => b - a));
  });

  it("matches the brute force on the 70% boundary case", async () => {
    const listed = await all("/v1/investigations?limit=100");
    const delta = listed[indexOf(listed, DELTA)];
    const expected = bruteForceP(Array(20).fill(0.3), 14);
    expect(Math.abs(delta!.p_value - expected) / expected).toBeLessThan(1e-9);
  });
});

describe("GET /v1/investigations", () => {
  it("orders by p-value, then newest, and pages through every row once", async () => {
    // A later case identical to zeta 0: same p-value, newer, so it comes first among the two.
    t.clock.advance(DAY);
    record(addr("later", 1), "politics", Array(20).fill(0.3), 15);
    refreshFunding(t.db, t.clock.now());
    const full = (await json("/v1/investigations?limit=100")).body.data as Record<string, any>[];
    expect(full).toHaveLength(16);
    for (let i = 1; i < full.length; i++) {
      const [a, b] = [full[i - 1]!, full[i]!];
      const ordered =
        a.p_value < b.p_value ||
        (a.p_value === b.p_value &&
          (a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id)));
      expect(ordered).toBe(true);
    }
    const later = indexOf(full, addr("later", 1));
    const zeta0 = indexOf(full, addr("zeta", 0));
    expect(zeta0).toBeGreaterThan(0);
    expect(full[later]!.p_value).toBe(full[zeta0]!.p_value);
    expect(later).toBe(zeta0 - 1);
    // zetas 10 and 11 share their p-value and creation time: the higher id first.
    const z10 = indexOf(full, addr("zeta", 10));
    const z11 = indexOf(full, addr("zeta", 11));
    expect(full[z10]!.p_value).toBe(full[z11]!.p_value);
    expect(z11).toBe(z10 - 1);
    expect(full[z11]!.id).toBeGreaterThan(full[z10]!.id);

    for (const limit of [1, 4, 7]) {
      const paged = await all(`/v1/investigations?limit=${limit}`);
      expect(paged.map((r) => r.id)).toEqual(full.map((r) => r.id));
    }
    const page = (await json("/v1/investigations")).body;
    expect(page.data).toHaveLength(16);
    expect(page.next_cursor).toBeNull();
    expect(Object.keys(page.data[0]).sort()).toEqual([
      "category",
      "created_at",
      "edge",
      "id",
      "p_value",
      "resolved_bets",
      "status",
      "title",
      "type",
      "updated_at",
      "wallet_count",
      "win_rate",
    ]);
  });

  it("filters by category and type", async () => {
    expect(await all("/v1/investigations?category=crypto")).toHaveLength(1);
    expect(await all("/v1/investigations?category=sports")).toHaveLength(0);
    expect(await all("/v1/investigations?type=wallet&limit=3")).toHaveLength(15);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit must be an integer from 1 to 100"],
    ["type=person", "type must be one of wallet, cluster"],
    ["cursor=abc", "cursor is invalid"],
  ])("400 for %s", async (query, message) => {
    const res = await json(`/v1/investigations?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain(message);
  });

  it("refuses a cursor from another endpoint", async () => {
    const { body } = await json("/v1/investigations?limit=1");
    const other = await json(
      `/v1/trades?wallet=${ALPHA}&cursor=${body.next_cursor}`,
      t.key("terminal"),
    );
    expect(other.status).toBe(400);
  });

  it("needs the terminal_pro tier", async () => {
    for (const path of ["/v1/investigations", "/v1/investigations/1"]) {
      const res = await json(path, t.key("terminal"));
      expect(res.status).toBe(403);
    }
  });
});

describe("GET /v1/investigations/{id}", () => {
  it.each([
    ["0", 400],
    ["-1", 400],
    ["1.5", 400],
    ["abc", 400],
    ["99999", 404],
  ])("answers %s with %i", async (id, status) => {
    const res = await json(`/v1/investigations/${id}`);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(status === 400 ? "bad_request" : "not_found");
  });
});

describe("status", () => {
  it("dismissed leaves the API and stays dismissed across refreshes; reopened comes back", async () => {
    const listed = await all("/v1/investigations?limit=100");
    const id = idOf(listed, ALPHA);
    const dismissed = t.app.funding.investigations.setStatus(id, "dismissed", t.clock.now());
    expect(dismissed).toMatchObject({ ok: true, value: { id, status: "dismissed" } });
    expect(t.app.funding.investigations.setStatus(id, "dismissed", t.clock.now()).ok).toBe(false);
    for (let round = 0; round < 2; round++) {
      expect((await json(`/v1/investigations/${id}`)).status).toBe(404);
      expect((await all("/v1/investigations?limit=100")).map((r) => r.id)).not.toContain(id);
      expect(t.app.funding.investigations.inOpenInvestigation(ALPHA)).toBe(false);
      refreshFunding(t.db, t.clock.now(), { force: true });
    }
    expect(t.app.funding.investigations.any(id)).toMatchObject({
      status: "dismissed",
      qualifies: true,
    });
    t.app.funding.investigations.setStatus(id, "open", t.clock.now());
    const back = await json(`/v1/investigations/${id}`);
    expect(back.status).toBe(200);
    expect(back.body.status).toBe("open");
  });

  it("a case that stops qualifying leaves the API and returns under the same id", async () => {
    const listed = await all("/v1/investigations?limit=100");
    const id = idOf(listed, DELTA);
    const b = rows(t.db);
    const extra = b.market("politics", "YES", RESOLVED_AT);
    b.bet({
      wallet: DELTA,
      market: extra,
      category: "politics",
      side: "NO",
      price: 0.3,
      won: false,
    });
    b.categoryStats(DELTA, "politics", 21, 14, 500);
    // These rows skip the base rates a refresh keeps, so the screen runs on its own clock here.
    t.clock.advance(INVESTIGATIONS_EVERY_MS);
    refreshFunding(t.db, t.clock.now());
    expect((await json(`/v1/investigations/${id}`)).status).toBe(404);
    expect(t.app.funding.investigations.any(id)).toMatchObject({
      status: "open",
      qualifies: false,
    });
    t.db.writer
      .prepare(
        `DELETE FROM wallet_bets
          WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?) AND market_id = ?`,
      )
      .run(DELTA, extra);
    b.categoryStats(DELTA, "politics", 20, 14, 500);
    t.clock.advance(INVESTIGATIONS_EVERY_MS);
    refreshFunding(t.db, t.clock.now());
    const back = await json(`/v1/investigations/${id}`);
    expect(back.status).toBe(200);
    expect(back.body.resolved_bets).toBe(20);
  });

  it("screens again when the base rates move or the screen is 15 minutes old, not otherwise", () => {
    const first = refreshFunding(t.db, t.clock.now(), { force: true });
    expect(first.investigations).not.toBe("unchanged");
    t.clock.advance(60_000);
    expect(refreshFunding(t.db, t.clock.now()).investigations).toBe("unchanged");
    t.db.writer.exec(
      "INSERT INTO category_base_rates (category, resolved_bets, wins, base_rate) VALUES ('zz', 1, 1, 1)",
    );
    t.clock.advance(60_000);
    expect(refreshFunding(t.db, t.clock.now()).investigations).not.toBe("unchanged");
    t.db.writer.exec("DELETE FROM category_base_rates WHERE category = 'zz'");
    refreshFunding(t.db, t.clock.now(), { force: true });
    t.clock.advance(INVESTIGATIONS_EVERY_MS - 1);
    expect(refreshFunding(t.db, t.clock.now()).investigations).toBe("unchanged");
    t.clock.advance(1);
    expect(refreshFunding(t.db, t.clock.now()).investigations).not.toBe("unchanged");
  });
});
