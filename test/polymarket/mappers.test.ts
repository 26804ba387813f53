import { describe, expect, it } from "vitest";
import {
  mapActivity,
  mapDataTrade,
  mapLeaderboardEntry,
  mapPosition,
  openPositionsPnl,
  SYNTHETIC_LOG_INDEX_BASE,
  syntheticLogIndex,
} from "../../src/ingest/polymarket/data-api";
import { knownCategory, mapGammaMarket } from "../../src/ingest/polymarket/gamma";
import { parseUpstreamTime } from "../../src/ingest/polymarket/records";
import {
  realActivity,
  realGammaCaptures,
  realLeaderboard,
  realPositions,
  realTrades,
} from "../fixtures-polymarket/payloads";

const ok = <T>(result: { ok: true; value: T } | { ok: false; reason: string }): T => {
  if (!result.ok) throw new Error(result.reason);
  return result.value;
};

describe("Gamma markets (real BTC 5-minute captures)", () => {
  const captures = realGammaCaptures();

  it("maps the first market field by field: Up/Down names, YES resolution, string-encoded arrays", () => {
    const capture = captures[0]!;
    const m = ok(mapGammaMarket(capture.raw));
    expect(m.market).toEqual({
      slug: "btc-updown-5m-1784850900",
      title: "Bitcoin Up or Down - July 23, 7:55PM-8:00PM ET",
      category: null,
      condition_id: "0x11ba5a5ab05573dee22a32b4c5bec06f035b8660eed912fb134e7215f46bf537",
      end_date: Date.parse("2026-07-24T00:00:00Z"),
      created_at: Date.parse("2026-07-23T00:02:08.939Z"),
      resolved_outcome: "YES",
      // closedTime "2026-07-24 00:00:16+00" (Postgres text) is when it resolved.
      resolved_at: Date.parse("2026-07-24T00:00:16Z"),
    });
    expect(m.outcomeNames).toEqual(["Up", "Down"]);
    expect(m.tokens).toEqual(capture.token_ids);
  });

  it("maps a market that resolved to its second outcome (Down) as NO", () => {
    const capture = captures.find((c) => c.outcome_prices[1] === "1")!;
    const m = ok(mapGammaMarket(capture.raw));
    expect(m.market.resolved_outcome).toBe("NO");
    expect(m.outcomeNames[1]).toBe("Down");
    expect(m.tokens![1]).toBe(capture.token_ids[1]);
  });

  it("agrees with the capturer's own parse on all 292 markets", () => {
    expect(captures).toHaveLength(292);
    for (const capture of captures) {
      const m = ok(mapGammaMarket(capture.raw));
      expect(m.market.condition_id).toBe(capture.condition_id.toLowerCase());
      expect(m.market.slug).toBe(capture.slug);
      expect(m.tokens).toEqual(capture.token_ids);
      const winner = capture.outcome_prices.indexOf("1");
      expect(m.market.resolved_outcome).toBe(
        capture.resolved ? (winner === 0 ? "YES" : "NO") : null,
      );
      // The capturer read each window's end from elsewhere; Gamma's endDate must agree.
      expect(m.market.end_date).toBe(capture.end_sec * 1000);
    }
    const outcomes = new Set(
      captures.map((c) => ok(mapGammaMarket(c.raw)).market.resolved_outcome),
    );
    expect(outcomes).toEqual(new Set(["YES", "NO"]));
  });

  it("is not resolved while open, nor on a 50/50 close", () => {
    const raw = captures[0]!.raw;
    expect(ok(mapGammaMarket({ ...raw, closed: false })).market.resolved_outcome).toBeNull();
    const split = ok(mapGammaMarket({ ...raw, outcomePrices: '["0.5", "0.5"]' })).market;
    expect(split.resolved_outcome).toBeNull();
    expect(split.resolved_at).toBeNull();
  });

  it("takes the category from the market's event, then tags, else keeps the source text", () => {
    const raw = captures[0]!.raw;
    const category = (extra: object) => ok(mapGammaMarket({ ...raw, ...extra })).market.category;
    expect(category({ events: [{ category: "Crypto" }] })).toBe("crypto");
    expect(category({ events: [{ category: "Weather", tags: [{ label: "Pop Culture" }] }] })).toBe(
      "culture",
    );
    expect(category({ tags: [{ label: "Breaking News", slug: "breaking-news" }] })).toBe(
      "breaking-news",
    );
    expect(category({ events: [{ category: "Weather" }] })).toBe("weather");
    expect(category({ category: "US-current-affairs" })).toBe("us-current-affairs");
    expect(knownCategory("Economy")).toBe("economics");
    expect(knownCategory("NBA")).toBe("sports");
    expect(knownCategory("Elections")).toBe("politics");
  });

  it("refuses a malformed market with a reason that names the record and the field", () => {
    const raw = captures[0]!.raw;
    const notJson = mapGammaMarket({ ...raw, clobTokenIds: "[1, 2" });
    expect(notJson.ok).toBe(false);
    if (!notJson.ok) {
      expect(notJson.reason).toContain("market id 3047949, slug btc-updown-5m-1784850900");
      expect(notJson.reason).toContain("clobTokenIds");
    }
    const three = mapGammaMarket({ ...raw, outcomes: '["A", "B", "C"]' });
    expect(three.ok).toBe(false);
    if (!three.ok) expect(three.reason).toMatch(/outcomes: must list exactly two outcome names/);
    const noCondition = mapGammaMarket({ ...raw, conditionId: undefined });
    expect(noCondition.ok).toBe(false);
    if (!noCondition.ok) expect(noCondition.reason).toContain("conditionId: missing");
  });

  it("reads Gamma's time formats", () => {
    expect(parseUpstreamTime("2026-07-24 00:00:16+00")).toBe(Date.parse("2026-07-24T00:00:16Z"));
    expect(parseUpstreamTime("2026-07-23T00:02:08.939464Z")).toBe(
      Date.parse("2026-07-23T00:02:08.939Z"),
    );
    expect(parseUpstreamTime("2026-07-24")).toBe(Date.parse("2026-07-24T00:00:00Z"));
    expect(parseUpstreamTime("2026-07-24T02:00:00+02:00")).toBe(Date.parse("2026-07-24T00:00:00Z"));
    expect(parseUpstreamTime("yesterday")).toBeUndefined();
  });
});

