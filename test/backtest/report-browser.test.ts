/// <reference lib="dom" />
// Code handed to page.evaluate runs in the browser: it is typed against the DOM.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchChromium } from "../../bench/lib/browser";
import { runBacktest } from "../../src/backtest/backtest";
import { readMarkets, streamFills } from "../../src/backtest/history";
import { indexHistory } from "../../src/backtest/point-in-time";
import { type ReliabilityChart, writeReport } from "../../src/backtest/report";
import { createTestApp, type TestApp } from "../helpers/app";
import { generateWorld, importWorld } from "./world";

/**
 * The backtest's report.html in Debian's Chromium (as test/console drives it): opened from the
 * disk with no server, it draws every reliability diagram with the inlined uPlot, one point per
 * non-empty decile of each series, without a console error or a request for anything. Skipped
 * outside CI when there is no Chromium, as the console's browser tests are.
 */
const skip = !process.env.CI && !hasChromium();

let t: TestApp;
let html: string;

beforeAll(async () => {
  if (skip) return;
  t = createTestApp();
  const world = generateWorld({ seed: 3, markets: 80, noise: 0.05, skill: "planted" });
  await importWorld(t, world.lines);
  const index = indexHistory(streamFills(t.db.reader), readMarkets(t.db.reader));
  const result = runBacktest(index, {
    horizonsMs: [7 * 86_400_000, 86_400_000],
    from: null,
    to: world.end,
    band: [0.05, 0.95],
    seed: 1,
    resamples: 200,
  });
  const written = writeReport(join(t.dir, "report"), {
    generated_at: new Date(world.end).toISOString(),
    command: "smartmoney backtest",
    database: { fills: index.fillCount, markets: index.markets.length },
    seconds: 0,
    result,
    cases: null,
  });
  html = written.html;
}, 60_000);
afterAll(() => t?.close());

describe.skipIf(skip)("report.html in a browser", () => {
  it("draws every reliability diagram from its data, with no error and nothing fetched", async () => {
    const page = readFileSync(html, "utf8");
    const embedded = page.match(
      /<script type="application\/json" id="reliability-data">(.*?)<\/script>/s,
    );
    const charts = JSON.parse(embedded![1]!).charts as ReliabilityChart[];
    expect(charts.length).toBeGreaterThanOrEqual(2);

    const browser = await launchChromium();
    try {
      const tab = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const problems: string[] = [];
      tab.on("console", (m) => {
        if (m.type() === "error" || m.type() === "warning") problems.push(m.text());
      });
      tab.on("pageerror", (e) => problems.push(e.message));
      tab.on("request", (r) => {
        if (r.url() !== pathToFileURL(html).href) problems.push(`request: ${r.url()}`);
      });
      await tab.goto(pathToFileURL(html).href);
      for (const chart of charts) {
        const host = `figure#${chart.id}`;
        await tab.waitForSelector(`${host}[data-drawn]`, { timeout: 10_000 });
        expect(await tab.$$eval(`${host} canvas`, (els) => els.length)).toBe(1);
        const points = chart.series
          .flatMap((s) => s.bins)
          .filter((b) => b.rows > 0 && b.meanForecast !== null && b.observed !== null).length;
        expect(points).toBeGreaterThan(0);
        expect(await tab.$eval(host, (e) => Number((e as HTMLElement).dataset.drawn))).toBe(points);
        // uPlot's legend names every series: the diagonal, the price and the four forecasts.
        expect(await tab.$$eval(`${host} .u-legend .u-label`, (els) => els.length)).toBe(
          chart.series.length + 2,
        );
      }
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
