import { extname } from "node:path";
import { type DuckDBConnection, openEngine, sqlIdentifier, sqlString } from "../history/engine";
import { compressionOf, type ImportSource } from "./sources";

/**
 * Parquet and CSV files as import sources (docs/import.md, "Parquet and CSV"). Each row becomes
 * the JSON line it stands for, `type` first, so it passes through the same validation, rules and
 * messages as a JSONL line: a file is imported whole or not at all, rejects go to
 * FILE.rejects.jsonl, and an error names FILE:ROW (rows counted from 1, a CSV's header not
 * counted). DuckDB reads the file: its Parquet reader, and its CSV reader with every column
 * taken as text.
 */

export type TabularFormat = "parquet" | "csv";

/**
 * The format a file's name asks for, or null for JSONL (any other name). A CSV file may be
 * compressed (`.csv.gz`, `.csv.zst`): DuckDB's reader decompresses it (fromFile).
 */
export function tabularFormatOf(path: string): TabularFormat | null {
  const ext = extname(path).toLowerCase();
  if (ext === ".parquet") return "parquet";
  const uncompressed = compressionOf(path) === null ? ext : extname(path.slice(0, -ext.length));
  if (uncompressed.toLowerCase() === ".csv") return "csv";
  return null;
}

/** Fields the interchange format gives as numbers; timestamps may be Unix milliseconds. */
const NUMERIC_FIELDS = new Set([
  "log_index",
  "price",
  "size",
  "usd_value",
  "amount",
  "platform_pnl",
]);
const TIME_FIELDS = new Set([
  "timestamp",
  "end_date",
  "created_at",
  "resolved_at",
  "platform_pnl_as_of",
]);

/**
 * DuckDB's memory cap while reading a file. Rows stream through one chunk at a time, but the
 * Parquet reader holds a row group's column chunks: a million-row group, as pandas and pyarrow
 * write by default, needs about 250 MB uncompressed or in snappy.
 */
export const READ_MEMORY_MB = 512;

export function tabularSource(
  path: string,
  format: TabularFormat,
  name = path,
  options: { memoryMb?: number } = {},
): ImportSource {
  const memoryMb = options.memoryMb ?? READ_MEMORY_MB;
  // No size: progress counts the rows' JSON text, which is not the file's bytes.
  return { name, open: () => readRows(path, format, memoryMb) };
}

async function* readRows(
  path: string,
  format: TabularFormat,
  memoryMb: number,
): AsyncGenerator<string> {
  const engine = await openEngine({ memoryMb, threads: 1 });
  const connection = await engine.connect();
  const failed = rejectUnreadable(path, format);
  try {
    const sql = await rowsAsJsonSql(connection, path, format);
    const result = await connection.stream(sql).catch(failed);
    let read = 0;
    for (;;) {
      const chunk = await result.fetchChunk().catch(failed);
      if (chunk === null || chunk.rowCount === 0) break;
      read += chunk.rowCount;
      for (const [json] of chunk.getRows()) yield String(json);
    }
    // A streamed result that fails part-way (out of memory in a large row group) ends as if it
    // were done: the C API's fetch answers "no more rows" for both, and @duckdb/node-api does not
    // read the error. Only a count says whether every row came: the import refuses the file
    // (all or nothing) rather than keep the part that was read.
    const rows = await rowCount(connection, path, format).catch(failed);
    if (read !== rows) {
      throw unreadable(
        path,
        format,
        `the reader stopped after ${read} of its ${rows} rows, most likely for want of memory (${memoryMb} MB): write it with smaller row groups`,
      );
    }
  } finally {
    // Also when the importer stops early (a refused file): the engine goes with the read.
    connection.closeSync();
    engine.close();
  }
}

