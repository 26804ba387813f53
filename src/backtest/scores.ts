/**
 * Proper scores, their uncertainty and calibration (docs/methodology.md, "Backtest"). Pure:
 * rows in, figures out; the bootstrap draws from a seeded generator, so a report re-runs exactly.
 */

import { Random } from "../fixtures/random";

/** Probabilities are clamped here before a logarithm, as the wins-versus-prices test clamps prices. */
export const PROB_FLOOR = 0.001;

const clampProb = (p: number) => Math.min(1 - PROB_FLOOR, Math.max(PROB_FLOOR, p));

export const brier = (p: number, y: 0 | 1) => (p - y) ** 2;

export const logLoss = (p: number, y: 0 | 1) => {
  const q = clampProb(p);
  return -(y === 1 ? Math.log(q) : Math.log(1 - q));
};

export const logit = (p: number) => {
  const q = clampProb(p);
  return Math.log(q / (1 - q));
};

export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** One scored forecast of one market at one horizon, with the price on the same row. */
export interface ScoredRow {
  market: number;
  forecast: number;
  price: number;
  outcome: 0 | 1;
}

export interface Interval {
  lo: number;
  hi: number;
}

export interface ScoreFigures {
  rows: number;
  markets: number;
  brier: number;
  logLoss: number;
  priceBrier: number;
  priceLogLoss: number;
  /** Price's Brier score minus the forecast's: positive when the forecast is better. */
  brierGain: number;
  brierGainCi: Interval;
  /** Price's log loss minus the forecast's. */
  logLossGain: number;
  logLossGainCi: Interval;
}

export const BOOTSTRAP_LEVEL = 0.95;

/**
 * Brier score and log loss of the forecast and of the price over the same rows, with 95%
 * percentile intervals of the gains from `resamples` bootstrap draws of whole markets: a
 * market's horizons share its outcome and its trades, so rows are not independent, markets are.
 */
export function scoreRows(
  rows: readonly ScoredRow[],
  resamples: number,
  seed: number,
): ScoreFigures {
  const perMarket = new Map<number, { n: number; brier: number; logLoss: number }>();
  let b = 0;
  let l = 0;
  let pb = 0;
  let pl = 0;
  for (const row of rows) {
    const fb = brier(row.forecast, row.outcome);
    const fl = logLoss(row.forecast, row.outcome);
    const xb = brier(row.price, row.outcome);
    const xl = logLoss(row.price, row.outcome);
    b += fb;
    l += fl;
    pb += xb;
    pl += xl;
    let m = perMarket.get(row.market);
    if (m === undefined) {
      m = { n: 0, brier: 0, logLoss: 0 };
      perMarket.set(row.market, m);
    }
    m.n += 1;
    m.brier += xb - fb;
    m.logLoss += xl - fl;
  }
  const n = rows.length;
  const markets = [...perMarket.values()];
  const brierDraws = new Float64Array(resamples);
  const logDraws = new Float64Array(resamples);
  const rng = new Random(seed);
  for (let r = 0; r < resamples && markets.length > 0; r += 1) {
    let count = 0;
    let sumB = 0;
    let sumL = 0;
    for (let i = 0; i < markets.length; i += 1) {
      const m = markets[rng.int(markets.length)] as { n: number; brier: number; logLoss: number };
      count += m.n;
      sumB += m.brier;
      sumL += m.logLoss;
    }
    brierDraws[r] = sumB / count;
    logDraws[r] = sumL / count;
  }
  return {
    rows: n,
    markets: markets.length,
    brier: n > 0 ? b / n : Number.NaN,
    logLoss: n > 0 ? l / n : Number.NaN,
    priceBrier: n > 0 ? pb / n : Number.NaN,
    priceLogLoss: n > 0 ? pl / n : Number.NaN,
    brierGain: n > 0 ? (pb - b) / n : Number.NaN,
    brierGainCi: markets.length > 0 ? percentileInterval(brierDraws) : NO_INTERVAL,
    logLossGain: n > 0 ? (pl - l) / n : Number.NaN,
    logLossGainCi: markets.length > 0 ? percentileInterval(logDraws) : NO_INTERVAL,
  };
}

const NO_INTERVAL: Interval = Object.freeze({ lo: Number.NaN, hi: Number.NaN });

function percentileInterval(draws: Float64Array): Interval {
  if (draws.length === 0) return NO_INTERVAL;
  const sorted = Float64Array.from(draws).sort();
  const tail = (1 - BOOTSTRAP_LEVEL) / 2;
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { lo: at(tail), hi: at(1 - tail) };
}

export interface CalibrationBin {
  /** [from, to) of forecast probability; the last bin includes 1. */
  from: number;
  to: number;
  rows: number;
  meanForecast: number | null;
  observed: number | null;
}

export interface Calibration {
  bins: CalibrationBin[];
  /** Σ rows_b / rows × |mean forecast_b − observed_b|. */
  ece: number;
}

/** Reliability per decile of forecast probability, and the expected calibration error. */
export function calibration(rows: readonly Pick<ScoredRow, "forecast" | "outcome">[]): Calibration {
  const sums = Array.from({ length: 10 }, () => ({ n: 0, f: 0, y: 0 }));
  for (const row of rows) {
    const bin = sums[Math.min(9, Math.max(0, Math.floor(row.forecast * 10)))] as (typeof sums)[0];
    bin.n += 1;
    bin.f += row.forecast;
    bin.y += row.outcome;
  }
  let ece = 0;
  const bins = sums.map((s, i) => {
    if (s.n > 0) ece += (s.n / rows.length) * Math.abs(s.f / s.n - s.y / s.n);
    return {
      from: i / 10,
      to: (i + 1) / 10,
      rows: s.n,
      meanForecast: s.n > 0 ? s.f / s.n : null,
      observed: s.n > 0 ? s.y / s.n : null,
    };
  });
  return { bins, ece: rows.length > 0 ? ece : Number.NaN };
}

/** The blend's prior: β ~ Normal(0, 10²), which keeps it finite on little or flat training data. */
export const BLEND_PRIOR_SD = 2;
export const BLEND_MIN_TRAINING_MARKETS = 50;

export interface BlendTraining {
  price: number;
  /** Smart money's divergence from the price (forecast − price), 0 when it had no forecast. */
  divergence: number;
  outcome: 0 | 1;
}

/**
 * β of the price-anchored blend logit(p′) = logit(price) + β × divergence: the maximum a
 * posteriori estimate under the prior above (Newton's method on a concave objective). A β of 0
 * is the price itself, so a fitted β away from 0 says the divergence carried information on the
 * training markets.
 */
export function fitBlend(training: readonly BlendTraining[]): number {
  let beta = 0;
  const precision = 1 / BLEND_PRIOR_SD ** 2;
  for (let iteration = 0; iteration < 50; iteration += 1) {
    let gradient = -precision * beta;
    let curvature = precision;
    for (const t of training) {
      if (t.divergence === 0) continue;
      const q = sigmoid(logit(t.price) + beta * t.divergence);
      gradient += (t.outcome - q) * t.divergence;
      curvature += q * (1 - q) * t.divergence ** 2;
    }
    const step = gradient / curvature;
    beta += step;
    if (Math.abs(step) < 1e-10) break;
  }
  return beta;
}

/** The blended probability; exactly the price when smart money did not diverge or β is 0. */
export const blendOf = (price: number, divergence: number, beta: number) =>
  divergence === 0 || beta === 0 ? price : sigmoid(logit(price) + beta * divergence);
