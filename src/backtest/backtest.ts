/**
 * The out-of-time backtest (docs/methodology.md, "Backtest"): for every market resolved in the
 * range, at each horizon before its resolution, the price and the product's smart-money
 * probabilities as they stood at that cutoff, scored against the outcome.
 */

import { forecastAt, priceAt } from "./forecasts";
import type { HistoryIndex } from "./point-in-time";
import {
  BLEND_MIN_TRAINING_MARKETS,
  type BlendTraining,
  blendOf,
  type Calibration,
  calibration,
  fitBlend,
  type ScoredRow,
  type ScoreFigures,
  scoreRows,
} from "./scores";

export const DEFAULT_HORIZONS_MS = [7 * 86_400_000, 86_400_000];
export const DEFAULT_BAND: [number, number] = [0.05, 0.95];
export const DEFAULT_RESAMPLES = 1000;
/** A category or horizon is reported only with at least this many markets behind it. */
export const MIN_GROUP_MARKETS = 30;

export const BEATS = "beats the price";
export const DOES_NOT_BEAT = "does not beat the price on this history";

export interface BacktestOptions {
  horizonsMs: readonly number[];
  /** Markets resolved in [from, to] (epoch ms); from null means since the first. */
  from: number | null;
  to: number;
  band: readonly [number, number];
  seed: number;
  resamples: number;
}

export const FORECASTS = [
  "yes_implied_prob",
  "smart_money_prob",
  "blend_yes_implied",
  "blend_smart_money",
] as const;
export type ForecastName = (typeof FORECASTS)[number];

/** The forecast whose verdict is the headline: the fair test of the served whale-implied probability. */
export const HEADLINE: ForecastName = "blend_yes_implied";

export interface BacktestRow {
  market_id: number;
  slug: string;
  category: string | null;
  horizon: string;
  horizon_ms: number;
  cutoff: number;
  resolved_at: number;
  outcome: 0 | 1;
  price: number;
  yes_implied_prob: number | null;
  implied_wallets: number;
  smart_money_prob: number | null;
  sample_wallets: number;
  blend_yes_implied: number;
  beta_yes_implied: number;
  blend_smart_money: number;
  beta_smart_money: number;
}

export interface ForecastScore extends ScoreFigures {
  forecast: ForecastName;
  calibration: Calibration;
  verdict: typeof BEATS | typeof DOES_NOT_BEAT;
}

export interface GroupScore {
  by: "horizon" | "category";
  key: string;
  markets: number;
  rows: number;
  /** Null when fewer than MIN_GROUP_MARKETS markets: too few to say anything. */
  forecasts: ForecastScore[] | null;
  price: { brier: number; logLoss: number; calibration: Calibration } | null;
}

export interface BacktestResult {
  options: BacktestOptions;
  rows: BacktestRow[];
  markets: number;
  /** Rows (market × horizon) left out, by reason. */
  skipped: Record<string, number>;
  skippedMarkets: number;
  price: { brier: number; logLoss: number; calibration: Calibration };
  forecasts: ForecastScore[];
  groups: GroupScore[];
  headline: { forecast: ForecastName; verdict: string; text: string };
}

export function horizonLabel(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  return `${ms / 60_000}m`;
}

