import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app";

const W1 = "0x1111111111111111111111111111111111111111";
const W2 = "0x2222222222222222222222222222222222222222";
const C1 = `0x${"a".repeat(64)}`;
const C2 = `0x${"b".repeat(64)}`;
const T0 = Date.parse("2026-10-01T00:00:00.000Z");
const HOUR = 3_600_000;
const tx = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

let t: TestApp;
let key: string;

beforeAll(() => {
  t = createTestApp();
  const w = t.db.writer;
  w.prepare(
    "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (?, ?, ?, ?, ?)",
  ).run(1, "m-one", "One?", "crypto", C1);
  w.prepare(
    "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (?, ?, ?, ?, ?)",
  ).run(2, "m-two", "Two?", "sports", C2);
  const insert = w.prepare(
    "INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  // 120 fills over 120 hours; every 7th shares its timestamp with the previous fill, so the
  // keyset's id tie-break is exercised; tx 5 carries two fills (log 3 and log 1).
  for (let i = 0; i < 120; i++) {
    const ts = T0 + (i % 7 === 0 && i > 0 ? i - 1 : i) * HOUR;
    const wallet = i % 2 === 0 ? W1 : W2;
    const market = i % 3 === 0 ? 2 : 1;
    const price = 0.4 + (i % 5) * 0.05;
    const size = 100 + i * 10;
    insert.run(
      tx(i),
      i === 5 ? 3 : 0,
      wallet,
      market,
      i % 4 === 0 ? "NO" : "YES",
      i % 6 === 0 ? "SELL" : "BUY",
      price,
      size,
      price * size,
      ts,
    );
  }
  insert.run(tx(5), 1, W2, 1, "YES", "BUY", 0.5, 10, 5, T0 + 5 * HOUR);
  // Market one's outcomes have names (as the live ingester stores them); market two's do not.
  w.prepare(
    "INSERT INTO market_outcomes (market_id, yes_name, no_name) VALUES (1, 'Up', 'Down')",
  ).run();
  key = t.key("terminal");
});
afterAll(() => t.close());

async function json(path: string, k = key) {
  const res = await t.get(path, k);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function all(path: string) {
  const seen: Record<string, any>[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const { status, body } = await json(
      cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path,
    );
    expect(status).toBe(200);
    seen.push(...body.data);
    cursor = body.next_cursor;
    pages++;
  } while (cursor);
  return { rows: seen, pages };
}

describe("GET /v1/trades", () => {
  it("pages a wallet's fills newest first, every row exactly once", async () => {
    const { rows, pages } = await all(
      `/v1/trades?wallet=${W1.toUpperCase().replace("0X", "0x")}&limit=7`,
    );
    expect(rows).toHaveLength(60);
    expect(pages).toBe(9);
    expect(new Set(rows.map((r) => r.id)).size).toBe(60);
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1]!, rows[i]!];
      expect(
        a.trade_timestamp > b.trade_timestamp ||
          (a.trade_timestamp === b.trade_timestamp && a.id > b.id),
      ).toBe(true);
    }
    expect(rows.every((r) => r.wallet === W1)).toBe(true);
  });

  it("names each fill's outcome as Polymarket does, beside YES/NO, where the name is known", async () => {
    const { body } = await json(`/v1/trades?market=${C1}&limit=50`);
    expect(body.data.length).toBeGreaterThan(10);
    for (const trade of body.data) {
      expect(trade.outcome_name).toBe(trade.outcome === "YES" ? "Up" : "Down");
    }
  });

  it("serves the Trade shape exactly", async () => {
    const { body } = await json(`/v1/trades?market=${C2}&limit=1`);
    expect(Object.keys(body)).toEqual(["data", "next_cursor"]);
    const trade = body.data[0];
    expect(Object.keys(trade).sort()).toEqual([
      "condition_id",
      "id",
      "log_index",
      "market_slug",
      "outcome",
      "outcome_name",
      "price",
      "side",
      "size",
      "trade_timestamp",
      "tx_hash",
      "usd_value",
      "wallet",
    ]);
    expect(trade).toMatchObject({ market_slug: "m-two", condition_id: C2, outcome_name: null });
    expect(trade.trade_timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("combines filters: market, side, min_bet and a window in both formats", async () => {
    const start = new Date(T0 + 10 * HOUR).toISOString();
    const end = T0 + 50 * HOUR;
    const { rows } = await all(
      `/v1/trades?market=${C1}&side=BUY&min_bet=100&start=${start}&end=${end}&limit=100`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.condition_id).toBe(C1);
      expect(r.side).toBe("BUY");
      expect(r.usd_value).toBeGreaterThanOrEqual(100);
      const ts = Date.parse(r.trade_timestamp);
      expect(ts).toBeGreaterThanOrEqual(T0 + 10 * HOUR);
      expect(ts).toBeLessThanOrEqual(end);
    }
  });

  it("pages a wallet's window from its index alone, as the filtered path pages it", async () => {
    // With min_bet=0 the same rows come through the general statement; without it, through the
    // wallet statement that takes each page's ids from fills_by_wallet (src/read/trades.ts).
    const window = `wallet=${W2}&start=${T0 + 7 * HOUR}&end=${T0 + 90 * HOUR}&limit=7`;
    const byIndex = await all(`/v1/trades?${window}`);
    const filtered = await all(`/v1/trades?${window}&min_bet=0`);
    expect(byIndex.rows.length).toBeGreaterThan(14);
    expect(byIndex.rows).toEqual(filtered.rows);
    expect(byIndex.pages).toBe(filtered.pages);
  });

  it("answers an empty page for an unknown market", async () => {
    const { status, body } = await json(`/v1/trades?market=0x${"c".repeat(64)}`);
    expect(status).toBe(200);
    expect(body).toEqual({ data: [], next_cursor: null });
  });

  const bad: [string, string][] = [
    ["", "selective filter"],
    ["?side=BUY&min_bet=5", "selective filter"],
    ["?start=2026-10-01T00:00:00Z", "both start and end"],
    ["?end=1790000000000", "both start and end"],
    ["?start=2026-01-01T00:00:00Z&end=2026-04-02T00:00:01Z", "90 days"],
    ["?start=2026-02-01T00:00:00Z&end=2026-01-01T00:00:00Z", "before start"],
    ["?start=yesterday&end=today", "RFC 3339"],
    ["?wallet=0x123", "wallet must be an address"],
    [`?wallet=${W1}&limit=0`, "limit must be an integer from 1 to 100"],
    [`?wallet=${W1}&limit=101`, "limit"],
    [`?wallet=${W1}&limit=2.5`, "limit"],
    [`?wallet=${W1}&side=buy`, "side"],
    [`?wallet=${W1}&min_bet=-1`, "min_bet"],
    [`?wallet=${W1}&min_bet=abc`, "min_bet"],
    ["?market=0xabc", "condition id"],
    [`?wallet=${W1}&cursor=garbage`, "cursor is invalid"],
  ];
  it.each(bad)("400 for %s", async (query, message) => {
    const { status, body } = await json(`/v1/trades${query}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe("bad_request");
    expect(body.error.message).toContain(message);
  });

  it("accepts a 90-day window exactly", async () => {
    const { status } = await json("/v1/trades?start=2026-01-01T00:00:00Z&end=2026-04-01T00:00:00Z");
    expect(status).toBe(200);
  });

  it("refuses a tampered cursor and a cursor from another query's endpoint", async () => {
    const { body } = await json(`/v1/trades?wallet=${W1}&limit=5`);
    const cursor: string = body.next_cursor;
    const [payload, tag] = cursor.split(".");
    const edited = Buffer.from(JSON.stringify(["trades", Date.now(), 1])).toString("base64url");
    for (const bad of [
      `${edited}.${tag}`,
      `${payload}.${tag!.slice(0, -2)}AA`,
      `${payload}x.${tag}`,
      `${cursor}x`,
      `${cursor}.x`,
    ]) {
      const res = await json(`/v1/trades?wallet=${W1}&cursor=${bad}`);
      expect(res.status).toBe(400);
    }
    const other = await json(`/v1/wallets/${W1}/trades?cursor=${cursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.message).toContain("cursor");
  });

  it("is terminal and above", async () => {
    const { status, body } = await json(`/v1/trades?wallet=${W1}`, t.key("free"));
    expect(status).toBe(403);
    expect(body.error.code).toBe("forbidden");
  });
});

describe("GET /v1/wallets/{address}/trades", () => {
  it("pages every fill of the wallet once, newest first", async () => {
    const { rows } = await all(`/v1/wallets/${W2}/trades?limit=100`);
    expect(rows).toHaveLength(61);
    expect(rows.every((r) => r.wallet === W2)).toBe(true);
    const first = await json(`/v1/wallets/${W2}/trades`);
    expect(first.body.data).toHaveLength(20);
  });
  it("answers an empty page for a wallet with no fills and 400 for a bad address or limit", async () => {
    expect((await json(`/v1/wallets/0x${"9".repeat(40)}/trades`)).body).toEqual({
      data: [],
      next_cursor: null,
    });
    expect((await json("/v1/wallets/0xnope/trades")).status).toBe(400);
    expect((await json(`/v1/wallets/${W2}/trades?limit=101`)).status).toBe(400);
  });
});

describe("GET /v1/trades/{txHash}", () => {
  it("returns the fill with the lowest log index", async () => {
    const { status, body } = await json(`/v1/trades/${tx(5).toUpperCase().replace("0X", "0x")}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ tx_hash: tx(5), log_index: 1, usd_value: 5 });
  });
  it("404 for an unknown hash, 400 for a malformed one", async () => {
    expect((await json(`/v1/trades/0x${"f".repeat(64)}`)).status).toBe(404);
    const bad = await json("/v1/trades/0x1234");
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("txHash");
  });
});

describe("GET /v1/trades with min_bet of 1,000 USD or more (fills_big_by_time)", () => {
  let b: TestApp;
  let bigKey: string;
  /** Every fill in insertion (id) order, to compute what a page must hold. */
  const fills: { usd: number; ts: number; side: "BUY" | "SELL" }[] = [];
  // Around the threshold in both stored forms: exact millionths are INTEGERs, 1000.0000001 and
  // 2e10 are REALs (sql/0010).
  const amounts = [999.999999, 1000, 1000.0000001, 1500, 999.5, 2e10, 4200.25, 12, 1000.000001];

  beforeAll(() => {
    b = createTestApp();
    const w = b.db.writer;
    w.prepare(
      "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (1, 'm', 'M?', 'crypto', ?)",
    ).run(C1);
    const insert = w.prepare(
      "INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts) VALUES (?, 0, ?, 1, 'YES', ?, 0.5, 1, ?, ?)",
    );
    for (let i = 0; i < 90; i++) {
      const usd = amounts[i % amounts.length]!;
      // Pairs of fills share a moment, so pages break inside a tie on ts.
      const ts = T0 + Math.floor(i / 2) * HOUR;
      const side = i % 3 === 0 ? "SELL" : "BUY";
      insert.run(tx(1000 + i), i % 2 === 0 ? W1 : W2, side, usd, ts);
      fills.push({ usd, ts, side });
    }
    bigKey = b.key("terminal");
  });
  afterAll(() => b.close());

  async function pages(path: string) {
    const seen: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const res = await b.get(
        cursor ? `${path}&cursor=${encodeURIComponent(cursor)}` : path,
        bigKey,
      );
      expect(res.status, path).toBe(200);
      const body = (await res.json()) as Record<string, any>;
      seen.push(...body.data);
      cursor = body.next_cursor;
    } while (cursor);
    return seen;
  }

  it.each([
    [1000, undefined],
    [1000.0000001, undefined],
    [1200, undefined],
    [1000, "BUY"],
    [1e10, undefined],
  ] as const)(
    "min_bet=%s side=%s: every matching fill once, newest first",
    async (minBet, side) => {
      const start = T0 + 3 * HOUR;
      const end = T0 + 40 * HOUR;
      const rows = await pages(
        `/v1/trades?start=${start}&end=${end}&min_bet=${minBet}${side ? `&side=${side}` : ""}&limit=3`,
      );
      // Newest first; within a moment, the later fill (inserted later, so a higher id) first.
      const expected = fills
        .map((f, order) => ({ ...f, order }))
        .filter(
          (f) => f.usd >= minBet && f.ts >= start && f.ts <= end && (!side || f.side === side),
        )
        .sort((x, y) => y.ts - x.ts || y.order - x.order)
        .map((f) => [f.ts, f.usd]);
      expect(expected.length).toBeGreaterThan(2);
      expect(rows.map((r) => [Date.parse(r.trade_timestamp), r.usd_value])).toEqual(expected);
    },
  );
});
