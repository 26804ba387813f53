import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PolymarketOptions } from "../../src/ingest/polymarket/context";
import { POLYMARKET_LABELS } from "../../src/ingest/polymarket/contracts";
import { runPolymarketLoop, runPolymarketRound } from "../../src/ingest/polymarket/round";
import { STATE_KEYS } from "../../src/ingest/polymarket/state";
import {
  feedMarkets,
  MISSING_FROM_GAMMA,
  type Raw,
  realGammaMarkets,
  realLeaderboard,
  replayFeed,
} from "../fixtures-polymarket/payloads";
import { type ApiServer, startApiServer } from "../fixtures-polymarket/servers";
import { count, type Harness, harness, stateOf, storedTrades } from "./harness";

/**
 * The data API source end to end against a loopback replay of the real payloads: 47 real fills
 * (the /trades rows and /activity's TRADE rows), Gamma markets for them, the real leaderboard.
 */

let server: ApiServer;
const open: Harness[] = [];
const since = Date.parse("2026-07-14T00:00:00Z");

beforeEach(async () => {
  server = await startApiServer({
    markets: [...feedMarkets(), ...realGammaMarkets()],
    trades: replayFeed(),
    leaderboard: realLeaderboard(),
  });
});
afterEach(async () => {
  await server.close();
  for (const h of open.splice(0)) h.t.close();
});

function fresh(): Harness {
  const h = harness();
  open.push(h);
  return h;
}

const options = (extra: Partial<PolymarketOptions> = {}): PolymarketOptions => ({
  dataUrl: server.url,
  gammaUrl: server.url,
  rpcUrl: null,
  since,
  tradesPageSize: 10,
  marketsPageSize: 100,
  leaderboardDepth: 100,
  ...extra,
});

