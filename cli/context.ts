import { existsSync, statSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { type App, createApp } from "../src/app";
import { type Clock, systemClock } from "../src/clock";
import { type Config, type ConfigFlags, loadConfig, SETTINGS } from "../src/config";
import { type Db, openDb } from "../src/db/open";
import { type InstallationKey, loadInstallationKey } from "../src/installation/key";
import { INSTANT_FORMS, parseInstant } from "../src/instant";
import { createLog, type Log } from "../src/log";
import { migrate } from "../src/migrations/migrate";
import { CliError } from "./errors";
import { withMigrationProgress } from "./progress";

/** Options every command accepts that touch configuration. */
export interface CommonOptions extends ConfigFlags {
  json?: boolean;
}

export function configFrom(options: ConfigFlags): Config {
  const result = loadConfig(process.env, options);
  if (!result.ok) {
    throw new CliError(`invalid configuration: ${result.problems.join("; ")}`);
  }
  return result.config;
}

export interface Session {
  app: App;
  db: Db;
  config: Config;
  log: Log;
  /** The installation key, checked against the id the database recorded. */
  key: InstallationKey;
}

/**
 * Opens the database (migrating it first), builds the app, runs `work`, and always closes both:
 * each CLI command is one short session on the same app the server uses.
 */
export async function withApp<T>(
  options: CommonOptions,
  work: (session: Session) => Promise<T> | T,
  clock: Clock = systemClock,
): Promise<T> {
  const config = configFrom(options);
  const log = createLog(config.logLevel);
  const db = openDatabase(config.dbPath);
  try {
    withMigrationProgress((onProgress) => migrate(db.writer, { onProgress }));
    const key = checkInstallationKey(db);
    const app = createApp({
      db,
      config,
      clock,
      log,
      fetch: globalThis.fetch,
      secretKey: key.key,
    });
    try {
      return await work({ app, db, config, log, key });
    } finally {
      app.close();
    }
  } finally {
    db.close();
    log.flush();
  }
}

/** Before anything else touches the data: a wrong or missing key refuses the start. */
export function checkInstallationKey(db: Db): InstallationKey {
  try {
    return loadInstallationKey(db, process.env);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

export function openDatabase(path: string): Db {
  try {
    return openDb(path);
  } catch (error) {
    throw new CliError(`cannot open database ${path}: ${(error as Error).message}`);
  }
}

type SettingEnv = (typeof SETTINGS)[number]["env"];

/**
 * A commander option for a setting's flag: the flag's name comes from the settings table
 * (src/config.ts), and its help names the variable it overrides.
 */
export function settingFlag(env: SettingEnv, argument: string, help: string): [string, string] {
  const flag = SETTINGS.find((setting) => setting.env === env)?.flag;
  if (!flag) throw new Error(`${env} has no command-line flag`);
  return [`${flag.name} <${argument}>`, `${help} (${env})`];
}

/**
 * An `--out` directory (created when missing), refused in one line when a file has its name:
 * otherwise mkdir's EEXIST comes out, after the command's work.
 */
export function outDirectory(path: string): string {
  if (existsSync(path) && !statSync(path).isDirectory()) {
    throw new CliError(`--out ${path}: a file is there; name a directory`);
  }
  return path;
}

/** Adds the flags every command shares. */
export function withDbOption(command: Command): Command {
  return command
    .option(...settingFlag("SMARTMONEY_DB", "path", "SQLite database file"))
    .option(...settingFlag("SMARTMONEY_LOG_LEVEL", "level", "log level"));
}

export function print(options: CommonOptions, data: unknown, human: () => string): void {
  process.stdout.write(options.json ? `${JSON.stringify(data, null, 2)}\n` : `${human()}\n`);
}

/** Rows as JSON with --json, else as a table of the given columns. */
export function printTable(
  options: CommonOptions,
  rows: Record<string, unknown>[],
  columns: string[],
): void {
  print(options, rows, () => table(rows, columns));
}

/** A plain, aligned text table for humans. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return "(none)";
  const cells = rows.map((row) => columns.map((c) => formatCell(row[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(columns), ...cells.map(line)].join("\n");
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "number" && value > 1e12 && value < 1e14)
    return new Date(value).toISOString();
  return String(value);
}

/** Commander's parser for an option that takes a whole number from `min` to `max`. */
export function parseInteger(min: number, max: number) {
  return (text: string) => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new InvalidArgumentError(`"${text}" must be a whole number from ${min} to ${max}`);
    }
    return Number(text);
  };
}

/**
 * Commander's parser for an option that takes an instant: the API's parser (src/instant.ts), so
 * `--since` accepts exactly what /v1/trades' `start` does, and refuses the rest in one line.
 */
export function instantArgument(text: string): number {
  const ms = parseInstant(text);
  if (!Number.isFinite(ms)) {
    throw new InvalidArgumentError(
      `"${text}" must be ${INSTANT_FORMS} such as 2026-11-01T00:00:00Z`,
    );
  }
  return ms;
}

/**
 * A clock that starts at `iso` and runs on in real time. A recorded world (a benchmark's fixture
 * world, a database imported months ago) is served as of its own time, so its period windows hold
 * data; webhook signatures and rate-limit windows then follow that clock too.
 */
export function clockFrom(text: string): Clock {
  const start = parseInstant(text);
  if (!Number.isFinite(start)) {
    throw new CliError(
      `--now must be ${INSTANT_FORMS} such as 2026-11-01T00:00:00Z, not "${text}"`,
    );
  }
  const origin = performance.now();
  return { now: () => start + Math.floor(performance.now() - origin) };
}
