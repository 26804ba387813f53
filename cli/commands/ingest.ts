import { type Command, InvalidArgumentError } from "commander";
import type { App } from "../../src/app";
import { parseDuration } from "../../src/duration";
import { type BackfillProgress, runBackfill } from "../../src/ingest/polymarket/backfill";
import type { PageProgress, RoundSummary } from "../../src/ingest/polymarket/context";
import { ingestOnce, polymarketDeps, polymarketSettings } from "../../src/ingest/polymarket/job";
import { runLiveIngest } from "../../src/ingest/polymarket/live";
import type { RoundResult } from "../../src/ingest/polymarket/round";
import { formatStatus, ingestStatus } from "../../src/ingest/polymarket/status";
import { type CommonOptions, instantArgument, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

const DEFAULT_INTERVAL_MS = 30_000;

interface IngestOptions extends CommonOptions {
  since?: number;
  once?: boolean;
  interval?: number;
  dataUrl?: string;
  gammaUrl?: string;
  rpcUrl?: string;
  streamUrl?: string;
}

export function registerIngest(program: Command): void {
  const ingest = program.command("ingest").description("ingest market data from live sources");
  const polymarket = withDbOption(ingest.command("polymarket"))
    .description(
      "ingest Polymarket markets, fills and wallet facts; resumable (cursors in the database), loops until SIGINT/SIGTERM unless --once",
    )
    .option(
      "--since <time>",
      "where a source with no cursor yet starts, RFC 3339 or Unix ms (default: 24 hours ago)",
      instantArgument,
    )
    .option("--once", "run one round and exit")
    .option("--interval <duration>", "pause between rounds, e.g. 5m (default 30s)", parseInterval)
    .option(
      "--data-url <url>",
      "data API base URL (default https://data-api.polymarket.com)",
      parseUrl,
    )
    .option(
      "--gamma-url <url>",
      "Gamma API base URL (default https://gamma-api.polymarket.com)",
      parseUrl,
    )
    .option("--rpc-url <url>", "Polygon JSON-RPC URL: read fills and transfers on chain", parseUrl)
    .option(
      "--stream-url <url>",
      'the live trade socket (default wss://ws-live-data.polymarket.com; "" turns it off); not used with --once',
      parseStreamUrl,
    )
    .option("--json", "print JSON")
    .action((options: IngestOptions) => withApp(options, ({ app }) => runIngest(app, options)));

  withDbOption(polymarket.command("backfill"))
    .description(
      "store the fills of a past period from chain logs (both exchange eras); resumable, with a progress bar",
    )
    .requiredOption("--from <time>", "start of the period, RFC 3339 or Unix ms", instantArgument)
    .option(
      "--to <time>",
      "end of the period (default: the newest confirmed block)",
      instantArgument,
    )
    .option(
      "--rpc-url <url>",
      "Polygon JSON-RPC URL (default SMARTMONEY_POLYGON_RPC_URL)",
      parseUrl,
    )
    .option("--gamma-url <url>", "Gamma API base URL, for the markets of the fills", parseUrl)
    .option("--json", "print JSON")
    .action((options: BackfillCliOptions) =>
      withApp(options, ({ app }) => runBackfillCli(app, options)),
    );

  withDbOption(ingest.command("status"))
    .description(
      "per source: last success, lag, errors and backoff; quarantined records, known gaps, markets with category unknown, the newest market discovered, fills that waited for their market",
    )
    .option("--json", "print JSON")
    .action((options: CommonOptions & { json?: boolean }) =>
      withApp(options, ({ app }) => {
        const status = ingestStatus(app.deps.db, app.deps.clock);
        process.stdout.write(
          `${options.json ? JSON.stringify(status, null, 2) : formatStatus(status)}\n`,
        );
      }),
    );
}

/** `jobs run ingest`: one round; a failed round is the command's failure. */
export async function ingestJobSummary(app: App): Promise<RoundSummary> {
  const result = await ingestOnce(app);
  if (!result.ok) throw new CliError(result.reason);
  return result.summary;
}

async function runIngest(app: App, options: IngestOptions): Promise<void> {
  const settings = polymarketSettings(app.deps.config);
  const progress = process.stderr.isTTY ? progressLine() : undefined;
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const run = {
    dataUrl: options.dataUrl ?? settings.dataUrl,
    gammaUrl: options.gammaUrl ?? settings.gammaUrl,
    rpcUrl: options.rpcUrl ?? settings.rpcUrl,
    since: options.since,
    signal: stop.signal,
    onPage: progress?.page,
  };
  try {
    if (options.once) {
      const result = await ingestOnce(app, run);
      progress?.clear();
      report(options, result);
      return;
    }
    const loop = await runLiveIngest(polymarketDeps(app), {
      ...run,
      streamUrl: options.streamUrl ?? settings.streamUrl,
      intervalMs: options.interval ?? DEFAULT_INTERVAL_MS,
      onRound: (result, round) => progress?.round(result, round),
    });
    progress?.clear();
    const data = {
      rounds: loop.rounds,
      failures: loop.failures,
      last_error: loop.lastError,
      ...loop.totals,
      stream_trades: loop.stream?.stored ?? null,
      stream_drops: loop.stream?.drops ?? null,
    };
    print(options, data);
  } finally {
    progress?.clear();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

interface BackfillCliOptions extends CommonOptions {
  from: number;
  to?: number;
  rpcUrl?: string;
  gammaUrl?: string;
  json?: boolean;
}

async function runBackfillCli(app: App, options: BackfillCliOptions): Promise<void> {
  const settings = polymarketSettings(app.deps.config);
  if (options.to !== undefined && options.to <= options.from) {
    throw new CliError("--to must be after --from");
  }
  const bar = process.stderr.isTTY ? progressBar() : undefined;
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const result = await runBackfill(polymarketDeps(app), {
      ...settings,
      rpcUrl: options.rpcUrl ?? settings.rpcUrl,
      gammaUrl: options.gammaUrl ?? settings.gammaUrl,
      from: options.from,
      to: options.to ?? null,
      signal: stop.signal,
      onProgress: bar?.update,
    });
    bar?.clear();
    if (!result.ok) throw new CliError(result.reason);
    print(options, {
      resumed: result.resumed,
      from_block: result.state.from_block,
      to_block: result.state.to_block,
      next_block: result.state.next_block,
      complete: result.state.next_block > result.state.to_block,
      trades_new: result.summary.trades_new,
      trades_present: result.summary.trades_present,
      unknown_tokens: result.summary.unknown_tokens,
      quarantined: result.summary.quarantined,
      requests: result.summary.requests,
      stopped: result.summary.stopped,
    });
  } finally {
    bar?.clear();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** A self-updating bar on an interactive stderr: blocks done, fills stored, an ETA from the rate so far. */
function progressBar() {
  const started = Date.now();
  let startBlock: number | null = null;
  let shown = false;
  return {
    update(p: BackfillProgress) {
      startBlock ??= p.next_block;
      const total = p.to_block - p.from_block + 1;
      const done = p.next_block - p.from_block;
      const share = Math.min(1, done / total);
      const rate = (p.next_block - startBlock) / Math.max(1, (Date.now() - started) / 1000);
      const eta = rate > 0 ? formatSeconds((p.to_block + 1 - p.next_block) / rate) : "?";
      const width = 30;
      const filled = Math.round(share * width);
      process.stderr.write(
        `\r\x1b[K[${"#".repeat(filled)}${".".repeat(width - filled)}] ${(share * 100).toFixed(1)}% · block ${p.next_block - 1}/${p.to_block} · +${p.trades_new} fills · ETA ${eta}`,
      );
      shown = true;
    },
    clear() {
      if (shown) process.stderr.write("\r\x1b[K");
      shown = false;
    },
  };
}

function formatSeconds(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function report(options: IngestOptions, result: RoundResult): void {
  print(options, { ok: result.ok, error: result.ok ? null : result.reason, ...result.summary });
  if (!result.ok) throw new CliError(result.reason);
}

function print(options: { json?: boolean }, data: Record<string, unknown>): void {
  const text = options.json
    ? JSON.stringify(data, null, 2)
    : [
        "polymarket ingest:",
        ...Object.entries(data)
          .filter(([key, value]) => value !== null && key !== "ok" && key !== "error")
          .map(([key, value]) => `  ${key.padEnd(20)} ${String(value)}`),
      ].join("\n");
  process.stdout.write(`${text}\n`);
}

/** One self-updating line on an interactive stderr; nothing when stderr is piped. */
function progressLine() {
  let shown = false;
  const write = (text: string) => {
    process.stderr.write(`\r\x1b[K${text}`);
    shown = true;
  };
  return {
    page(p: PageProgress) {
      const s = p.summary;
      const lag = s.lag_seconds === null ? "" : `, lag ${s.lag_seconds}s`;
      write(
        `polymarket: ${p.stage} page ${p.page} (+${p.stored}) · trades +${s.trades_new}, markets +${s.markets_new}, ${s.requests} requests${lag}`,
      );
    },
    round(result: RoundResult, round: number) {
      const s = result.summary;
      const outcome = result.ok ? "ok" : `failed: ${result.reason}`;
      write(
        `polymarket: round ${round} ${outcome} · trades +${s.trades_new}, lag ${s.lag_seconds ?? "?"}s`,
      );
      process.stderr.write("\n");
      shown = false;
    },
    clear() {
      if (shown) process.stderr.write("\r\x1b[K");
      shown = false;
    },
  };
}

function parseInterval(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new InvalidArgumentError("must be a duration such as 30s or 5m");
  return ms;
}

function parseStreamUrl(text: string): string {
  if (text.trim() === "") return "";
  try {
    const url = new URL(text);
    if (url.protocol === "ws:" || url.protocol === "wss:") return text;
  } catch {
    // fall through
  }
  throw new InvalidArgumentError('must be a ws:// or wss:// URL, or "" to turn the stream off');
}

function parseUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.protocol === "http:" || url.protocol === "https:") return text.replace(/\/+$/, "");
  } catch {
    // fall through
  }
  throw new InvalidArgumentError("must be an absolute http(s) URL");
}
