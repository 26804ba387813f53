import { mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Connection } from "../db/open";
import { type DuckDBConnection, sqlIdentifier, sqlString, withEngine } from "./engine";
import { historyDir, historyRelation, partitions } from "./store";

/**
 * `smartmoney export`: fills, bets, wallet stats and markets as Parquet files (zstd) for
 * analysts (docs/operations.md, "Export"). Fills and markets come in the import shape
 * (docs/import.md), so `smartmoney import` reads them back; bets and wallet stats in the read
 * models' shape. Rows stream from SQLite into DuckDB's appender and out through DuckDB's Parquet
 * writer; each file is written beside its final name and renamed into place when whole.
 */

type ColumnType = "VARCHAR" | "BIGINT" | "DOUBLE" | "BOOLEAN" | "TIME";

interface ExportTable {
  file: string;
  columns: readonly (readonly [name: string, type: ColumnType])[];
  /** SQLite: one row per record, the columns in order; `?` bounds are the fill window. */
  sql: string;
  windowed: boolean;
  /**
   * DuckDB, for the fills sealed into the history: the same columns from the relation `h` (the
   * listed files) and `market_keys` (id, condition_id, slug), plus `id` last; the file is then
   * in (timestamp, id) order across both places.
   */
  history?: string;
}

const TABLES: readonly ExportTable[] = [
  {
    file: "fills.parquet",
    columns: [
      ["type", "VARCHAR"],
      ["tx_hash", "VARCHAR"],
      ["log_index", "BIGINT"],
      ["wallet", "VARCHAR"],
      ["condition_id", "VARCHAR"],
      ["market_slug", "VARCHAR"],
      ["outcome", "VARCHAR"],
      ["side", "VARCHAR"],
      ["price", "DOUBLE"],
      ["size", "DOUBLE"],
      ["usd_value", "DOUBLE"],
      ["timestamp", "TIME"],
    ],
    sql: `SELECT 'trade', t.tx_hash, t.log_index, t.wallet, m.condition_id, m.slug, t.outcome,
                 t.side, t.price, t.size, t.usd_value, t.ts, t.id
            FROM trades t JOIN markets m ON m.id = t.market_id
           WHERE t.ts >= ? AND t.ts < ?
           ORDER BY t.ts, t.id`,
    windowed: true,
    history: `SELECT 'trade', '0x' || lower(hex(h.tx_hash)), h.log_index, h.wallet, k.condition_id,
                     k.slug, h.outcome, h.side, h.price, h.size, h.usd_value, h.ts, h.id
                FROM HISTORY h JOIN market_keys k ON k.id = h.market_id
               WHERE h.ts >= $from AND h.ts < $to`,
  },
  {
    file: "markets.parquet",
    columns: [
      ["type", "VARCHAR"],
      ["slug", "VARCHAR"],
      ["title", "VARCHAR"],
      ["category", "VARCHAR"],
      ["condition_id", "VARCHAR"],
      ["end_date", "TIME"],
      ["created_at", "TIME"],
      ["resolved_outcome", "VARCHAR"],
      ["resolved_at", "TIME"],
    ],
    sql: `SELECT 'market', slug, title, category, condition_id, end_date, created_at,
                 resolved_outcome, resolved_at
            FROM markets ORDER BY id`,
    windowed: false,
  },
  {
    file: "bets.parquet",
    columns: [
      ["wallet", "VARCHAR"],
      ["market_slug", "VARCHAR"],
      ["condition_id", "VARCHAR"],
      ["category", "VARCHAR"],
      ["side", "VARCHAR"],
      ["entry_price", "DOUBLE"],
      ["buy_usd", "DOUBLE"],
      ["volume", "DOUBLE"],
      ["yes_flow", "DOUBLE"],
      ["no_flow", "DOUBLE"],
      ["yes_shares", "DOUBLE"],
      ["no_shares", "DOUBLE"],
      ["pnl_base", "DOUBLE"],
      ["trade_count", "BIGINT"],
      ["two_sided", "BOOLEAN"],
      ["first_trade_at", "TIME"],
      ["entry_at", "TIME"],
      ["last_trade_at", "TIME"],
      ["resolved", "BOOLEAN"],
      ["won", "BOOLEAN"],
    ],
    sql: `SELECT w.address, m.slug, m.condition_id, b.category, b.side, b.entry_price, b.buy_usd,
                 b.volume, b.yes_flow, b.no_flow, b.yes_shares, b.no_shares, b.pnl_base,
                 b.trade_count, b.two_sided, b.first_ts, b.entry_ts, b.last_ts, b.resolved, b.won
            FROM wallet_bets b
            JOIN wallet_ids w ON w.id = b.wallet_id
            JOIN markets m ON m.id = b.market_id
           ORDER BY b.wallet_id, b.market_id`,
    windowed: false,
  },
  {
    file: "wallet_stats.parquet",
    columns: [
      ["wallet", "VARCHAR"],
      ["platform_name", "VARCHAR"],
      ["wallet_type", "VARCHAR"],
      ["smart_money_score", "DOUBLE"],
      ["confidence", "DOUBLE"],
      ["trade_count", "BIGINT"],
      ["total_bets", "BIGINT"],
      ["resolved_bets", "BIGINT"],
      ["wins", "BIGINT"],
      ["win_rate", "DOUBLE"],
      ["bayesian_win_rate", "DOUBLE"],
      ["expected_wins", "DOUBLE"],
      ["p_value", "DOUBLE"],
      ["z_score", "DOUBLE"],
      ["counter_consensus_wins", "BIGINT"],
      ["markets_traded", "BIGINT"],
      ["total_volume", "DOUBLE"],
      ["ledger_pnl", "DOUBLE"],
      ["total_pnl", "DOUBLE"],
      ["pnl_source", "VARCHAR"],
      ["pnl_as_of", "TIME"],
      ["first_trade_at", "TIME"],
      ["last_trade_at", "TIME"],
      ["score_breakdown", "VARCHAR"],
    ],
    sql: `SELECT address, platform_name, wallet_type, smart_money_score, confidence, trade_count,
                 total_bets, resolved_bets, wins, win_rate, bayesian_win_rate, expected_wins,
                 p_value, z_score, counter_consensus_wins, markets_traded, total_volume,
                 ledger_pnl, total_pnl, pnl_source, pnl_as_of, first_trade_at, last_trade_at,
                 breakdown
            FROM wallet_stats ORDER BY address`,
    windowed: false,
  },
];

