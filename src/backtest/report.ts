/**
 * The backtest's report: report.json holds every number (and every row), report.html the same
 * verdict, score table and reliability diagram on one self-contained page (inline SVG drawn
 * here, no script, nothing fetched), and the command that re-runs it exactly.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BacktestResult, type ForecastScore, type GroupScore, horizonLabel } from "./backtest";
import type { CaseReplay } from "./cases";
import type { Calibration } from "./scores";

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

/** A reliability diagram: mean forecast against observed frequency per decile, and the diagonal. */
export function reliabilitySvg(series: { name: string; calibration: Calibration }[]): string {
  const size = 360;
  const pad = 40;
  const inner = size - 2 * pad;
  const x = (p: number) => pad + p * inner;
  const y = (p: number) => size - pad - p * inner;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size + 190}" height="${size}" viewBox="0 0 ${size + 190} ${size}" role="img" aria-label="Reliability diagram">`,
    `<rect x="${pad}" y="${pad}" width="${inner}" height="${inner}" fill="none" stroke="#ccc"/>`,
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#bbb" stroke-dasharray="4 4"/>`,
  ];
  for (let t = 0; t <= 10; t += 2) {
    const p = t / 10;
    parts.push(
      `<text x="${x(p)}" y="${size - pad + 16}" font-size="11" text-anchor="middle">${p.toFixed(1)}</text>`,
      `<text x="${pad - 6}" y="${y(p) + 4}" font-size="11" text-anchor="end">${p.toFixed(1)}</text>`,
    );
  }
  parts.push(
    `<text x="${size / 2}" y="${size - 6}" font-size="12" text-anchor="middle">forecast probability</text>`,
    `<text x="12" y="${size / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 12 ${size / 2})">observed frequency</text>`,
  );
  series.forEach((s, i) => {
    const colour = COLOURS[s.name] ?? "#000";
    const points = s.calibration.bins
      .filter((b) => b.rows > 0 && b.meanForecast !== null && b.observed !== null)
      .map((b) => [x(b.meanForecast as number), y(b.observed as number), b.rows] as const);
    if (points.length > 1) {
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" ")}"/>`,
      );
    }
    for (const [a, b, n] of points) {
      parts.push(
        `<circle cx="${a.toFixed(1)}" cy="${b.toFixed(1)}" r="3" fill="${colour}"><title>${escapeHtml(s.name)}: ${n} forecasts</title></circle>`,
      );
    }
    parts.push(
      `<rect x="${size + 4}" y="${pad + i * 20 - 9}" width="12" height="12" fill="${colour}"/>`,
      `<text x="${size + 22}" y="${pad + i * 20 + 2}" font-size="12">${escapeHtml(s.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
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
  const o = r.options;
  const skipped = Object.entries(r.skipped);
  const series = [
    { name: "price", calibration: r.price.calibration },
    ...r.forecasts.map((f) => ({ name: f.forecast, calibration: f.calibration })),
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>smartmoney backtest</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}.verdict{font-size:1.2em;font-weight:600}code{background:#f4f4f4;padding:2px 4px}
</style></head><body>
<h1>Smart money against the market price: out-of-time backtest</h1>
<p class="verdict">${escapeHtml(r.headline.text)}</p>
<p>${r.markets} markets resolved ${o.from === null ? "" : `from ${escapeHtml(new Date(o.from).toISOString())} `}to ${escapeHtml(new Date(o.to).toISOString())}, horizons ${o.horizonsMs.map(horizonLabel).join(", ")} before resolution, prices in ${o.band[0]}–${o.band[1]}, ${o.resamples} bootstrap draws of markets (seed ${o.seed}). A gain is the price's score minus the forecast's: positive means the forecast was better. "Beats the price" needs the whole 95% interval above zero; it does not mean it will keep doing so, and "does not beat" does not prove smart money is useless.</p>
<h2>Scores</h2>
${scoreTable(r.price, r.forecasts)}
<h2>Reliability</h2>
${reliabilitySvg(series)}
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
