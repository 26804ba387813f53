import type { LoadResult } from "./load";

/** One measured run of one target. */
export interface Run extends LoadResult {
  /** Microseconds of the server's CPU time (all threads) per response: robust to noisy neighbours. */
  cpuPerRequest: number;
  /** Responses with another status than expected, plus connection errors. */
  bad: number;
}

export interface TargetSummary {
  name: string;
  /** Medians over the runs. */
  rps: number;
  p50: number;
  p99: number;
  cpuPerRequest: number;
  loadCpu: number;
  bad: number;
  runs: number[];
}

export interface EndpointSummary extends TargetSummary {
  endpoint: string;
  /** Median requests/s over the ceiling's median requests/s. */
  ratio: number;
  /** Median of each run's requests/s over the ceiling's in the same round. */
  pairedRatio: number;
  /** The ceiling's CPU per response over this endpoint's: the throughput ratio an idle machine would show. */
  cpuRatio: number;
  target: number | null;
  met: boolean | null;
  /** Greatest acceptable median p99 in milliseconds, and whether the median p99 stayed within. */
  maxP99Ms: number | null;
  p99Met: boolean | null;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const round = (value: number, digits: number) => Number(value.toFixed(digits));

export function summariseTarget(name: string, runs: Run[]): TargetSummary {
  return {
    name,
    rps: Math.round(median(runs.map((r) => r.rps))),
    // Rounded: the median of an even count of runs is a mean, which prints as 1.5499999999999998.
    p50: round(median(runs.map((r) => r.p50)), 3),
    p99: round(median(runs.map((r) => r.p99)), 3),
    cpuPerRequest: round(median(runs.map((r) => r.cpuPerRequest)), 1),
    loadCpu: round(median(runs.map((r) => r.loadCpu)), 2),
    bad: runs.reduce((sum, r) => sum + r.bad, 0),
    runs: runs.map((r) => Math.round(r.rps)),
  };
}

export function summariseEndpoint(
  endpoint: { name: string; target?: number; maxP99Ms?: number },
  name: string,
  runs: Run[],
  ceiling: { summary: TargetSummary; runs: Run[] },
): EndpointSummary {
  const summary = summariseTarget(name, runs);
  const ratio = summary.rps / ceiling.summary.rps;
  return {
    endpoint: endpoint.name,
    ...summary,
    ratio: round(ratio, 3),
    pairedRatio: round(median(runs.map((r, i) => r.rps / ceiling.runs[i]!.rps)), 3),
    cpuRatio: round(ceiling.summary.cpuPerRequest / summary.cpuPerRequest, 3),
    target: endpoint.target ?? null,
    met: endpoint.target === undefined ? null : ratio >= endpoint.target,
    maxP99Ms: endpoint.maxP99Ms ?? null,
    p99Met: endpoint.maxP99Ms === undefined ? null : summary.p99 <= endpoint.maxP99Ms,
  };
}

/**
 * Rows of cells as text columns two spaces apart: the first `left` columns (labels) aligned left,
 * the rest (figures) right. The first row is the header.
 */
export function alignColumns(rows: string[][], left = 1): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i < left ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
        .join("  "),
    )
    .join("\n");
}

export function resultTable(ceiling: TargetSummary, endpoints: EndpointSummary[]): string {
  const rows = [
    ["target", "req/s", "p50 ms", "p99 ms", "ratio", "goal", "p99 goal", "cpu µs/req", "cpu ratio"],
    [
      ceiling.name,
      String(ceiling.rps),
      String(ceiling.p50),
      String(ceiling.p99),
      "1",
      "",
      "",
      ceiling.cpuPerRequest.toFixed(1),
      "1",
    ],
    ...endpoints.map((r) => [
      r.name,
      String(r.rps),
      String(r.p50),
      String(r.p99),
      r.ratio.toFixed(2),
      r.target === null ? "" : `>= ${r.target} ${r.met ? "met" : "MISSED"}`,
      r.maxP99Ms === null ? "" : `<= ${r.maxP99Ms} ${r.p99Met ? "met" : "MISSED"}`,
      r.cpuPerRequest.toFixed(1),
      r.cpuRatio.toFixed(2),
    ]),
  ];
  return alignColumns(rows, 1);
}

/** The nearest-rank percentile `p` (0–100) of values already sorted ascending; NaN when empty. */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The nearest-rank percentile `p` (0–100) of unsorted values. */
export const percentile = (values: number[], p: number): number =>
  percentileOfSorted(
    [...values].sort((a, b) => a - b),
    p,
  );

/** A command-line flag that must be a whole number of at least `min`. */
export function wholeFlag(name: string, text: string | undefined, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`--${name} must be a whole number >= ${min}, not "${text}"`);
  }
  return value;
}