export interface ExportOptions {
  out: string;
  /** Fills at or after this time (epoch ms); bets, wallet stats and markets are exported whole. */
  from?: number;
  /** Fills before this time (epoch ms). */
  to?: number;
  memoryMb: number;
}

export interface ExportedFile {
  file: string;
  path: string;
  rows: number;
  bytes: number;
}

/** Reads through `reader` (one snapshot per table) and writes the four files into `out`. */
export async function exportParquet(
  reader: Connection,
  dbPath: string,
  options: ExportOptions,
): Promise<ExportedFile[]> {
  mkdirSync(options.out, { recursive: true });
  return withEngine({ memoryMb: options.memoryMb }, async (duck) => {
    await duck.run("SET TimeZone = 'UTC'");
    const written: ExportedFile[] = [];
    // One read transaction: the four files are one snapshot, whatever the jobs write meanwhile;
    // the history's files it lists are never changed.
    reader.exec("BEGIN");
    try {
      const history = await historyRelation(duck, reader, historyDir(dbPath), partitions(reader));
      if (history) await stageMarketKeys(reader, duck);
      for (const table of TABLES) {
        written.push(await exportTable(reader, duck, table, options, history));
      }
    } finally {
      reader.exec("COMMIT");
    }
    return written;
  });
}

/** Markets' keys, for the history's fills, which name their market by id. */
async function stageMarketKeys(reader: Connection, duck: DuckDBConnection): Promise<void> {
  await duck.run("CREATE TABLE market_keys (id BIGINT, condition_id VARCHAR, slug VARCHAR)");
  const appender = await duck.createAppender("market_keys");
  for (const [id, conditionId, slug] of reader
    .prepare("SELECT id, condition_id, slug FROM markets")
    .raw()
    .iterate() as Iterable<[number, string, string]>) {
    appender.appendBigInt(BigInt(id));
    appender.appendVarchar(conditionId);
    appender.appendVarchar(slug);
    appender.endRow();
  }
  appender.closeSync();
}

async function exportTable(
  reader: Connection,
  duck: DuckDBConnection,
  table: ExportTable,
  options: ExportOptions,
  history: string | null,
): Promise<ExportedFile> {
  const stage = `stage_${table.file.replace(".parquet", "")}`;
  const columns = table.history ? [...table.columns, ["id", "BIGINT"] as const] : table.columns;
  const definition = columns
    .map(([name, type]) => `${sqlIdentifier(name)} ${type === "TIME" ? "BIGINT" : type}`)
    .join(", ");
  await duck.run(`CREATE OR REPLACE TABLE ${stage} (${definition})`);
  const appender = await duck.createAppender(stage);
  const statement = reader.prepare(table.sql).raw();
  const bounds = table.windowed
    ? [options.from ?? Number.MIN_SAFE_INTEGER, options.to ?? Number.MAX_SAFE_INTEGER]
    : [];
  let rows = 0;
  for (const row of statement.iterate(...bounds) as Iterable<unknown[]>) {
    for (let i = 0; i < columns.length; i++) append(appender, columns[i]![1], row[i]);
    appender.endRow();
    rows++;
  }
  appender.closeSync();
  let order = "";
  if (table.history && history) {
    // Functions, not strings, as replacements: a path may hold `$` patterns.
    const sealed = table.history
      .replace("HISTORY", () => history)
      .replace("$from", () => String(bounds[0]))
      .replace("$to", () => String(bounds[1]));
    const added = await duck.runAndReadAll(`INSERT INTO ${stage} ${sealed}`);
    rows += Number(added.getRowsJS()[0]?.[0] ?? 0);
    // The staged columns, not the select's converted ones of the same name.
    order = ` ORDER BY ${stage}."timestamp", ${stage}.id`;
  }

  const path = join(options.out, table.file);
  const partial = `${path}.partial`;
  const select = table.columns
    .map(([name, type]) => {
      const c = sqlIdentifier(name);
      return type === "TIME" ? `epoch_ms(${c})::TIMESTAMPTZ AS ${c}` : c;
    })
    .join(", ");
  try {
    await duck.run(
      `COPY (SELECT ${select} FROM ${stage}${order}) TO ${sqlString(partial)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    renameSync(partial, path);
  } finally {
    rmSync(partial, { force: true });
    await duck.run(`DROP TABLE ${stage}`);
  }
  return { file: table.file, path, rows, bytes: statSync(path).size };
}

type Appender = Awaited<ReturnType<DuckDBConnection["createAppender"]>>;

function append(appender: Appender, type: ColumnType, value: unknown): void {
  if (value === null || value === undefined) {
    appender.appendNull();
    return;
  }
  switch (type) {
    case "VARCHAR":
      appender.appendVarchar(String(value));
      return;
    case "DOUBLE":
      appender.appendDouble(Number(value));
      return;
    case "BOOLEAN":
      appender.appendBoolean(Number(value) !== 0);
      return;
    case "BIGINT":
    case "TIME":
      appender.appendBigInt(BigInt(value as number | bigint));
      return;
  }
}