describe("data API /trades (real rows)", () => {
  const rows = realTrades();

  it("maps a NO buy field by field, seconds to ms, usd = price × size", () => {
    const t = ok(mapDataTrade(rows[0]));
    expect(t).toEqual({
      tx_hash: "0x08ca97f515b68442551056509ad20022fe2442986d971a6f9321d286bd39dd8f",
      log_index: syntheticLogIndex(
        "0x08ca97f515b68442551056509ad20022fe2442986d971a6f9321d286bd39dd8f",
        "36187795093008220558219256261729424135850137511571634448544248306719357578130",
        "BUY",
        "0xac482f27ac3d1144ca4f778af405eb5cac5d2feb",
      ),
      wallet: "0xac482f27ac3d1144ca4f778af405eb5cac5d2feb",
      condition_id: "0xace3c72c24fccb6731433483ece41c780432d84850edccd5a6bf3147ccea62a9",
      asset: "36187795093008220558219256261729424135850137511571634448544248306719357578130",
      outcome: "NO",
      side: "BUY",
      price: 0.968534758,
      size: 30974.624038,
      usd_value: 0.968534758 * 30974.624038,
      ts: 1_784_327_295_000,
      slug: "will-the-us-confirm-that-aliens-exist-by-september-30-396",
      title: "Will the US confirm that aliens exist by September 30?",
    });
  });

  it("maps a team name at outcome index 0 to YES, and a SELL", () => {
    const cardinals = ok(mapDataTrade(rows[1]));
    expect(cardinals).toMatchObject({ outcome: "YES", side: "BUY", size: 40000, price: 0.48 });
    const sell = ok(mapDataTrade(rows[3]));
    expect(sell).toMatchObject({
      side: "SELL",
      outcome: "YES",
      wallet: "0x6d20c35f65d9899b6d6b74f8466e824580f9a165",
      usd_value: 64824.24 * 0.999,
    });
  });

  it("gives each fill a stable synthetic log index above every real one", () => {
    const indexes = rows.map((r) => ok(mapDataTrade(r)).log_index);
    expect(indexes).toEqual(rows.map((r) => ok(mapDataTrade(r)).log_index));
    for (const i of indexes) {
      expect(i).toBeGreaterThanOrEqual(SYNTHETIC_LOG_INDEX_BASE);
      expect(i).toBeLessThan(2 ** 32);
    }
    // Another side (or wallet) in the same transaction is another fill.
    const row = rows[0]!;
    expect(ok(mapDataTrade({ ...row, side: "SELL" })).log_index).not.toBe(indexes[0]);
    // Case in the hash or wallet does not change the key.
    expect(
      ok(
        mapDataTrade({
          ...row,
          proxyWallet: (row.proxyWallet as string).toUpperCase().replace("0X", "0x"),
        }),
      ).log_index,
    ).toBe(indexes[0]);
  });

  it("refuses a malformed record naming it and every bad field", () => {
    const bad = mapDataTrade({ ...rows[2], price: 1.5, side: "HOLD" });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.reason).toContain(
        "transactionHash 0xf877479746c0a84f0b2d357b0d9f4db01ed54125767c0a2d083a65e5d23ec489",
      );
      expect(bad.reason).toContain("price: must be between 0 and 1");
      expect(bad.reason).toContain('side: must be "BUY" or "SELL"');
    }
    const millis = mapDataTrade({ ...rows[2], timestamp: 1_784_326_773_000 });
    expect(millis.ok).toBe(false);
    if (!millis.ok) expect(millis.reason).toContain("looks like milliseconds");
  });
});

