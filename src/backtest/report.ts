/**
 * The backtest's report: report.json holds every number (and every row), report.html the same
 * verdict, score table and reliability diagrams on one self-contained page (the diagrams drawn
 * by uPlot, the web console's charting library, inlined with their data: nothing is fetched),
 * and the command that re-runs it exactly.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import * as sea from "node:sea";
import { type BacktestResult, type ForecastScore, type GroupScore, horizonLabel } from "./backtest";
import type { CaseReplay } from "./cases";
import type { Calibration, CalibrationBin } from "./scores";

export interface BacktestReport {
  generated_at: string;
  command: string;
  database: { fills: number; markets: number };
  seconds: number;
  result: BacktestResult;
  cases: CaseReplay[] | null;
}

export function writeReport(
  dir: string,
  report: BacktestReport,
): { json: string; html: string; command: string } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, "report.json");
  const html = join(dir, "report.html");
  const command = join(dir, "rerun.sh");
  writeFileSync(json, `${JSON.stringify(report, jsonNumbers, 2)}\n`);
  writeFileSync(html, renderHtml(report));
  writeFileSync(
    command,
    `#!/bin/sh\n# Re-runs this backtest exactly (same data, range, band, seed).\n${report.command}\n`,
    {
      mode: 0o755,
    },
  );
  return { json, html, command };
}

/** NaN and infinities are not JSON: they are written as null. */
function jsonNumbers(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? null : value;
}

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

const num = (x: number | null | undefined, digits = 4) =>
  x === null || x === undefined || !Number.isFinite(x) ? "–" : x.toFixed(digits);

const COLOURS: Record<string, string> = {
  price: "#555555",
  yes_implied_prob: "#1f77b4",
  smart_money_prob: "#d62728",
  blend_yes_implied: "#2ca02c",
  blend_smart_money: "#9467bd",
};

/** SEA asset names of uPlot's browser script and stylesheet (see build/build-binary.ts). */
export const UPLOT_SCRIPT_ASSET = "uplot.js";
export const UPLOT_STYLE_ASSET = "uplot.css";

/** Where uPlot's browser build and stylesheet are, in the installed package. */
export function uplotFiles(): { script: string; style: string } {
  const require = createRequire(import.meta.url);
  return {
    script: require.resolve("uplot/dist/uPlot.iife.min.js"),
    style: require.resolve("uplot/dist/uPlot.min.css"),
  };
}

/**
 * uPlot, the web console's charting library, to be inlined into the page: from the binary's
 * assets (copied in at build time) or, from a checkout, from the installed package. The package
 * is a devDependency: an install without it gets the page without its charts, and a note.
 */
export function chartLibrary(): { script: string; style: string } | null {
  if (sea.isSea()) {
    return {
      script: sea.getAsset(UPLOT_SCRIPT_ASSET, "utf8"),
      style: sea.getAsset(UPLOT_STYLE_ASSET, "utf8"),
    };
  }
  try {
    const files = uplotFiles();
    return { script: readFileSync(files.script, "utf8"), style: readFileSync(files.style, "utf8") };
  } catch {
    return null;
  }
}

/** One reliability diagram's data, as embedded in the page (the id of the element it draws in). */
export interface ReliabilityChart {
  id: string;
  title: string;
  series: { name: string; colour: string; bins: CalibrationBin[] }[];
}

/** The reliability diagrams: every forecast overall, then per horizon where it is reported. */
export function reliabilityCharts(result: BacktestResult): ReliabilityChart[] {
  const seriesOf = (
    price: { calibration: Calibration },
    forecasts: readonly ForecastScore[],
  ): ReliabilityChart["series"] =>
    [
      { name: "price", calibration: price.calibration },
      ...forecasts.map((f) => ({ name: f.forecast as string, calibration: f.calibration })),
    ].map((s) => ({ name: s.name, colour: COLOURS[s.name] ?? "#000", bins: s.calibration.bins }));
  const charts: ReliabilityChart[] = [
    {
      id: "reliability-all",
      title: "All forecasts",
      series: seriesOf(result.price, result.forecasts),
    },
  ];
  for (const g of result.groups) {
    if (g.by !== "horizon" || g.price === null || g.forecasts === null) continue;
    charts.push({
      id: `reliability-${charts.length}`,
      title: `Horizon ${g.key} (${g.markets} markets)`,
      series: seriesOf(g.price, g.forecasts),
    });
  }
  return charts;
}

