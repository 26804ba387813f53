/**
 * `npm run bench:history`: the ceiling of a bulk path that writes fills straight into the
 * Parquet history through DuckDB, against the import path of today (one SQLite row and its
 * indexes per fill), on the same generated files in the same run. It answers how fast the design
 * of docs/architecture.md ("Where data lives") could load history before that path is built:
 *
 * - today: `importJsonl` of the JSONL file into an empty migrated database (the fill indexes
 *   built after the load, as for a first import), the baseline;
 * - DuckDB, JSONL: read_json with the interchange columns, every trade line's checks in SQL,
 *   duplicates dropped (within the file, and against every fill already in the history by
 *   (tx_hash, log_index)), one zstd Parquet file written;
 * - DuckDB, Parquet: the same from the file as Parquet;
 * - the bets: every (wallet, market, outcome, side) total of the history, the full rebuild's
 *   first grouping.
 *
 *   npm run bench:history -- [--fills 1000000] [--existing 10000000] [--order time|shuffled]
 *                            [--hashes random|sequential] [--memory-mb 1024]
 *
 * Prints one JSON object (also bench/results/history.json and a line of history.jsonl); nothing
 * here is product code.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { systemClock } from "../src/clock";
import { openDb } from "../src/db/open";
import { sqlString, withEngine } from "../src/history/engine";
import { importJsonl } from "../src/ingest/import";
import { fileSource } from "../src/ingest/sources";
import { migrate } from "../src/migrations/migrate";
import { peakRssMb } from "./lib/peak-rss";
import { randomHex, uniform } from "./lib/random";
import { recordResults } from "./lib/results";

const { values } = parseArgs({
  options: {
    fills: { type: "string", default: "1000000" },
    existing: { type: "string", default: "10000000" },
    order: { type: "string", default: "time" },
    hashes: { type: "string", default: "random" },
    "memory-mb": { type: "string", default: "1024" },
  },
});
const FILLS = Number(values.fills);
const EXISTING = Number(values.existing);
const MEMORY_MB = Number(values["memory-mb"]);
const say = (line: string) => process.stderr.write(`${line}\n`);

const MARKETS = 2_000;
const WALLETS = 200_000;
const condition = (m: number) => `0x${(m + 1).toString(16).padStart(64, "0")}`;

function writeFiles(dir: string): string {
  const rand = uniform(7);
  const path = join(dir, "fills.jsonl");
  const lines: string[] = [];
  for (let m = 0; m < MARKETS; m++) {
    lines.push(
      JSON.stringify({
        type: "market",
        slug: `m-${m}`,
        title: `Market ${m}?`,
        category: "crypto",
        condition_id: condition(m),
        end_date: 1_800_000_000_000,
        created_at: 1_700_000_000_000,
      }),
    );
  }
  const start = 1_780_000_000_000;
  const order = Array.from({ length: FILLS }, (_, i) => i);
  if (values.order === "shuffled") {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
  }
  for (const i of order) {
    const txHash =
      values.hashes === "sequential"
        ? `0x${(i + 1).toString(16).padStart(64, "0")}`
        : randomHex(rand, 64);
    const price = Math.round((0.02 + rand() * 0.96) * 1000) / 1000;
    const size = Math.round((1 + rand() * 500) * 100) / 100;
    lines.push(
      `{"type":"trade","tx_hash":"${txHash}","log_index":${i % 7},"wallet":"0x${Math.floor(
        rand() * WALLETS,
      )
        .toString(16)
        .padStart(
          40,
          "a",
        )}","condition_id":"${condition(Math.floor(rand() * MARKETS))}","outcome":"${rand() < 0.5 ? "YES" : "NO"}","side":"${rand() < 0.7 ? "BUY" : "SELL"}","price":${price},"size":${size},"timestamp":${start + i * 100}}`,
    );
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

const TRADE_COLUMNS = `{type: 'VARCHAR', tx_hash: 'VARCHAR', log_index: 'BIGINT', wallet: 'VARCHAR',
  condition_id: 'VARCHAR', outcome: 'VARCHAR', side: 'VARCHAR', price: 'DOUBLE', size: 'DOUBLE',
  usd_value: 'DOUBLE', timestamp: 'BIGINT'}`;

/** The trade line's checks (src/ingest/lines.ts), as one SQL predicate. */
const VALID = `type = 'trade'
  AND regexp_full_match(tx_hash, '0x[0-9a-fA-F]{64}') AND log_index >= 0
  AND regexp_full_match(wallet, '0x[0-9a-fA-F]{40}')
  AND outcome IN ('YES', 'NO') AND side IN ('BUY', 'SELL')
  AND price BETWEEN 0 AND 1 AND size > 0 AND coalesce(usd_value, 0) >= 0
  AND timestamp BETWEEN 100000000000 AND 10000000000000`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-bench-history-"));
  try {
    let t = performance.now();
    const jsonl = writeFiles(dir);
    say(
      `wrote ${FILLS.toLocaleString("en-US")} fills (${values.order}, ${values.hashes} hashes) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );

    // Today's path, the baseline: a first import into an empty database.
    const db = openDb(join(dir, "today.db"));
    migrate(db.writer);
    t = performance.now();
    const imported = await importJsonl({ db, clock: systemClock }, fileSource(jsonl));
    const todaySeconds = (performance.now() - t) / 1000;
    if (!imported.ok)
      throw new Error(`${imported.reason}: ${JSON.stringify(imported.errors.slice(0, 3))}`);
    db.close();
    const todayBytes = statSync(join(dir, "today.db")).size;
    say(`today's import: ${todaySeconds.toFixed(1)} s`);

    const result = await withEngine({ memoryMb: MEMORY_MB }, async (duck) => {
      // The history already stored: EXISTING fills in one file.
      t = performance.now();
      const existing = join(dir, "existing.parquet");
      await duck.run(`COPY (
          SELECT i AS id, sha256(i::VARCHAR)::BLOB AS tx_hash, i % 7 AS log_index,
                 '0x' || lpad(printf('%x', hash(i) % ${WALLETS}), 40, '0') AS wallet,
                 hash(i * 3) % ${MARKETS} AS market_id,
                 CASE WHEN hash(i * 5) % 2 = 0 THEN 'YES' ELSE 'NO' END AS outcome,
                 CASE WHEN hash(i * 7) % 10 < 7 THEN 'BUY' ELSE 'SELL' END AS side,
                 round(0.02 + (hash(i * 11) % 960) / 1000.0, 3) AS price,
                 round(1 + (hash(i * 13) % 50000) / 100.0, 2) AS size,
                 0.0 AS usd_value, 1700000000000 + i * 100 AS ts
            FROM range(${EXISTING}) r(i))
        TO ${sqlString(existing)} (FORMAT parquet, COMPRESSION zstd)`);
      say(
        `wrote the existing history (${EXISTING.toLocaleString("en-US")} fills) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );

      async function load(
        source: string,
        out: string,
      ): Promise<{ seconds: number; rows: number; invalid: number }> {
        const started = performance.now();
        await duck.run(`CREATE OR REPLACE TEMP TABLE incoming AS
          SELECT * FROM ${source} WHERE type = 'trade'`);
        const invalid = Number(
          (
            await duck.runAndReadAll(`SELECT count(*) FROM incoming WHERE NOT (${VALID})`)
          ).getRowsJS()[0]![0],
        );
        await duck.run(`COPY (
            SELECT unhex(substr(lower(i.tx_hash), 3)) AS tx_hash, i.log_index, lower(i.wallet) AS wallet,
                   i.condition_id, i.outcome, i.side, i.price, i.size,
                   coalesce(i.usd_value, i.price * i.size) AS usd_value, i.timestamp AS ts
              FROM (SELECT DISTINCT ON (tx_hash, log_index) * FROM incoming) i
              ANTI JOIN read_parquet(${sqlString(existing)}) h
                ON h.tx_hash = unhex(substr(lower(i.tx_hash), 3)) AND h.log_index = i.log_index
             ORDER BY i.timestamp)
          TO ${sqlString(out)} (FORMAT parquet, COMPRESSION zstd)`);
        const rows = Number(
          (
            await duck.runAndReadAll(`SELECT count(*) FROM read_parquet(${sqlString(out)})`)
          ).getRowsJS()[0]![0],
        );
        return { seconds: (performance.now() - started) / 1000, rows, invalid };
      }

      const fromJsonl = await load(
        `read_json(${sqlString(jsonl)}, format = 'newline_delimited', columns = ${TRADE_COLUMNS})`,
        join(dir, "from-jsonl.parquet"),
      );
      say(`DuckDB from JSONL: ${fromJsonl.seconds.toFixed(1)} s`);
      const asParquet = join(dir, "input.parquet");
      await duck.run(`COPY (SELECT * FROM read_json(${sqlString(jsonl)}, format = 'newline_delimited', columns = ${TRADE_COLUMNS}) WHERE type = 'trade')
        TO ${sqlString(asParquet)} (FORMAT parquet, COMPRESSION zstd)`);
      const fromParquet = await load(
        `read_parquet(${sqlString(asParquet)})`,
        join(dir, "from-parquet.parquet"),
      );
      say(`DuckDB from Parquet: ${fromParquet.seconds.toFixed(1)} s`);

      t = performance.now();
      const bets = Number(
        (
          await duck.runAndReadAll(`SELECT count(*) FROM (
            SELECT wallet, market_id, outcome, side, sum(size) AS shares, sum(price * size) AS notional,
                   sum(usd_value) AS usd, count(*) AS fills, min(ts) AS first_ts, max(ts) AS last_ts
              FROM read_parquet(${sqlString(existing)}) GROUP BY ALL)`)
        ).getRowsJS()[0]![0],
      );
      const betsSeconds = (performance.now() - t) / 1000;
      say(`bets over the existing history: ${betsSeconds.toFixed(1)} s`);
      return {
        existing_bytes_per_fill: +(statSync(existing).size / EXISTING).toFixed(1),
        duckdb_jsonl: {
          ...fromJsonl,
          fills_per_second: Math.round(FILLS / fromJsonl.seconds),
          bytes_per_fill: +(
            statSync(join(dir, "from-jsonl.parquet")).size / fromJsonl.rows
          ).toFixed(1),
        },
        duckdb_parquet: {
          ...fromParquet,
          fills_per_second: Math.round(FILLS / fromParquet.seconds),
        },
        bets: { groups: bets, seconds: +betsSeconds.toFixed(2) },
      };
    });

    const todayRate = FILLS / todaySeconds;
    const report = {
      fills: FILLS,
      existing_history_fills: EXISTING,
      order: values.order,
      hashes: values.hashes,
      memory_mb: MEMORY_MB,
      today: {
        seconds: +todaySeconds.toFixed(1),
        fills_per_second: Math.round(todayRate),
        bytes_per_fill: +(todayBytes / FILLS).toFixed(1),
      },
      ...result,
      ratio_jsonl_to_today: +(result.duckdb_jsonl.fills_per_second / todayRate).toFixed(2),
      ratio_parquet_to_today: +(result.duckdb_parquet.fills_per_second / todayRate).toFixed(2),
      peak_rss_mb: peakRssMb(),
    };
    console.log(JSON.stringify(report, null, 2));
    recordResults("history", report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