/** The rows in the file: a Parquet file's footer says; a CSV file is counted by a read of its own. */
async function rowCount(
  connection: DuckDBConnection,
  path: string,
  format: TabularFormat,
): Promise<number> {
  const sql =
    format === "parquet"
      ? `SELECT coalesce(sum(num_rows), 0) FROM parquet_file_metadata(${sqlString(path)})`
      : `SELECT count(*) FROM ${fromFile(path, format)}`;
  const [row] = (await connection.runAndReadAll(sql)).getRows();
  return Number(row?.[0]);
}

/**
 * The file as DuckDB reads it: Parquet typed; CSV with every column as text, decompressed as its
 * name says (DuckDB's own guess from the name misses `.GZ`).
 */
function fromFile(path: string, format: TabularFormat): string {
  if (format === "parquet") return `read_parquet(${sqlString(path)})`;
  const compression = compressionOf(path) ?? "none";
  return `read_csv(${sqlString(path)}, header = true, all_varchar = true, auto_detect = true, compression = ${sqlString(compression)})`;
}

/** A `.catch` handler: DuckDB's failure to read the file, as the import reports it (unreadable). */
function rejectUnreadable(path: string, format: TabularFormat) {
  return (error: unknown): Promise<never> => Promise.reject(unreadable(path, format, error));
}

function unreadable(path: string, format: TabularFormat, error: unknown): Error {
  const first = (error instanceof Error ? error.message : String(error)).split("\n")[0];
  return new Error(`${path}: cannot read it as ${format === "csv" ? "CSV" : "Parquet"}: ${first}`);
}

/**
 * One JSON object a row, `type` first, then the file's other columns in order. Parquet's typed
 * columns become what a JSONL line would hold: a timestamp its Unix milliseconds, a date its
 * ISO text, a decimal a number. CSV's text columns stay text but for the fields the format
 * gives as numbers, which are read as numbers when they are written as one.
 */
async function rowsAsJsonSql(
  connection: DuckDBConnection,
  path: string,
  format: TabularFormat,
): Promise<string> {
  const from = fromFile(path, format);
  const described = await connection
    .runAndReadAll(`DESCRIBE SELECT * FROM ${from}`)
    .catch(rejectUnreadable(path, format));
  const columns = described.getRowObjectsJS().map((row) => ({
    name: String(row.column_name),
    type: String(row.column_type),
  }));
  const type = columns.find((c) => c.name === "type");
  if (type === undefined) throw new Error(`${path}: has no "type" column (docs/import.md)`);
  const ordered = [type, ...columns.filter((c) => c !== type)];
  const pairs = ordered.map(
    (c) => `${sqlString(c.name)}, ${format === "parquet" ? typedValue(c) : textValue(c.name)}`,
  );
  return `SELECT json_object(${pairs.join(", ")})::VARCHAR FROM ${from}`;
}

function typedValue(column: { name: string; type: string }): string {
  const c = sqlIdentifier(column.name);
  if (column.type.startsWith("TIMESTAMP")) return `epoch_ms(${c})`;
  if (column.type === "DATE") return `strftime(${c}, '%Y-%m-%d')`;
  if (/^(DECIMAL|FLOAT|HUGEINT|UHUGEINT)/.test(column.type)) return `CAST(${c} AS DOUBLE)`;
  return c;
}

function textValue(name: string): string {
  const c = sqlIdentifier(name);
  if (!NUMERIC_FIELDS.has(name) && !TIME_FIELDS.has(name)) return c;
  const integer = `regexp_full_match(${c}, '-?[0-9]{1,15}')`;
  const decimal = `regexp_full_match(${c}, '-?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?')`;
  if (TIME_FIELDS.has(name)) {
    return `CASE WHEN ${integer} THEN to_json(CAST(${c} AS BIGINT)) ELSE to_json(${c}) END`;
  }
  return `CASE WHEN ${integer} THEN to_json(CAST(${c} AS BIGINT)) WHEN ${decimal} THEN to_json(CAST(${c} AS DOUBLE)) ELSE to_json(${c}) END`;
}
