import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import * as v from "valibot";
import {
  type BacktestOptions,
  DEFAULT_BAND,
  DEFAULT_HORIZONS_MS,
  DEFAULT_RESAMPLES,
  horizonLabel,
  runBacktest,
} from "../../src/backtest/backtest";
import { parseCases, replayCases } from "../../src/backtest/cases";
import { countFills, loadSealedFills, readFills, readMarkets } from "../../src/backtest/history";
import { buildIndex } from "../../src/backtest/point-in-time";
import { writeReport } from "../../src/backtest/report";
import { timestamp } from "../../src/ingest/lines";
import { type CommonOptions, outDirectory, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

const HORIZON = /^(\d{1,4})(d|h)$/;

function horizons(text: string): number[] {
  const parts = text.split(",").map((s) => s.trim());
  const out = parts.map((part) => {
    const match = HORIZON.exec(part);
    const ms = match ? Number(match[1]) * (match[2] === "d" ? 86_400_000 : 3_600_000) : 0;
    if (ms <= 0) {
      throw new InvalidArgumentError(
        `"${part}" is not a horizon (a whole number of days or hours: 7d, 12h)`,
      );
    }
    return ms;
  });
  if (new Set(out).size !== out.length) throw new InvalidArgumentError("horizons must differ");
  return out;
}

function date(text: string): number {
  const parsed = v.safeParse(timestamp, /^\d+$/.test(text) ? Number(text) : text);
  if (!parsed.success) {
    throw new InvalidArgumentError(
      `"${text}" is not a date (ISO-8601, e.g. 2026-01-31, or Unix milliseconds)`,
    );
  }
  return parsed.output;
}

function band(text: string): [number, number] {
  const parts = text.split(",").map((s) => Number(s.trim()));
  const [lo, hi] = parts;
  if (
    parts.length !== 2 ||
    !Number.isFinite(lo) ||
    !Number.isFinite(hi) ||
    lo! < 0 ||
    hi! > 1 ||
    lo! >= hi!
  ) {
    throw new InvalidArgumentError(
      `"${text}" is not a price band (two prices LO,HI with 0 ≤ LO < HI ≤ 1)`,
    );
  }
  return [lo!, hi!];
}

function seed(text: string): number {
  if (!/^\d{1,9}$/.test(text))
    throw new InvalidArgumentError(`"${text}" is not a seed (a whole number)`);
  return Number(text);
}

interface BacktestFlags extends CommonOptions {
  horizon: number[];
  from?: number;
  to?: number;
  band: [number, number];
  cases?: string;
  out: string;
  seed: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const fixed = (x: number) => (Number.isFinite(x) ? x.toFixed(4) : "n/a");

/** `backtest`: the smart-money probabilities against the market price, out of time. */
export function registerBacktest(program: Command): void {
  withDbOption(program.command("backtest"))
    .description(
      "score the smart-money probabilities against the market price on resolved markets, each from the data before its cutoff (docs/methodology.md, Backtest)",
    )
    .option(
      "--horizon <list>",
      "cutoffs before resolution, comma-separated (days or hours)",
      horizons,
      DEFAULT_HORIZONS_MS,
    )
    .option("--from <date>", "only markets resolved at or after this date", date)
    .option("--to <date>", "only markets resolved at or before this date (default: now)", date)
    .option(
      "--band <lo,hi>",
      "only forecasts whose market price at the cutoff is in this band",
      band,
      DEFAULT_BAND,
    )
    .option(
      "--cases <file>",
      "JSONL of {market, news_at}: replay the signals before each market's news",
    )
    .option("--out <dir>", "where report.html, report.json and rerun.sh go", "backtest-report")
    .option("--seed <n>", "seed of the bootstrap", seed, 1)
    .option("--json", "print the summary as JSON")
    .action((options: BacktestFlags) =>
      withApp(options, async ({ app, db, config }) => {
        const started = performance.now();
        const to = options.to ?? app.deps.clock.now();
        if (options.from !== undefined && options.from > to) {
          throw new CliError(`--from ${iso(options.from)} is after --to ${iso(to)}`);
        }
        const out = resolve(outDirectory(options.out));
        const cases = options.cases === undefined ? null : readCases(options.cases);
        const markets = readMarkets(db.reader);
        // The fills are read once, in order, into the index: mapping the file would only add its pages
        // to this process's memory.
        db.reader.pragma("mmap_size = 0");
        const sealed = await loadSealedFills(db.reader, db.path, app.deps.config.memoryMb / 4);
        const index = buildIndex(readFills(db.reader, sealed), markets, countFills(db.reader));
        const backtestOptions: BacktestOptions = {
          horizonsMs: options.horizon,
          from: options.from ?? null,
          to,
          band: options.band,
          seed: options.seed,
          resamples: DEFAULT_RESAMPLES,
        };
        const result = runBacktest(index, backtestOptions);
        const replays = cases === null ? null : replayCases(db.reader, cases);
        const command = [
          "smartmoney backtest",
          `--db ${shellQuote(resolve(config.dbPath))}`,
          `--horizon ${options.horizon.map(horizonLabel).join(",")}`,
          ...(options.from === undefined ? [] : [`--from ${iso(options.from)}`]),
          `--to ${iso(to)}`,
          `--band ${options.band.join(",")}`,
          `--seed ${options.seed}`,
          ...(options.cases === undefined ? [] : [`--cases ${shellQuote(resolve(options.cases))}`]),
          `--out ${shellQuote(out)}`,
        ].join(" ");
        const seconds = (performance.now() - started) / 1000;
        const paths = writeReport(out, {
          generated_at: iso(app.deps.clock.now()),
          command,
          database: { fills: index.fillCount, markets: markets.length },
          seconds,
          result,
          cases: replays,
        });
        if (options.json) {
          const summary = {
            headline: result.headline,
            markets: result.markets,
            skipped: result.skipped,
            skipped_markets: result.skippedMarkets,
            forecasts: result.forecasts.map(({ calibration, ...f }) => ({
              ...f,
              ece: calibration.ece,
            })),
            cases: replays,
            report: paths,
            command,
          };
          process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
          return;
        }
        const lines = [
          result.headline.text,
          ...result.forecasts.map(
            (f) =>
              `  ${f.forecast.padEnd(18)} ${String(f.markets).padStart(6)} markets  Brier ${fixed(f.brier)} vs price ${fixed(f.priceBrier)}  gain ${fixed(f.brierGain)} [${fixed(f.brierGainCi.lo)}, ${fixed(f.brierGainCi.hi)}]  ${f.verdict}`,
          ),
          `skipped: ${result.skippedMarkets} markets; ${
            Object.entries(result.skipped)
              .map(([k, n]) => `${n} forecasts: ${k}`)
              .join("; ") || "no forecast"
          }`,
          ...(replays ?? []).map((c) =>
            !c.found
              ? `case ${c.market}: market not found`
              : c.first_signal === null
                ? `case ${c.slug}: no signal before the news`
                : `case ${c.slug}: first ${c.first_signal.type} signal ${c.lead_time_hours!.toFixed(1)} h before the news; wallets ${c.wallets.join(", ")}`,
          ),
          `report: ${paths.html}`,
          `re-run: ${command}`,
        ];
        process.stdout.write(`${lines.join("\n")}\n`);
      }),
    );
}

function readCases(path: string) {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(
      `cannot read cases file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  try {
    return parseCases(text, path);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

const shellQuote = (s: string) => (/^[\w./:@-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);