/** Every row: markets resolved in range, in resolution order, at each horizon. */
export function backtestRows(
  index: HistoryIndex,
  options: Pick<BacktestOptions, "horizonsMs" | "from" | "to" | "band">,
): {
  rows: Omit<BacktestRow, `blend_${string}` | `beta_${string}`>[];
  skipped: Record<string, number>;
  skippedMarkets: number;
} {
  const resolved = index.markets
    .filter(
      (m) =>
        m.resolvedAt !== null &&
        m.resolvedOutcome !== null &&
        (options.from === null || m.resolvedAt >= options.from) &&
        m.resolvedAt <= options.to,
    )
    .sort((a, b) => (a.resolvedAt as number) - (b.resolvedAt as number) || a.id - b.id);
  const skipped: Record<string, number> = {};
  const skip = (reason: string) => {
    skipped[reason] = (skipped[reason] ?? 0) + 1;
  };
  const rows: ReturnType<typeof backtestRows>["rows"] = [];
  let skippedMarkets = 0;
  // Cutoffs in time order, so each cutoff's wallet models are computed once (point-in-time.ts).
  const tasks = resolved.flatMap((m) =>
    options.horizonsMs.map((h) => ({
      market: m,
      horizon: h,
      cutoff: (m.resolvedAt as number) - h,
    })),
  );
  tasks.sort((a, b) => a.cutoff - b.cutoff || a.market.id - b.market.id);
  const kept = new Set<number>();
  for (const { market, horizon, cutoff } of tasks) {
    const price = priceAt(index, market.id, cutoff);
    if (price === null) {
      skip("no trade before the cutoff");
      continue;
    }
    if (price < options.band[0] || price > options.band[1]) {
      skip("price outside the band");
      continue;
    }
    const f = forecastAt(index, market.id, cutoff);
    kept.add(market.id);
    rows.push({
      market_id: market.id,
      slug: market.slug,
      category: market.category,
      horizon: horizonLabel(horizon),
      horizon_ms: horizon,
      cutoff,
      resolved_at: market.resolvedAt as number,
      outcome: market.resolvedOutcome === "YES" ? 1 : 0,
      price,
      yes_implied_prob: f.yesImpliedProb,
      implied_wallets: f.impliedWallets,
      smart_money_prob: f.smartMoneyProb,
      sample_wallets: f.sampleWallets,
    });
  }
  skippedMarkets = resolved.length - kept.size;
  rows.sort(
    (a, b) =>
      a.resolved_at - b.resolved_at || a.market_id - b.market_id || b.horizon_ms - a.horizon_ms,
  );
  return { rows, skipped, skippedMarkets };
}

/**
 * Adds the blends: for each row, β fitted on the rows of the same horizon whose markets resolved
 * before the row's cutoff (walk-forward), so the blend never learns from its own market or from
 * anything that happened after its cutoff. Fewer than BLEND_MIN_TRAINING_MARKETS such markets:
 * β = 0, the price.
 */
export function withBlends(rows: ReturnType<typeof backtestRows>["rows"]): BacktestRow[] {
  const out: BacktestRow[] = [];
  const byHorizon = new Map<number, typeof rows>();
  for (const row of rows) {
    const list = byHorizon.get(row.horizon_ms);
    if (list === undefined) byHorizon.set(row.horizon_ms, [row]);
    else list.push(row);
  }
  const blended = new Map<(typeof rows)[number], Partial<BacktestRow>>();
  for (const list of byHorizon.values()) {
    // list is in resolution order; the training set of a row is a prefix of it.
    const training = {
      yes: [] as BlendTraining[],
      smart: [] as BlendTraining[],
    };
    let next = 0;
    let fittedAt = -1;
    let betas = { yes: 0, smart: 0 };
    const byCutoff = [...list].sort((a, b) => a.cutoff - b.cutoff || a.market_id - b.market_id);
    for (const row of byCutoff) {
      while (next < list.length && (list[next] as (typeof rows)[number]).resolved_at < row.cutoff) {
        const t = list[next] as (typeof rows)[number];
        training.yes.push(trainingOf(t, t.yes_implied_prob));
        training.smart.push(trainingOf(t, t.smart_money_prob));
        next += 1;
      }
      if (next !== fittedAt) {
        fittedAt = next;
        betas =
          next >= BLEND_MIN_TRAINING_MARKETS
            ? { yes: fitBlend(training.yes), smart: fitBlend(training.smart) }
            : { yes: 0, smart: 0 };
      }
      blended.set(row, {
        beta_yes_implied: betas.yes,
        blend_yes_implied: blendOf(
          row.price,
          divergenceOf(row.yes_implied_prob, row.price),
          betas.yes,
        ),
        beta_smart_money: betas.smart,
        blend_smart_money: blendOf(
          row.price,
          divergenceOf(row.smart_money_prob, row.price),
          betas.smart,
        ),
      });
    }
  }
  for (const row of rows) out.push({ ...row, ...(blended.get(row) as object) } as BacktestRow);
  return out;
}

