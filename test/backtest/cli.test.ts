import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOES_NOT_BEAT } from "../../src/backtest/backtest";
import { createTestApp, type TestApp } from "../helpers/app";
import { expectRefused, runCli } from "../helpers/cli";
import { generateWorld, importWorld } from "./world";

let t: TestApp;
let world: ReturnType<typeof generateWorld>;

beforeAll(async () => {
  t = createTestApp();
  world = generateWorld({ seed: 2, markets: 60, noise: 0.05, skill: "none", insiderMarkets: 2 });
  await importWorld(t, world.lines);
});
afterAll(() => t.close());

const cli = (args: string[]) =>
  runCli(["backtest", ...args], { SMARTMONEY_DB: t.config.dbPath, SMARTMONEY_LOG_LEVEL: "error" });

describe("smartmoney backtest", () => {
  it("writes report.html, report.json and rerun.sh, and the re-run gives the same numbers", async () => {
    const out = join(t.dir, "report");
    const cases = join(t.dir, "cases.jsonl");
    writeFileSync(
      cases,
      world.markets
        .filter((m) => m.newsAt !== null)
        .map((m) => JSON.stringify({ market: m.slug, news_at: m.newsAt }))
        .join("\n"),
    );
    const to = new Date(world.end).toISOString();
    const res = await cli(["--to", to, "--cases", cases, "--out", out, "--seed", "4"]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(DOES_NOT_BEAT);
    expect(res.stdout).toMatch(
      /case world-0: first (whale|insider) signal [\d.]+ h before the news/,
    );
    const json = JSON.parse(readFileSync(join(out, "report.json"), "utf8"));
    expect(json.result.markets).toBeGreaterThan(50);
    // Every row has a blend (the price itself without a divergence); the served forecasts may be null.
    const blend = json.result.forecasts.find(
      (f: { forecast: string }) => f.forecast === "blend_yes_implied",
    );
    expect(blend.rows).toBe(json.result.rows.length);
    expect(json.cases).toHaveLength(2);
    const html = readFileSync(join(out, "report.html"), "utf8");
    expect(html).toContain(json.result.headline.text.replace(/'/g, "&#39;"));
    // One self-contained page: uPlot inlined, nothing loaded from anywhere.
    expect(html).toContain("var uPlot=");
    expect(html).not.toMatch(
      /<(script|link|img|iframe)\b[^>]*\s(src|href)=|@import|url\(|fetch\(/i,
    );
    // The diagrams draw report.json's calibration bins: every forecast overall, then per horizon.
    const embedded = html.match(
      /<script type="application\/json" id="reliability-data">(.*?)<\/script>/s,
    );
    const charts = JSON.parse(embedded![1]!).charts as {
      id: string;
      series: { name: string; bins: unknown }[];
    }[];
    const binsOf = (scores: {
      price: { calibration: { bins: unknown } };
      forecasts: { forecast: string; calibration: { bins: unknown } }[];
    }) => [
      { name: "price", bins: scores.price.calibration.bins },
      ...scores.forecasts.map((f) => ({ name: f.forecast, bins: f.calibration.bins })),
    ];
    const horizons = json.result.groups.filter(
      (g: { by: string; forecasts: unknown }) => g.by === "horizon" && g.forecasts !== null,
    );
    expect(horizons.length).toBeGreaterThan(0);
    expect(charts.map((c) => c.series.map((s) => ({ name: s.name, bins: s.bins })))).toStrictEqual([
      binsOf(json.result),
      ...horizons.map(binsOf),
    ]);
    for (const chart of charts) expect(html).toContain(`<figure class="chart" id="${chart.id}">`);
    expect(charts[0]!.series[0]!.bins).toHaveLength(10);
    const rerun = readFileSync(join(out, "rerun.sh"), "utf8");
    expect(rerun).toContain(`--to ${to}`);
    expect(rerun).toContain("--seed 4");
    // The command it printed, run again (as its flags, here in-process), gives the same numbers.
    const command = json.command as string;
    const args = command.replace(/^smartmoney backtest /, "").split(" ");
    expect(existsSync(join(out, "rerun.sh"))).toBe(true);
    const again = await cli(args);
    expect(again.code).toBe(0);
    const second = JSON.parse(readFileSync(join(out, "report.json"), "utf8"));
    expect(second.result).toStrictEqual(json.result);
    expect(second.cases).toStrictEqual(json.cases);
  }, 60_000);

  it("prints a JSON summary with --json", async () => {
    const res = await cli([
      "--to",
      new Date(world.end).toISOString(),
      "--out",
      join(t.dir, "j"),
      "--json",
    ]);
    expect(res.code).toBe(0);
    const summary = JSON.parse(res.stdout);
    expect(summary.headline.verdict).toBe(DOES_NOT_BEAT);
    expect(summary.forecasts.map((f: { forecast: string }) => f.forecast)).toEqual([
      "yes_implied_prob",
      "smart_money_prob",
      "blend_yes_implied",
      "blend_smart_money",
    ]);
  }, 60_000);

  it.each([
    [["--horizon", "7x"], /"7x" is not a horizon/],
    [["--horizon", "1d,1d"], /horizons must differ/],
    [["--band", "0.9,0.1"], /"0.9,0.1" is not a price band/],
    [["--from", "yesterday"], /"yesterday" is not a date/],
    [["--seed", "-1"], /"-1" is not a seed/],
  ])("refuses %j as a usage error", async (args, message) => {
    const res = await cli(args as string[]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
  });

  it("fails in one line on a bad cases file or range", async () => {
    const missing = await cli(["--cases", join(t.dir, "nope.jsonl"), "--out", join(t.dir, "x")]);
    expectRefused(missing, "cannot read cases file");
    const bad = join(t.dir, "bad.jsonl");
    writeFileSync(bad, '{"market":"world-0"}\n');
    const invalid = await cli(["--cases", bad, "--out", join(t.dir, "x")]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain("bad.jsonl:1: news_at");
    const range = await cli([
      "--from",
      "2026-06-01",
      "--to",
      "2026-01-01",
      "--out",
      join(t.dir, "x"),
    ]);
    expect(range.code).toBe(1);
    expect(range.stderr).toContain("is after --to");
    const file = join(t.dir, "a-file");
    writeFileSync(file, "");
    const onFile = await cli(["--out", file]);
    expectRefused(onFile, `--out ${file}: a file is there; name a directory`);
  });
});

describe("smartmoney backtest on an empty history", () => {
  it("reports no markets and does not beat the price, without failing", async () => {
    const empty = createTestApp();
    try {
      const out = join(empty.dir, "report");
      const res = await runCli(["backtest", "--out", out, "--json"], {
        SMARTMONEY_DB: empty.config.dbPath,
        SMARTMONEY_LOG_LEVEL: "error",
      });
      expect(res.stderr).toBe("");
      expect(res.code).toBe(0);
      const summary = JSON.parse(res.stdout);
      expect(summary.markets).toBe(0);
      expect(summary.headline.verdict).toBe(DOES_NOT_BEAT);
      expect(summary.forecasts[0].brierGainCi).toEqual({ lo: null, hi: null });
      expect(readFileSync(join(out, "report.html"), "utf8")).toContain("over 0 markets");
    } finally {
      empty.close();
    }
  });
});