/** JSON inside a <script> element: nothing in it may close the element. */
const scriptJson = (value: unknown) => JSON.stringify(value, jsonNumbers).replace(/</g, "\\u003c");

/**
 * Draws each chart of #reliability-data with uPlot: per series, each decile's mean forecast
 * against the share that resolved YES (its forecasts' count in the legend), and the diagonal of
 * perfect calibration. uPlot wants one x array for all series: the union of every series' mean
 * forecasts, each series null where it has no point (its line spans the gaps). After uPlot's
 * draw, the host records how many points it drew (data-drawn), for the browser test.
 */
const DRAW_CHARTS = `(() => {
  const data = JSON.parse(document.getElementById("reliability-data").textContent);
  for (const chart of data.charts) {
    const host = document.getElementById(chart.id);
    const points = chart.series.map((s) =>
      s.bins.filter((b) => b.rows > 0 && b.meanForecast !== null && b.observed !== null));
    const xs = [...new Set([0, 1, ...points.flat().map((b) => b.meanForecast)])].sort((a, b) => a - b);
    const columns = points.map((bins) => {
      const at = new Map(bins.map((b) => [b.meanForecast, b]));
      return xs.map((x) => (at.has(x) ? at.get(x).observed : null));
    });
    const rowsAt = points.map((bins) => new Map(bins.map((b) => [b.meanForecast, b.rows])));
    const fixed = (v) => (v === null || v === undefined ? "–" : v.toFixed(3));
    new uPlot({
      width: Math.max(360, Math.min(host.clientWidth || 720, 900)),
      height: 420,
      scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] } },
      axes: [{ label: "forecast probability" }, { label: "observed frequency" }],
      cursor: { drag: { x: false, y: false } },
      series: [
        { label: "forecast", value: (u, v) => fixed(v) },
        { label: "perfect calibration", stroke: "#bbbbbb", dash: [4, 4], points: { show: false } },
        ...chart.series.map((s, i) => ({
          label: s.name,
          stroke: s.colour,
          width: 2,
          spanGaps: true,
          points: { show: true, size: 7, fill: s.colour },
          value: (u, v, _s, idx) =>
            v === null || idx === null ? "–" : fixed(v) + " (" + rowsAt[i].get(u.data[0][idx]) + ")",
        })),
      ],
      hooks: {
        draw: [(u) => {
          let drawn = 0;
          for (const column of u.data.slice(2)) for (const v of column) if (v !== null) drawn += 1;
          host.dataset.drawn = String(drawn);
        }],
      },
    }, [xs, xs, ...columns], host);
  }
})();`;

function chartsSection(charts: ReliabilityChart[], library: { script: string } | null): string {
  const figures = charts
    .map(
      (c) =>
        `<figure class="chart" id="${escapeHtml(c.id)}"><figcaption>${escapeHtml(c.title)}</figcaption></figure>`,
    )
    .join("\n");
  if (library === null) {
    return `<p>The charts need uPlot, which is not installed here (npm ci --omit=dev leaves it out); every bin is in report.json.</p>`;
  }
  return `<p>Each point is a decile of forecast probability: its mean forecast against the share of its markets that resolved YES, with its count of forecasts in the legend. On the dashed diagonal a forecast is perfectly calibrated.</p>
${figures}
<script>${library.script}</script>
<script type="application/json" id="reliability-data">${scriptJson({ charts })}</script>
<script>${DRAW_CHARTS}</script>`;
}

function scoreTable(
  price: { brier: number; logLoss: number; calibration: Calibration },
  forecasts: ForecastScore[],
): string {
  const rows = forecasts
    .map(
      (f) =>
        `<tr><td>${escapeHtml(f.forecast)}</td><td>${f.markets}</td><td>${f.rows}</td><td>${num(f.brier)}</td><td>${num(f.priceBrier)}</td>` +
        `<td>${num(f.brierGain)}</td><td>${num(f.brierGainCi.lo)} to ${num(f.brierGainCi.hi)}</td>` +
        `<td>${num(f.logLoss)}</td><td>${num(f.logLossGain)}</td><td>${num(f.logLossGainCi.lo)} to ${num(f.logLossGainCi.hi)}</td>` +
        `<td>${num(f.calibration.ece)}</td><td>${escapeHtml(f.verdict)}</td></tr>`,
    )
    .join("\n");
  return `<table>
<tr><th>forecast</th><th>markets</th><th>forecasts</th><th>Brier</th><th>price Brier</th><th>Brier gain</th><th>95% interval</th><th>log loss</th><th>log-loss gain</th><th>95% interval</th><th>ECE</th><th>verdict</th></tr>
<tr><td>price</td><td></td><td></td><td>${num(price.brier)}</td><td></td><td></td><td></td><td>${num(price.logLoss)}</td><td></td><td></td><td>${num(price.calibration.ece)}</td><td></td></tr>
${rows}
</table>`;
}

