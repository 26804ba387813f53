import { describe, expect, it } from "vitest";
import {
  blendOf,
  brier,
  calibration,
  fitBlend,
  logLoss,
  type ScoredRow,
  scoreRows,
} from "../../src/backtest/scores";

describe("scores", () => {
  it("Brier score and log loss, by hand", () => {
    expect(brier(0.7, 1)).toBeCloseTo(0.09, 12);
    expect(brier(0.7, 0)).toBeCloseTo(0.49, 12);
    expect(logLoss(0.7, 1)).toBeCloseTo(-Math.log(0.7), 12);
    expect(logLoss(0.7, 0)).toBeCloseTo(-Math.log(0.3), 12);
    // Clamped at 0.001, so a certain forecast that is wrong costs log(1000), not infinity.
    expect(logLoss(0, 1)).toBeCloseTo(Math.log(1000), 12);
  });

  it("gains are the price's score minus the forecast's, with a bootstrap over markets", () => {
    const rows: ScoredRow[] = [
      { market: 1, forecast: 0.8, price: 0.6, outcome: 1 },
      { market: 1, forecast: 0.8, price: 0.6, outcome: 1 },
      { market: 2, forecast: 0.3, price: 0.4, outcome: 0 },
      { market: 3, forecast: 0.6, price: 0.5, outcome: 0 },
    ];
    const s = scoreRows(rows, 2000, 9);
    // price: 0.16, 0.16, 0.16, 0.25 → 0.1825; forecast: 0.04, 0.04, 0.09, 0.36 → 0.1325.
    expect(s.priceBrier).toBeCloseTo(0.1825, 12);
    expect(s.brier).toBeCloseTo(0.1325, 12);
    expect(s.brierGain).toBeCloseTo(0.05, 12);
    expect(s.rows).toBe(4);
    expect(s.markets).toBe(3);
    // Resampling whole markets: the smallest possible gain is market 3's alone (−0.11), the
    // largest market 1's (0.12); the interval lies inside those and is the same for a seed.
    expect(s.brierGainCi.lo).toBeGreaterThanOrEqual(-0.11 - 1e-12);
    expect(s.brierGainCi.hi).toBeLessThanOrEqual(0.12 + 1e-12);
    expect(scoreRows(rows, 2000, 9)).toStrictEqual(s);
    // Another seed draws other resamples.
    const many = Array.from({ length: 60 }, (_, i) => ({
      market: i,
      forecast: (i % 7) / 7 + 0.05,
      price: 0.5,
      outcome: (i % 3 === 0 ? 1 : 0) as 0 | 1,
    }));
    expect(scoreRows(many, 500, 1).brierGainCi).not.toStrictEqual(
      scoreRows(many, 500, 2).brierGainCi,
    );
  });

  it("calibration per decile and its expected error, by hand", () => {
    const c = calibration([
      { forecast: 0.15, outcome: 0 },
      { forecast: 0.15, outcome: 1 },
      { forecast: 0.95, outcome: 1 },
      { forecast: 1, outcome: 1 },
    ]);
    expect(c.bins[1]).toMatchObject({ rows: 2, meanForecast: 0.15, observed: 0.5 });
    expect(c.bins[9]).toMatchObject({ rows: 2, meanForecast: 0.975, observed: 1 });
    // 2/4 × |0.15 − 0.5| + 2/4 × |0.975 − 1|
    expect(c.ece).toBeCloseTo(0.5 * 0.35 + 0.5 * 0.025, 12);
  });

  it("the blend is the price without a divergence and learns the divergence's sign", () => {
    expect(blendOf(0.37, 0, 5)).toBe(0.37);
    expect(blendOf(0.37, 0.2, 0)).toBe(0.37);
    // Markets where YES won whenever smart money leaned to YES, and lost when it leaned away.
    const informed = Array.from({ length: 200 }, (_, i) => ({
      price: 0.5,
      divergence: i % 2 === 0 ? 0.2 : -0.2,
      outcome: (i % 2 === 0 ? 1 : 0) as 0 | 1,
    }));
    expect(fitBlend(informed)).toBeGreaterThan(5);
    const contrary = informed.map((t) => ({ ...t, outcome: (1 - t.outcome) as 0 | 1 }));
    expect(fitBlend(contrary)).toBeLessThan(-5);
    // No divergence anywhere: β stays at the prior's mean.
    expect(fitBlend(informed.map((t) => ({ ...t, divergence: 0 })))).toBe(0);
  });
});
