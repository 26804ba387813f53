import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { isStorageFull } from "../db/storage";

/**
 * DuckDB, in-process: the columnar engine that reads and writes Parquet for the fill history,
 * `export`, and Parquet or CSV imports (docs/architecture.md, "Where data lives"). This is the
 * one module that imports DuckDB.
 *
 * Each process opens its own in-memory instance, so no process ever holds a DuckDB file that
 * another one needs. It never fetches anything: extension autoinstall and autoload are off,
 * and Parquet, JSON and ICU are built into the package.
 */

export interface EngineOptions {
  /** DuckDB's memory_limit, MB: the cap on its buffers (sorts and joins spill past it). */
  memoryMb: number;
  /** Worker threads; the default is DuckDB's (one per core). */
  threads?: number;
  /**
   * Reads of a page of rows (src/history/reader.ts): a top-N reads its few rows' columns in the
   * same pass as the filter's, instead of finding them first and reading the file again for them
   * (DuckDB's late materialization, a second scan that cost a sealed page 0.5–2 ms of its 4–8).
   */
  pointReads?: boolean;
}

export interface Engine {
  /** A fresh connection: each concurrent reader gets its own (duckdb-node-neo#235). */
  connect(): Promise<DuckDBConnection>;
  close(): void;
}

export async function openEngine(options: EngineOptions): Promise<Engine> {
  const config: Record<string, string> = {
    memory_limit: `${Math.max(64, Math.floor(options.memoryMb))}MB`,
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    // A sort or join past the memory limit spills here (created on first use) rather than
    // failing; never beside the database, whose disk the operator sized for the data.
    temp_directory: join(tmpdir(), `smartmoney-duckdb-${process.pid}`),
  };
  if (options.threads !== undefined) config.threads = String(options.threads);
  // Loaded on first use: a process that never reads Parquet never loads DuckDB's 70 MB library
  // (in the single binary, never extracts it either: src/history/native.ts).
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const instance = await DuckDBInstance.create(":memory:", config);
  // The history's files never change once listed: their footers are read once per process, not
  // on every query.
  const setup = await instance.connect();
  try {
    await setup.run("SET GLOBAL parquet_metadata_cache = true");
    if (options.pointReads) await setup.run("SET GLOBAL late_materialization_max_rows = 0");
  } finally {
    setup.closeSync();
  }
  return {
    connect: () => instance.connect(),
    close: () => instance.closeSync(),
  };
}

/** Runs `work` on a connection of a short-lived engine, and closes both. */
export async function withEngine<T>(
  options: EngineOptions,
  work: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const engine = await openEngine(options);
  const connection = await engine.connect();
  try {
    return await work(connection);
  } finally {
    connection.closeSync();
    engine.close();
  }
}

/** A SQL string literal. DuckDB's table functions take a path as a constant, not a parameter. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A quoted SQL identifier. */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * True when a write of the engine's, or a file operation around it, failed for want of disk:
 * DuckDB reports it only in its message ("IO Error: Could not write file …: No space left on
 * device"), Node with the code ENOSPC.
 */
export function isDiskFull(error: unknown): boolean {
  return (
    isStorageFull(error) ||
    (error instanceof Error && error.message.includes("No space left on device"))
  );
}

export type {
  DuckDBAppender,
  DuckDBConnection,
  DuckDBPreparedStatement,
  DuckDBValue,
} from "@duckdb/node-api";