describe("data API source", () => {
  it("stores every fill once, with its market, category, resolution and the wallets' facts", async () => {
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.ok).toBe(true);
    const s = result.summary;
    expect(s).toMatchObject({
      source: "data-api",
      trades_new: 47,
      trades_pages: 5,
      // One page newest first (markets created since the last round), then the full listing.
      markets_pages: 4,
      wallets_new: 50,
      covered_to: "2026-07-17T22:28:15.000Z",
      lag_seconds: Math.round((Date.parse("2026-07-18T00:00:00Z") - 1_784_327_295_000) / 1000),
      // The replayed feed starts later than `since`, and the round says so.
      gap: "the trades feed holds nothing older than 2026-07-14T18:57:07.000Z: nothing was read from 2026-07-14T00:00:00.000Z to then",
    });
    expect(count(h.t, "trades")).toBe(47);
    // 297 Gamma markets plus one made from a trade record (Gamma did not know it).
    expect(count(h.t, "markets")).toBe(298);

    const trades = storedTrades(h.t);
    expect(trades.find((t) => t.tx_hash.startsWith("0x08ca97f5"))).toMatchObject({
      wallet: "0xac482f27ac3d1144ca4f778af405eb5cac5d2feb",
      condition_id: "0xace3c72c24fccb6731433483ece41c780432d84850edccd5a6bf3147ccea62a9",
      outcome: "NO",
      side: "BUY",
      price: 0.968534758,
      size: 30974.624038,
      ts: 1_784_327_295_000,
    });

    const market = (condition: string) =>
      h.t.db.reader
        .prepare(
          "SELECT slug, title, category, resolved_outcome, resolved_at FROM markets WHERE condition_id = ?",
        )
        .get(condition) as Record<string, unknown>;
    expect(market("0xad0785e454a8b0d96171b924ed7e1aa158ce87892ec81a44a0387cccdf92a3a7")).toEqual({
      slug: "mlb-stl-ari-2026-07-17",
      title: "St. Louis Cardinals vs. Arizona Diamondbacks",
      category: "sports",
      resolved_outcome: "NO",
      resolved_at: Date.parse("2026-07-18T04:00:00Z"),
    });
    expect(
      market("0xace3c72c24fccb6731433483ece41c780432d84850edccd5a6bf3147ccea62a9"),
    ).toMatchObject({
      category: "culture",
      resolved_outcome: null,
    });
    expect(market(MISSING_FROM_GAMMA)).toEqual({
      slug: "atp-santill-valient-2026-07-17",
      title: "Pozoblanco: Akira Santillan vs Izan Almazan Valiente",
      category: null,
      resolved_outcome: null,
      resolved_at: null,
    });

    const deeddit = h.t.db.reader
      .prepare(
        "SELECT platform_name, platform_pnl, platform_pnl_as_of FROM wallets WHERE address = ?",
      )
      .get("0x09b428f7c2b469786286214aa5c90dd9015f7320");
    expect(deeddit).toEqual({
      platform_name: "DEEDDIT",
      platform_pnl: 8052184.542897382,
      platform_pnl_as_of: h.t.clock.now(),
    });
    expect(count(h.t, "labels")).toBe(POLYMARKET_LABELS.length);
  });

  it("hands new fills to the ingest hooks: large ones fire whale signals", async () => {
    const h = fresh();
    await runPolymarketRound(h.deps, options());
    const signals = h.t.db.reader
      .prepare(
        `SELECT s.wallet, t.usd_value FROM signals s JOIN trades t ON t.id = s.trade_id
         WHERE s.type = 'whale'`,
      )
      .all() as { wallet: string; usd_value: number }[];
    expect(signals.length).toBeGreaterThan(0);
    for (const s of signals) expect(s.usd_value).toBeGreaterThanOrEqual(10_000);
    expect(signals.map((s) => s.wallet)).toContain("0xac482f27ac3d1144ca4f778af405eb5cac5d2feb");
  });

  it("adds nothing when run again", async () => {
    const h = fresh();
    await runPolymarketRound(h.deps, options());
    const before = storedTrades(h.t);
    const again = await runPolymarketRound(h.deps, options());
    expect(again.ok).toBe(true);
    // The walk reached where the last one started: no gap this time.
    expect(again.summary).toMatchObject({
      trades_new: 0,
      markets_new: 0,
      wallets_new: 0,
      gap: null,
    });
    expect(again.summary.trades_present).toBeGreaterThan(0);
    expect(storedTrades(h.t)).toEqual(before);
  });

  it("resumes after a crash after page k: no gap, no duplicate, same rows as a clean run", async () => {
    const clean = fresh();
    await runPolymarketRound(clean.deps, options());

    const h = fresh();
    const crash = runPolymarketRound(
      h.deps,
      options({
        onPage: (p) => {
          if (p.stage === "trades" && p.page === 2) throw new Error("killed after page 2");
        },
      }),
    );
    await expect(crash).rejects.toThrow("killed after page 2");
    expect(count(h.t, "trades")).toBe(20);
    expect(stateOf(h.t, STATE_KEYS.trades)).toMatchObject({
      covered_to: null,
      walk: { next: { offset: 20 } },
    });

    const resumed = await runPolymarketRound(h.deps, options());
    expect(resumed.ok).toBe(true);
    expect(resumed.summary.trades_new).toBe(27);
    expect(storedTrades(h.t)).toEqual(storedTrades(clean.t));
  });

  it("rolls back the page whose hook failed, and redoes it on the next run", async () => {
    const h = fresh();
    let calls = 0;
    const failing = {
      ...h.deps,
      hooks: {
        onNewTrades: (
          trades: Parameters<NonNullable<typeof h.deps.hooks>["onNewTrades"] & {}>[0],
        ) => {
          if (++calls === 3) throw new Error("detector crashed");
          h.deps.hooks?.onNewTrades?.(trades);
        },
      },
    };
    await expect(runPolymarketRound(failing, options())).rejects.toThrow("detector crashed");
    expect(count(h.t, "trades")).toBe(20);
    expect(stateOf(h.t, STATE_KEYS.trades)).toMatchObject({ walk: { next: { offset: 20 } } });
    const resumed = await runPolymarketRound(h.deps, options());
    expect(resumed.summary.trades_new).toBe(27);
    expect(count(h.t, "trades")).toBe(47);
  });

  it("misses nothing when new fills arrive at the head during a walk", async () => {
    const h = fresh();
    await expect(
      runPolymarketRound(
        h.deps,
        options({
          onPage: (p) => {
            if (p.stage === "trades" && p.page === 2) throw new Error("stop");
          },
        }),
      ),
    ).rejects.toThrow("stop");
    // Three new fills shift every older one three places down the offset feed.
    const newer = arrivals(3);
    server.world.trades = [...newer, ...server.world.trades];
    const resumed = await runPolymarketRound(h.deps, options());
    expect(resumed.ok).toBe(true);
    // The resumed walk reaches back to `since` and stops; the new head is the next walk's.
    const next = await runPolymarketRound(h.deps, options());
    expect(next.summary.trades_new).toBe(3);
    expect(count(h.t, "trades")).toBe(50);
    expect(next.summary.covered_to).toBe(
      new Date((newer[0]!.timestamp as number) * 1000).toISOString(),
    );
  });

  it("quarantines a malformed record with its reason, stores the rest of its page, and never blocks it again", async () => {
    const feed = replayFeed();
    feed[12] = { ...feed[12], price: "0.5" };
    server.world.trades = feed;
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.ok).toBe(true);
    expect(result.summary.quarantined).toBe(1);
    expect(count(h.t, "trades")).toBe(feed.length - 1);
    const row = h.t.db.reader
      .prepare("SELECT stage, location, reason, record FROM ingest_quarantine")
      .get() as { stage: string; location: string; reason: string; record: string };
    expect(row.stage).toBe("tail");
    expect(row.location).toBe("data API /trades offset 10");
    expect(row.reason).toContain("record 3: trade transactionHash");
    expect(row.reason).toContain(`${feed[12]!.transactionHash}`);
    expect(row.reason).toContain("price: must be a number");
    expect(JSON.parse(row.record)).toMatchObject({ price: "0.5" });
    // Served again, it is counted but stored once, and the walk goes on past it.
    const again = await runPolymarketRound(h.deps, options());
    expect(again.ok).toBe(true);
    expect(count(h.t, "ingest_quarantine")).toBe(1);
  });

  it("follows a v2 cursor feed and resumes from its cursor", async () => {
    const clean = fresh();
    await runPolymarketRound(clean.deps, options());
    const h = fresh();
    const v2 = options({ tradesPath: "/v2/trades" });
    await expect(
      runPolymarketRound(h.deps, {
        ...v2,
        onPage: (p) => {
          if (p.stage === "trades" && p.page === 3) throw new Error("stop");
        },
      }),
    ).rejects.toThrow("stop");
    expect(stateOf(h.t, STATE_KEYS.trades)).toMatchObject({
      walk: { next: { cursor: expect.any(String) } },
    });
    const resumed = await runPolymarketRound(h.deps, v2);
    expect(resumed.ok).toBe(true);
    expect(server.requests.some((r) => r.startsWith("/v2/trades?cursor="))).toBe(true);
    expect(
      server.requests.filter((r) => r.startsWith("/v2/trades")).some((r) => r.includes("offset")),
    ).toBe(false);
    expect(storedTrades(h.t)).toEqual(storedTrades(clean.t));
  });

  it("reports a gap when the feed refuses to page back as far as asked", async () => {
    server.maxTradesOffset = 20;
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.ok).toBe(true);
    expect(count(h.t, "trades")).toBe(30);
    expect(result.summary.gap).toMatch(
      /^the trades feed refused to page past 2026-07-14T\S+: fills from 2026-07-14T00:00:00.000Z to then were not read$/,
    );
    expect(result.summary.covered_to).toBe("2026-07-17T22:28:15.000Z");
  });

  it("waits out a 429 from Gamma and carries on", async () => {
    server.faults.set("/markets", [
      { status: 429, headers: { "retry-after": "2" } },
      { status: 500 },
    ]);
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.ok).toBe(true);
    expect(h.sleep.waits.slice(0, 2)).toEqual([2000, 750]);
    expect(result.summary.retries).toBe(2);
    expect(count(h.t, "trades")).toBe(47);
  });

  it("loops until stopped, with --since used only where there is no cursor yet", async () => {
    const h = fresh();
    const stop = new AbortController();
    const loop = await runPolymarketLoop(h.deps, {
      ...options(),
      intervalMs: 30_000,
      signal: stop.signal,
      onRound: (_result, round) => {
        if (round === 2) stop.abort();
      },
    });
    expect(loop).toMatchObject({ rounds: 2, failures: 0, lastError: null });
    expect(loop.totals.trades_new).toBe(47);
    expect(loop.totals.since_ignored).toBe(false);
    expect(h.sleep.waits).toContain(30_000);
  });

  it("re-checks unresolved markets and records resolutions", async () => {
    const h = fresh();
    await runPolymarketRound(h.deps, options());
    const aliens = "0xace3c72c24fccb6731433483ece41c780432d84850edccd5a6bf3147ccea62a9";
    server.world.markets = server.world.markets.map((m) =>
      m.conditionId === aliens
        ? { ...m, closed: true, outcomePrices: '["0", "1"]', closedTime: "2026-07-19 10:00:00+00" }
        : m,
    );
    const again = await runPolymarketRound(h.deps, options({ listMarkets: false }));
    expect(again.summary.markets_resolved).toBe(1);
    expect(again.summary.resolutions_checked).toBeGreaterThan(0);
    const row = h.t.db.reader
      .prepare("SELECT resolved_outcome, resolved_at FROM markets WHERE condition_id = ?")
      .get(aliens);
    expect(row).toEqual({
      resolved_outcome: "NO",
      resolved_at: Date.parse("2026-07-19T10:00:00Z"),
    });
  });
});

/** Fills newer than the feed's head: real rows with fresh hashes and later times. */
function arrivals(n: number): Raw[] {
  const head = replayFeed()[0]!;
  return Array.from({ length: n }, (_, i) => ({
    ...head,
    transactionHash: `0x${(0xa0 + i).toString(16).padStart(2, "0").repeat(32)}`,
    timestamp: (head.timestamp as number) + 600 - i * 60,
  }));
}