const divergenceOf = (p: number | null, price: number) => (p === null ? 0 : p - price);

function trainingOf(row: { price: number; outcome: 0 | 1 }, p: number | null): BlendTraining {
  return { price: row.price, divergence: divergenceOf(p, row.price), outcome: row.outcome };
}

function forecastRows(rows: readonly BacktestRow[], name: ForecastName): ScoredRow[] {
  const out: ScoredRow[] = [];
  for (const row of rows) {
    const forecast = row[name];
    if (forecast === null) continue;
    out.push({ market: row.market_id, forecast, price: row.price, outcome: row.outcome });
  }
  return out;
}

function scoreForecasts(rows: readonly BacktestRow[], options: BacktestOptions): ForecastScore[] {
  return FORECASTS.map((name) => {
    const scored = forecastRows(rows, name);
    const figures = scoreRows(scored, options.resamples, options.seed);
    return {
      forecast: name,
      ...figures,
      calibration: calibration(scored),
      verdict: figures.markets > 0 && figures.brierGainCi.lo > 0 ? BEATS : DOES_NOT_BEAT,
    };
  });
}

function priceScore(rows: readonly BacktestRow[]) {
  const scored = rows.map((r) => ({
    market: r.market_id,
    forecast: r.price,
    price: r.price,
    outcome: r.outcome,
  }));
  const figures = scoreRows(scored, 0, 0);
  return {
    brier: figures.priceBrier,
    logLoss: figures.priceLogLoss,
    calibration: calibration(scored),
  };
}

/** The whole backtest: rows, blends, scores overall and per horizon and category, the verdict. */
export function runBacktest(index: HistoryIndex, options: BacktestOptions): BacktestResult {
  const { rows: plain, skipped, skippedMarkets } = backtestRows(index, options);
  const rows = withBlends(plain);
  const forecasts = scoreForecasts(rows, options);
  const groups: GroupScore[] = [];
  const groupBy = (by: GroupScore["by"], keyOf: (r: BacktestRow) => string) => {
    const members = new Map<string, BacktestRow[]>();
    for (const row of rows) {
      const key = keyOf(row);
      const list = members.get(key);
      if (list === undefined) members.set(key, [row]);
      else list.push(row);
    }
    for (const [key, list] of [...members].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      const markets = new Set(list.map((r) => r.market_id)).size;
      const enough = markets >= MIN_GROUP_MARKETS;
      groups.push({
        by,
        key,
        markets,
        rows: list.length,
        forecasts: enough ? scoreForecasts(list, options) : null,
        price: enough ? priceScore(list) : null,
      });
    }
  };
  groupBy("horizon", (r) => r.horizon);
  groupBy("category", (r) => r.category ?? "(none)");
  const head = forecasts.find((f) => f.forecast === HEADLINE) as ForecastScore;
  const markets = new Set(rows.map((r) => r.market_id)).size;
  return {
    options,
    rows,
    markets,
    skipped,
    skippedMarkets,
    price: priceScore(rows),
    forecasts,
    groups,
    headline: {
      forecast: HEADLINE,
      verdict: head.verdict,
      text: headlineText(head),
    },
  };
}

const fixed = (x: number, digits = 4) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");

export function headlineText(score: ForecastScore): string {
  return (
    `Smart money (${score.forecast}) ${score.verdict}: Brier gain ${fixed(score.brierGain)} ` +
    `(95% interval ${fixed(score.brierGainCi.lo)} to ${fixed(score.brierGainCi.hi)}) ` +
    `over ${score.markets} markets (${score.rows} forecasts).`
  );
}
