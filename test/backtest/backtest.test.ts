import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type BacktestOptions,
  type BacktestResult,
  BEATS,
  DOES_NOT_BEAT,
  HEADLINE,
  runBacktest,
} from "../../src/backtest/backtest";
import { parseCases, replayCases } from "../../src/backtest/cases";
import { forecastAt } from "../../src/backtest/forecasts";
import { readMarkets, streamFills } from "../../src/backtest/history";
import { indexHistory } from "../../src/backtest/point-in-time";
import { refreshReadModels } from "../../src/refresh/refresh";
import { createTestApp, type TestApp } from "../helpers/app";
import { generateWorld, importWorld, type WorldSpec } from "./world";

const DAY = 86_400_000;

let apps: TestApp[] = [];
beforeEach(() => {
  apps = [];
});
afterEach(() => {
  for (const t of apps) t.close();
});

/** Imports the lines into a fresh database and runs the backtest over them. */
async function backtestOf(
  lines: Record<string, unknown>[],
  options: Partial<BacktestOptions> & { to: number },
): Promise<BacktestResult> {
  const t = createTestApp();
  apps.push(t);
  await importWorld(t, lines);
  const index = indexHistory(streamFills(t.db.reader), readMarkets(t.db.reader));
  return runBacktest(index, {
    horizonsMs: [7 * DAY, DAY],
    from: null,
    band: [0.05, 0.95],
    seed: 1,
    resamples: 1000,
    ...options,
  });
}

async function worldBacktest(spec: WorldSpec) {
  const world = generateWorld(spec);
  const result = await backtestOf(world.lines, { to: world.end });
  return { world, result };
}

const forecast = (result: BacktestResult, name: string) =>
  result.forecasts.find((f) => f.forecast === name)!;

describe("a world with no skill", () => {
  it("does not beat the price, its interval covering zero, in at least 19 of 20 seeds", async () => {
    let honest = 0;
    for (let seed = 1; seed <= 20; seed += 1) {
      const { result } = await worldBacktest({ seed, markets: 120, noise: 0.05, skill: "none" });
      const head = forecast(result, HEADLINE);
      expect(result.markets).toBeGreaterThan(100);
      if (
        result.headline.verdict === DOES_NOT_BEAT &&
        head.brierGainCi.lo <= 0 &&
        head.brierGainCi.hi >= 0
      ) {
        honest += 1;
      }
    }
    expect(honest).toBeGreaterThanOrEqual(19);
  }, 120_000);
});

describe("a world with planted skill", () => {
  it("recovers a Brier gain whose interval excludes zero and covers the planted effect", async () => {
    const { world, result } = await worldBacktest({
      seed: 7,
      markets: 300,
      noise: 0.15,
      skill: "planted",
    });
    const implied = forecast(result, "yes_implied_prob");
    // The planted effect: a forecast equal to the truth q gains (p − q)² in expectation over a
    // price p, per forecast; averaged over the forecasts the backtest scored.
    const truth = new Map(world.markets.map((m) => [m.slug, m.truth]));
    const scored = result.rows.filter((r) => r.yes_implied_prob !== null);
    const planted =
      scored.reduce((sum, r) => sum + (r.price - truth.get(r.slug)!) ** 2, 0) / scored.length;
    expect(implied.rows).toBe(scored.length);
    expect(implied.verdict).toBe(BEATS);
    expect(implied.brierGainCi.lo).toBeGreaterThan(0);
    expect(planted).toBeGreaterThanOrEqual(implied.brierGainCi.lo);
    expect(planted).toBeLessThanOrEqual(implied.brierGainCi.hi);
    // The whales' share at cost is the truth they were planted with.
    for (const r of scored.slice(0, 20)) {
      expect(r.yes_implied_prob!).toBeCloseTo(truth.get(r.slug)!, 6);
    }
    // The walk-forward blend learns a positive weight on the divergence once it has history.
    expect(result.rows.at(-1)!.beta_yes_implied).toBeGreaterThan(0);
    expect(forecast(result, HEADLINE).brierGain).toBeGreaterThan(0);
  }, 60_000);
});