describe("data API /activity (real rows)", () => {
  it("turns TRADE items into fills and counts the other types as skipped", () => {
    const items = realActivity().map((raw) => ok(mapActivity(raw)));
    const trades = items.flatMap((i) => (i.kind === "trade" ? [i.trade] : []));
    const skipped: Record<string, number> = {};
    for (const i of items) if (i.kind === "skipped") skipped[i.type] = (skipped[i.type] ?? 0) + 1;
    expect(trades).toHaveLength(42);
    expect(skipped).toEqual({ REWARD: 4, REDEEM: 2, MAKER_REBATE: 1, TAKER_REBATE: 1 });
    const spain = trades[0]!;
    expect(spain).toMatchObject({
      tx_hash: "0x85ba8e5cc2f63b7317d10a16475e6ff47a4ee4761c9a47a7642719282c4490aa",
      wallet: "0x09b428f7c2b469786286214aa5c90dd9015f7320",
      condition_id: "0xecba7b1db1c698ab73b3572abfcde327a02b5112676144e049edcc1e1e0f5b0b",
      outcome: "NO",
      side: "BUY",
      size: 402482.85,
      price: 0.6542489661,
      ts: 1_784_059_201_000,
    });
    // usdcSize (267,876.22 here) is not the notional at the fill price; both feeds use price × size.
    expect(spain.usd_value).toBeCloseTo(402482.85 * 0.6542489661, 6);
  });

  it("skips SPLIT, MERGE and CONVERSION items even without trade fields", () => {
    for (const type of ["SPLIT", "MERGE", "CONVERSION", "REDEEM"]) {
      expect(mapActivity({ type, outcomeIndex: 999, side: "" })).toEqual({
        ok: true,
        value: { kind: "skipped", type },
      });
    }
  });
});

describe("data API leaderboard and positions (real rows)", () => {
  it("maps leaderboard rows to platform name and PnL as of the fetch", () => {
    const rows = realLeaderboard();
    const asOf = Date.parse("2026-07-18T00:00:00Z");
    const wallets = rows.map((r) => ok(mapLeaderboardEntry(r, asOf)));
    expect(wallets).toHaveLength(50);
    expect(wallets[0]).toEqual({
      address: "0x09b428f7c2b469786286214aa5c90dd9015f7320",
      platform_name: "DEEDDIT",
      platform_pnl: 8052184.542897382,
      platform_pnl_as_of: asOf,
      created_at: null,
    });
    // Polymarket's placeholder "<address>-<digits>" is no name.
    expect(rows[11]!.userName).toMatch(/^0x2c335066/i);
    expect(wallets[11]!.platform_name).toBeNull();
    expect(wallets[11]!.platform_pnl).toBe(1657585.546938474);
  });

  it("maps positions; their cashPnl sums to the open positions' PnL only", () => {
    const positions = realPositions().map((r) => ok(mapPosition(r)));
    expect(positions[0]).toEqual({
      wallet: "0x09b428f7c2b469786286214aa5c90dd9015f7320",
      condition_id: "0x0f5e01cf1cabb6c49e424f230ca77a2ccd3e1ac63b31ae03ef749ac2bde7fa0e",
      asset: "866370305411260885620344443432925550941005016614412438009174244566837236043",
      outcome: "YES",
      size: 2251963.1237,
      avg_price: 0.5086,
      cur_price: 0,
      initial_value: 1145352.9486,
      current_value: 0,
      cash_pnl: -1145352.9486,
      realized_pnl: 0,
      redeemable: true,
    });
    expect(openPositionsPnl(positions)).toBeCloseTo(-1145352.9486 - 226519.48, 6);
    // The same wallet tops the all-time leaderboard with a large positive PnL: the two figures
    // measure different things, and the leaderboard's is the wallet's.
    expect(realLeaderboard()[0]!.proxyWallet).toBe(positions[0]!.wallet);
  });
});
