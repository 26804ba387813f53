import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type BacktestOptions,
  type BacktestResult,
  BEATS,
  DOES_NOT_BEAT,
  HEADLINE,
  runBacktest,
} from "../../src/backtest/backtest";
import { readMarkets, streamFills } from "../../src/backtest/history";
import { indexHistory } from "../../src/backtest/point-in-time";
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
