import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/fixtures/world";
import { seededTestApp, type TestApp } from "../helpers/app";

/**
 * The analytics must find what the fixture world planted (docs/fixtures.md): the small world is
 * seeded once through the real import path and refreshed, then each population is checked
 * against the read models the API serves.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
let t: TestApp;
let manifest: Manifest;
let typeOf: (address: string) => string | undefined;

beforeAll(async () => {
  ({ t, manifest } = await seededTestApp({ now: NOW }));
  const stats = t.db.writer
    .prepare("SELECT wallet_type FROM wallet_stats WHERE address = ?")
    .pluck();
  typeOf = (address) => stats.get(address) as string | undefined;
}, 120_000);
afterAll(() => t.close());

const share = (addresses: string[], test: (a: string) => boolean) =>
  addresses.filter(test).length / addresses.length;

describe("planted truth on the small world", () => {
  it("scores skilled wallets above unskilled ones (AUC >= 0.9)", () => {
    const score = t.db.writer
      .prepare("SELECT smart_money_score FROM wallet_stats WHERE address = ?")
      .pluck();
    const skilled = manifest.planted.skilled.map((a) => score.get(a) as number);
    const unskilled = manifest.planted.unskilled.map((a) => score.get(a) as number);
    expect(skilled.length).toBeGreaterThan(5);
    let wins = 0;
    for (const s of skilled) for (const u of unskilled) wins += s > u ? 1 : s === u ? 0.5 : 0;
    expect(wins / (skilled.length * unskilled.length)).toBeGreaterThanOrEqual(0.9);
  });

  it("types planted market makers and whales as such (>= 90%)", () => {
    expect(
      share(manifest.planted.market_makers, (a) => typeOf(a) === "market_maker"),
    ).toBeGreaterThanOrEqual(0.9);
    expect(share(manifest.planted.whales, (a) => typeOf(a) === "whale")).toBeGreaterThanOrEqual(
      0.9,
    );
  });

  // A signal is a lead, not a finding: the 0.8 precision bar is the investigations' (issue 6).
  // Signals also catch fresh, exchange-funded whales buying long shots, which look exactly like
  // an insider; measured precision on this world is 0.77-0.83 depending on its `now`.
  it("fires insider signals on planted insiders: wallet-level recall >= 0.8, precision >= 0.75", () => {
    const flagged = new Set(
      t.db.writer
        .prepare("SELECT DISTINCT wallet FROM signals WHERE type = 'insider'")
        .pluck()
        .all() as string[],
    );
    const insiders = manifest.planted.insiders;
    const found = insiders.filter((a) => flagged.has(a)).length;
    expect(found / insiders.length).toBeGreaterThanOrEqual(0.8);
    expect(found / flagged.size).toBeGreaterThanOrEqual(0.75);
    expect(share(insiders, (a) => typeOf(a) === "insider")).toBeGreaterThanOrEqual(0.8);
  });

  it("fires whale signals on planted whales' big trades", () => {
    const whales = new Set(manifest.planted.whales);
    const signals = t.db.writer
      .prepare("SELECT wallet FROM signals WHERE type = 'whale'")
      .pluck()
      .all() as string[];
    expect(signals.length).toBeGreaterThan(0);
    expect(signals.filter((w) => whales.has(w)).length / signals.length).toBeGreaterThanOrEqual(
      0.8,
    );
  });

  it("finds planted sybil funders as clusters, never an exchange, platform or the proxy factory", () => {
    const funders = new Set(
      t.db.writer.prepare("SELECT funder FROM sybil_clusters").pluck().all() as string[],
    );
    expect(share(manifest.planted.sybil_funders, (a) => funders.has(a))).toBeGreaterThanOrEqual(
      0.9,
    );
    expect(funders.has(manifest.planted.big_distributor)).toBe(true);
    const labelled = t.db.writer.prepare("SELECT address FROM labels").pluck().all() as string[];
    for (const address of labelled) expect(funders.has(address.toLowerCase())).toBe(false);
  });

  it("guards the big distributor's and the proxy factory's graphs and caps the cluster at 500", async () => {
    const key = t.key("terminal_pro");
    const big = manifest.planted.big_distributor;
    const graph = await t.get(`/v1/clusters/${big}/graph`, key);
    expect(graph.status).toBe(400);
    const factory = await t.get(
      "/v1/clusters/0xaB45c5A4B0c941a2F231C04C3f49182e1A254052/graph",
      key,
    );
    expect(factory.status).toBe(400);
    const id = t.db.writer
      .prepare("SELECT id FROM sybil_clusters WHERE funder = ?")
      .pluck()
      .get(big) as string;
    const detail = (await (await t.get(`/v1/clusters/by-id/${id}`, key)).json()) as {
      members: unknown[];
      members_total: number;
      cluster_stats: { member_count: number };
    };
    expect(detail.cluster_stats.member_count).toBeGreaterThan(500);
    expect(detail.members).toHaveLength(500);
    expect(detail.members_total).toBe(detail.cluster_stats.member_count + 1);
  });

  it("surfaces planted insiders in investigations (recall and precision >= 0.8)", () => {
    const investigated = new Set(
      t.db.writer
        .prepare(
          `SELECT DISTINCT iw.address FROM investigation_wallets iw
             JOIN investigations i ON i.id = iw.investigation_id
            WHERE i.status = 'open' AND i.active = 1`,
        )
        .pluck()
        .all() as string[],
    );
    const insiders = manifest.planted.insiders;
    const found = insiders.filter((a) => investigated.has(a)).length;
    expect(investigated.size).toBeGreaterThan(0);
    expect(found / insiders.length).toBeGreaterThanOrEqual(0.8);
    expect(found / investigated.size).toBeGreaterThanOrEqual(0.8);
  });

  it("makes sentiment follow the planted whales' 30-day flow", () => {
    const markets = t.db.writer
      .prepare(
        `SELECT market_id, sentiment, yes_ratio FROM market_stats
          WHERE sentiment IN ('bullish', 'bearish') ORDER BY market_id`,
      )
      .all() as { market_id: number; sentiment: string; yes_ratio: number }[];
    expect(markets.length).toBeGreaterThan(3);
    const flow = t.db.writer.prepare(
      `SELECT sum(CASE WHEN (outcome = 'YES') = (side = 'BUY') THEN usd_value ELSE -usd_value END) AS net
         FROM trades WHERE market_id = ? AND ts > ? AND wallet IN (SELECT value FROM json_each(?))`,
    );
    const whaleList = JSON.stringify(
      t.db.writer
        .prepare("SELECT address FROM wallet_stats WHERE total_volume > 50000")
        .pluck()
        .all() as string[],
    );
    let agree = 0;
    for (const m of markets) {
      const { net } = flow.get(m.market_id, NOW - 30 * 86_400_000, whaleList) as { net: number };
      if (net > 0 === (m.sentiment === "bullish")) agree += 1;
    }
    expect(agree / markets.length).toBeGreaterThanOrEqual(0.8);
  });
});
