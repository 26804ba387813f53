/**
 * How long `smartmoney backtest` takes, and its peak memory, on a fixture world
 * (docs/benchmarks.md): the history read through the seam (src/backtest/history.ts)
 * and held in memory, the forecasts at every cutoff, the scores with their bootstrap, and the
 * report written. The world's planted insiders' upset markets are replayed as cases, at the
 * time their price broke out (each market's first trade pricing its winner at 0.5 or more).
 *
 *   npm run bench:backtest -- [--world small|medium|large] [--seed 42]
 *
 * Prints one JSON report and writes it to bench/results/backtest.json. It runs in a child with
 * V8's heap held as the jobs process holds it within the memory cap (SMARTMONEY_MEMORY_MB,
 * default 1024: src/heap.ts): with V8's defaults most of a run's resident memory is garbage
 * not yet collected, which says nothing about what the backtest needs.
 */

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  DEFAULT_BAND,
  DEFAULT_HORIZONS_MS,
  DEFAULT_RESAMPLES,
  runBacktest,
} from "../src/backtest/backtest";
import { replayCases } from "../src/backtest/cases";
import { countFills, loadSealedFills, readFills, readMarkets } from "../src/backtest/history";
import { buildIndex } from "../src/backtest/point-in-time";
import { writeReport } from "../src/backtest/report";
import { openDb } from "../src/db/open";
import { sizedHeapEnv } from "../src/heap";
import { peakRssMb } from "./lib/peak-rss";
import { recordResults } from "./lib/results";
import { isScale, worldFor } from "./lib/world";

const say = (line: string) => console.error(line);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      world: { type: "string", default: "medium" },
      seed: { type: "string", default: "42" },
    },
  });
  if (!isScale(values.world)) throw new Error("--world: small, medium or large");
  const world = await worldFor({ scale: values.world, seed: Number(values.seed), say });
  const db = openDb(world.dbPath);
  const out = mkdtempSync(join(tmpdir(), "smartmoney-bench-backtest-"));
  try {
    const started = performance.now();
    const lap = (() => {
      let last = started;
      return () => {
        const now = performance.now();
        const seconds = (now - last) / 1000;
        last = now;
        return Math.round(seconds * 10) / 10;
      };
    })();
    const markets = readMarkets(db.reader);
    // The fills are read once, in order, into the index: mapping the file would only add its pages
    // to this process's memory.
    db.reader.pragma("mmap_size = 0");
    const sealed = await loadSealedFills(db.reader, db.path, 256);
    const index = buildIndex(readFills(db.reader, sealed), markets, countFills(db.reader));
    const loadSeconds = lap();
    const options = {
      horizonsMs: DEFAULT_HORIZONS_MS,
      from: null,
      to: world.now,
      band: DEFAULT_BAND,
      seed: 1,
      resamples: DEFAULT_RESAMPLES,
    };
    const result = runBacktest(index, options);
    const backtestSeconds = lap();
    const upsets = new Set(world.manifest.details.insider_rings.flatMap((r) => r.upset_markets));
    const cases = markets
      .filter((m) => upsets.has(m.slug))
      .flatMap((m) => {
        const breakout = db.reader
          .prepare<[number], number | null>(
            `SELECT min(t.ts) FROM trades t JOIN markets m ON m.id = t.market_id
              WHERE t.market_id = ?
                AND (CASE WHEN t.outcome = m.resolved_outcome THEN t.price ELSE 1 - t.price END) >= 0.5`,
          )
          .pluck()
          .get(m.id);
        return breakout == null ? [] : [{ market: m.slug, news_at: breakout }];
      });
    const replays = replayCases(db.reader, cases);
    const casesSeconds = lap();
    writeReport(out, {
      generated_at: new Date(world.now).toISOString(),
      command: `npm run bench:backtest -- --world ${values.world} --seed ${values.seed}`,
      database: { fills: index.fillCount, markets: markets.length },
      seconds: (performance.now() - started) / 1000,
      result,
      cases: replays,
    });
    const reportSeconds = lap();
    const totalSeconds = Math.round((performance.now() - started) / 100) / 10;
    const report = {
      world: values.world,
      seed: Number(values.seed),
      fills: index.fillCount,
      markets: markets.length,
      scored_markets: result.markets,
      forecasts: result.rows.length,
      skipped: result.skipped,
      seconds: {
        load: loadSeconds,
        backtest: backtestSeconds,
        cases: casesSeconds,
        report: reportSeconds,
        total: totalSeconds,
      },
      // This process's CPU time: on a shared machine, steadier than the wall clock.
      cpu_seconds: Math.round((process.cpuUsage().user + process.cpuUsage().system) / 1e5) / 10,
      peak_rss_mb: Math.round(peakRssMb()),
      memory_cap_mb: Number(process.env.SMARTMONEY_MEMORY_MB ?? "1024"),
      headline: result.headline.text,
      // Every forecast, hashed: two runs (or two versions of the code) agree to the last bit.
      rows_sha256: createHash("sha256").update(JSON.stringify(result.rows)).digest("hex"),
      cases: replays.map((c) => ({
        market: c.slug,
        lead_time_hours:
          c.lead_time_hours === null ? null : Math.round(c.lead_time_hours * 10) / 10,
        wallets: c.wallets.length,
      })),
    };
    console.log(JSON.stringify(report, null, 2));
    recordResults("backtest", report);
  } finally {
    db.close();
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.env.SMARTMONEY_BENCH_BACKTEST_CHILD === "1") {
  await main();
} else {
  const memoryMb = Number(process.env.SMARTMONEY_MEMORY_MB ?? "1024");
  const child = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...sizedHeapEnv(memoryMb), SMARTMONEY_BENCH_BACKTEST_CHILD: "1" },
  });
  process.exitCode = child.status ?? 1;
}