function groupSection(groups: GroupScore[]): string {
  return groups
    .map((g) =>
      g.forecasts === null || g.price === null
        ? `<h3>${escapeHtml(g.by)} ${escapeHtml(g.key)}</h3><p>${g.markets} markets: too few to report.</p>`
        : `<h3>${escapeHtml(g.by)} ${escapeHtml(g.key)} (${g.markets} markets)</h3>${scoreTable(g.price, g.forecasts)}`,
    )
    .join("\n");
}

function casesSection(cases: CaseReplay[]): string {
  const rows = cases
    .map((c) => {
      const first = c.first_signal;
      return `<tr><td>${escapeHtml(c.slug ?? c.market)}</td><td>${escapeHtml(c.news_at)}</td><td>${
        !c.found
          ? "market not found"
          : first === null
            ? "no signal before the news"
            : `${escapeHtml(first.type)} ${num(first.score, 0)} at ${escapeHtml(first.at)}: ${escapeHtml(first.side)} $${num(first.usd, 0)} of ${escapeHtml(first.outcome)} at ${num(first.price, 2)}`
      }</td><td>${c.wallets.map(escapeHtml).join("<br>")}</td><td>${num(c.lead_time_hours, 1)}</td></tr>`;
    })
    .join("\n");
  return `<h2>Case replay</h2><table><tr><th>market</th><th>news</th><th>first signal before the news</th><th>wallets named</th><th>lead (hours)</th></tr>${rows}</table>`;
}

export function renderHtml(report: BacktestReport): string {
  const r = report.result;
  const library = chartLibrary();
  const o = r.options;
  const skipped = Object.entries(r.skipped);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>smartmoney backtest</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}.verdict{font-size:1.2em;font-weight:600}code{background:#f4f4f4;padding:2px 4px}
.chart{margin:1em 0 2em}.chart figcaption{font-weight:600;margin-bottom:.3em}
</style>${library === null ? "" : `\n<style>${library.style}</style>`}</head><body>
<h1>Smart money against the market price: out-of-time backtest</h1>
<p class="verdict">${escapeHtml(r.headline.text)}</p>
<p>${r.markets} markets resolved ${o.from === null ? "" : `from ${escapeHtml(new Date(o.from).toISOString())} `}to ${escapeHtml(new Date(o.to).toISOString())}, horizons ${o.horizonsMs.map(horizonLabel).join(", ")} before resolution, prices in ${o.band[0]}–${o.band[1]}, ${o.resamples} bootstrap draws of markets (seed ${o.seed}). A gain is the price's score minus the forecast's: positive means the forecast was better. "Beats the price" needs the whole 95% interval above zero; it does not mean it will keep doing so, and "does not beat" does not prove smart money is useless.</p>
<h2>Scores</h2>
${scoreTable(r.price, r.forecasts)}
<h2>Reliability</h2>
${chartsSection(reliabilityCharts(r), library)}
<h2>By horizon and category</h2>
${groupSection(r.groups)}
<h2>Skipped</h2>
<p>${r.skippedMarkets} markets skipped entirely.${skipped.length === 0 ? " No forecast skipped." : ""}</p>
${skipped.length === 0 ? "" : `<table><tr><th>reason</th><th>forecasts</th></tr>${skipped.map(([k, n]) => `<tr><td>${escapeHtml(k)}</td><td>${n}</td></tr>`).join("")}</table>`}
${report.cases === null ? "" : casesSection(report.cases)}
<h2>Re-run</h2>
<p><code>${escapeHtml(report.command)}</code></p>
<p>Generated ${escapeHtml(report.generated_at)} from ${report.database.fills} fills and ${report.database.markets} markets in ${num(report.seconds, 1)} s. Method: docs/methodology.md, "Backtest".</p>
</body></html>
`;
}