describe("no look-ahead", () => {
  it("changing or deleting every trade, resolution and transfer after a cutoff leaves the forecasts up to it bit-for-bit unchanged", async () => {
    const world = generateWorld({
      seed: 11,
      markets: 160,
      noise: 0.15,
      skill: "planted",
      insiderMarkets: 3,
    });
    const before = await backtestOf(world.lines, { to: world.end });
    const cutoffs = before.rows.map((r) => r.cutoff).sort((a, b) => a - b);
    const cutoff = cutoffs[Math.floor(cutoffs.length * 0.6)]!;
    // Markets with a forecast at or before the cutoff keep their resolution time (it defines
    // their cutoffs) but their outcome is flipped; every other resolution after it is deleted.
    const tested = new Set(before.rows.filter((r) => r.cutoff <= cutoff).map((r) => r.slug));
    let n = 0;
    const changed = world.lines.flatMap((line) => {
      n += 1;
      if (line.type === "trade" && (line.timestamp as number) >= cutoff) {
        if (n % 2 === 0) return [];
        const price = line.outcome === "YES" ? 0.97 : 0.03;
        return [{ ...line, price, size: 5000, usd_value: 5000 * price }];
      }
      if (line.type === "transfer" && (line.timestamp as number) >= cutoff) return [];
      if (line.type === "market" && (line.resolved_at as number) >= cutoff) {
        if (tested.has(line.slug as string)) {
          return [{ ...line, resolved_outcome: line.resolved_outcome === "YES" ? "NO" : "YES" }];
        }
        const { resolved_outcome: _o, resolved_at: _a, ...open } = line;
        return [open];
      }
      return [line];
    });
    const after = await backtestOf(changed, { to: world.end });
    const forecasts = (result: BacktestResult) =>
      result.rows
        .filter((r) => r.cutoff <= cutoff)
        .map(({ outcome: _outcome, ...r }) => r)
        .sort((a, b) => a.cutoff - b.cutoff || a.market_id - b.market_id);
    const kept = forecasts(before);
    expect(kept.length).toBeGreaterThan(100);
    expect(kept.some((r) => r.beta_yes_implied !== 0)).toBe(true);
    expect(kept.some((r) => r.smart_money_prob !== null)).toBe(true);
    // toStrictEqual compares numbers with Object.is: bit for bit.
    expect(forecasts(after)).toStrictEqual(kept);
    // The change did reach the backtest: later forecasts moved.
    expect(after.rows.length).toBeLessThan(before.rows.length);
  }, 60_000);
});

describe("as the product computes it", () => {
  it("a forecast at a cutoff after every fill equals what the API serves after a refresh", async () => {
    const world = generateWorld({ seed: 5, markets: 90, noise: 0.15, skill: "planted" });
    // The last ten markets stay open, so the served figures are about a live market.
    const open = new Set(world.markets.slice(-10).map((m) => m.slug));
    const lines = world.lines.map((line) => {
      if (line.type !== "market" || !open.has(line.slug as string)) return line;
      const { resolved_outcome: _o, resolved_at: _a, ...rest } = line;
      return rest;
    });
    const t = createTestApp();
    apps.push(t);
    await importWorld(t, lines);
    const lastTrade = Math.max(
      ...lines.filter((l) => l.type === "trade").map((l) => l.timestamp as number),
    );
    const now = lastTrade + 1;
    t.clock.set(now);
    refreshReadModels(t.db, now);
    t.app.readModelsChanged();
    const key = t.key("terminal_pro");
    const index = indexHistory(streamFills(t.db.reader), readMarkets(t.db.reader));
    let compared = 0;
    for (const market of index.markets.filter((m) => open.has(m.slug))) {
      const mine = forecastAt(index, market.id, now);
      const signal = (await (await t.get(`/v1/signals/market/${market.slug}`, key)).json()) as any;
      const analysis = (await (
        await t.get(`/v1/analyze/market/${market.slug}`, key)
      ).json()) as any;
      expect(mine.price).toBe(analysis.market_price);
      expect(mine.yesImpliedProb).toBeCloseTo(signal.smart_money_probability.yes_implied_prob, 12);
      expect(mine.smartMoneyProb).toBeCloseTo(analysis.smart_money_prob, 12);
      expect(mine.sampleWallets).toBe(analysis.sample_wallets);
      if (mine.smartMoneyProb !== null && mine.yesImpliedProb !== null) compared += 1;
    }
    expect(compared).toBeGreaterThanOrEqual(5);
  }, 60_000);
});

describe("case replay", () => {
  it("names the planted insiders and a positive lead time", async () => {
    const world = generateWorld({
      seed: 3,
      markets: 40,
      noise: 0.05,
      skill: "none",
      insiderMarkets: 3,
    });
    const t = createTestApp();
    apps.push(t);
    await importWorld(t, world.lines);
    const planted = world.markets.filter((m) => m.newsAt !== null);
    const cases = parseCases(
      planted
        .map((m) => JSON.stringify({ market: m.slug, news_at: new Date(m.newsAt!).toISOString() }))
        .join("\n"),
      "cases.jsonl",
    );
    const replays = replayCases(t.db.reader, cases);
    expect(replays).toHaveLength(3);
    for (const [i, replay] of replays.entries()) {
      const m = planted[i]!;
      expect(replay.found).toBe(true);
      expect(replay.first_signal).not.toBeNull();
      expect(new Set(replay.wallets)).toEqual(new Set(m.insiders));
      expect(replay.lead_time_hours!).toBeGreaterThan(24);
    }
  });

  it("refuses a malformed cases line, naming it", () => {
    expect(() =>
      parseCases('{"market":"a","news_at":"2026-01-01"}\n{"market":"b"}', "c.jsonl"),
    ).toThrow(/^c\.jsonl:2: news_at /);
    expect(() => parseCases("not json", "c.jsonl")).toThrow("c.jsonl:1: not JSON");
    expect(() => parseCases("", "c.jsonl")).toThrow("c.jsonl: no cases");
  });
});
