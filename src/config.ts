import { Cron } from "croner";
import * as v from "valibot";
import { MIN_FILL_RETENTION_MS } from "./domain";
import { parseDuration } from "./duration";
import { parseReplicaUrl } from "./replication/replica-url";
import { parseSecretKey } from "./webhooks/secrets";

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Values given on the command line; they override the environment. */
export interface ConfigFlags {
  db?: string;
  host?: string;
  port?: string | number;
  publicUrl?: string;
  logLevel?: string;
  shutdownGrace?: string;
  replicate?: string;
}

/**
 * A setting's value schema: from the text given (or the default) to the value the code uses.
 * Built with the setting's label ("SMARTMONEY_PORT/--port"), so each refusal is the whole line
 * an operator reads.
 */
type ValueSchema<T> = (label: string) => v.GenericSchema<string, T>;

interface Setting<E extends string, F extends string | null, T> {
  env: E;
  /** The Config field the value lands in; null for a setting only checked here (the secret key). */
  field: F;
  /** The command-line flag that overrides the variable, and which ConfigFlags key carries it. */
  flag?: { name: string; option: keyof ConfigFlags; only?: string };
  /** The text used when the variable is unset or empty. */
  default: string;
  /** How docs/configuration.md shows the default, where not the text itself. */
  shown?: string;
  /** docs/configuration.md's "meaning" column. */
  doc: string;
  value: ValueSchema<T>;
}

const setting = <E extends string, F extends string | null, T>(s: Setting<E, F, T>) => s;

/** A refusal that quotes the text given: `LABEL: "text" rule`. */
const quoting =
  (label: string, rule: string) =>
  (issue: { input: unknown }): string =>
    `${label}: "${String(issue.input)}" ${rule}`;

const nonEmpty: ValueSchema<string> = (label) =>
  v.pipe(
    v.string(),
    v.check((s) => s.trim() !== "", `${label}: must not be empty`),
  );

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

const withoutTrailingSlashes = (text: string) => text.replace(/\/+$/, "");

/** Empty gives null: the feature is off. */
const emptyIsNull = (s: string) => (s === "" ? null : s);

/** An absolute http(s) URL, trailing slashes dropped; empty gives null. */
const httpUrl: ValueSchema<string | null> = (label) =>
  v.pipe(
    v.string(),
    v.check((s) => s === "" || isHttpUrl(s), quoting(label, "is not an absolute http(s) URL")),
    v.transform((s) => (s === "" ? null : withoutTrailingSlashes(s))),
  );

/** An http(s) URL that always has a value (its default is one). */
const requiredHttpUrl: ValueSchema<string> = (label) =>
  v.pipe(
    httpUrl(label),
    v.transform((url) => url ?? ""),
  );

const duration = (rule: string, positive: boolean): ValueSchema<number> => {
  return (label) =>
    v.pipe(
      v.string(),
      v.check(
        (s) => {
          const ms = parseDuration(s);
          return ms !== undefined && (!positive || ms > 0);
        },
        quoting(label, rule),
      ),
      v.transform((s) => parseDuration(s)!),
    );
};

function cronProblem(pattern: string): string | undefined {
  try {
    new Cron(pattern, { paused: true }).stop();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A cron pattern; empty gives null where the schedule may be off. */
const cron: ValueSchema<string | null> = (label) =>
  v.pipe(
    v.string(),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed || dataset.value === "") return;
      const problem = cronProblem(dataset.value);
      if (problem !== undefined) {
        addIssue({ message: `${label}: "${dataset.value}" is not a cron pattern (${problem})` });
      }
    }),
    v.transform(emptyIsNull),
  );

/**
 * Every setting, in the order problems are reported: its variable, flag, default, meaning and
 * value schema. loadConfig reads this table, the Config type is inferred from it, and
 * docs/configuration.md's table is generated from it (npm run docs).
 */
export const SETTINGS = [
  setting({
    env: "SMARTMONEY_DB",
    field: "dbPath",
    flag: { name: "--db", option: "db" },
    default: "./data/smartmoney.db",
    doc: "SQLite database file (WAL mode; created with its folder on first use)",
    value: nonEmpty,
  }),
  setting({
    env: "SMARTMONEY_HOST",
    field: "host",
    flag: { name: "--host", option: "host" },
    default: "127.0.0.1",
    doc: "listen address",
    value: nonEmpty,
  }),
  setting({
    env: "SMARTMONEY_PORT",
    field: "port",
    flag: { name: "--port", option: "port" },
    default: "8080",
    doc: "listen port (0 = pick a free port and print it)",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => /^\d+$/.test(s) && Number(s) <= 65535,
          quoting(label, "is not a port number (0-65535)"),
        ),
        v.transform(Number),
      ),
  }),
  setting({
    env: "SMARTMONEY_PUBLIC_URL",
    // Null here; loadConfig puts in http://HOST:PORT (and `serve` the real port).
    field: "publicUrl",
    flag: { name: "--public-url", option: "publicUrl" },
    default: "",
    shown: "http://HOST:PORT",
    doc: "base for `profileUrl` in webhook payloads and the OpenAPI `servers` entry",
    value: httpUrl,
  }),
  setting({
    env: "SMARTMONEY_WEBHOOK_BACKOFF",
    // Waits after failures 1..n; a delivery gets n + 1 attempts.
    field: "webhookBackoffMs",
    default: "5s,30s,5m",
    doc: "waits after failures 1..n; a delivery gets n + 1 attempts",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => s.split(",").every((part) => parseDuration(part) !== undefined),
          quoting(label, "must be a comma-separated list of durations such as 5s,30s,5m"),
        ),
        v.transform((s) => s.split(",").map((part) => parseDuration(part)!)),
      ),
  }),
  setting({
    env: "SMARTMONEY_WEBHOOK_TIMEOUT",
    field: "webhookTimeoutMs",
    default: "10s",
    doc: "per-attempt timeout",
    value: duration("must be a positive duration such as 10s", true),
  }),
  setting({
    env: "SMARTMONEY_ALERT_MAX_AGE",
    // A fill older than this when it is stored (a backfill, an import of history) still records
    // its signal, but queues no webhook delivery: customers are alerted to news, not history.
    field: "alertMaxAgeMs",
    default: "10m",
    doc: "a fill older than this when stored fires its signal but queues no webhook delivery (a backfill or an import of history alerts nobody); a few minutes past the live ingest's lag",
    value: duration("must be a positive duration such as 10m", true),
  }),
  setting({
    env: "SMARTMONEY_WEBHOOK_ALLOW_PRIVATE",
    field: "webhookAllowPrivate",
    default: "0",
    doc: "1 = development only: allow `http://` and loopback/private webhook targets; warns loudly at start",
    value: (label) =>
      v.pipe(
        v.picklist(["0", "1"], quoting(label, "must be 0 or 1")),
        v.transform((s) => s === "1"),
      ),
  }),
  setting({
    env: "SMARTMONEY_SHUTDOWN_GRACE",
    // How long `serve` lets requests in flight finish after SIGTERM before it cuts them off.
    field: "shutdownGraceMs",
    flag: { name: "--shutdown-grace", option: "shutdownGrace" },
    default: "10s",
    doc: "on SIGTERM/SIGINT, how long requests in flight may finish before they are cut off (operations.md)",
    value: duration("must be a duration such as 10s (0s = cut requests off at once)", false),
  }),
  setting({
    env: "SMARTMONEY_REFRESH_CRON",
    field: "refreshCron",
    default: "*/1 * * * *",
    shown: "`*/1 * * * *`",
    doc: "read-model refresh schedule (cron)",
    value: (label) =>
      v.pipe(
        cron(label),
        v.transform((s) => s ?? ""),
      ),
  }),
  setting({
    env: "SMARTMONEY_INGEST_CRON",
    field: "ingestCron",
    default: "",
    shown: "(off)",
    doc: "Polymarket ingest schedule (cron); empty = off",
    value: cron,
  }),
  setting({
    env: "SMARTMONEY_LOG_LEVEL",
    field: "logLevel",
    flag: { name: "--log-level", option: "logLevel" },
    default: "info",
    doc: `structured JSON logs to stderr: ${LOG_LEVELS.join(", ")}`,
    value: (label) =>
      v.picklist(LOG_LEVELS, quoting(label, `must be one of ${LOG_LEVELS.join(", ")}`)),
  }),
  setting({
    env: "SMARTMONEY_WHALE_SIGNAL_USD",
    // A trade of at least this much USD fires a whale signal.
    field: "whaleSignalUsd",
    default: "10000",
    doc: "a trade of at least this many USD fires a whale signal",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => /^\d+(\.\d+)?$/.test(s) && Number(s) > 0,
          quoting(label, "must be a positive USD amount"),
        ),
        v.transform(Number),
      ),
  }),
  setting({
    env: "SMARTMONEY_MEMORY_MB",
    // The memory, MB, a bulk load (import, seed) plans its page cache within (src/db/cache.ts),
    // and the bulk commands and serve's jobs process their V8 heap (src/heap.ts).
    field: "memoryMb",
    default: "1024",
    doc: "memory, MB, a bulk load (import, seed) plans within: its page cache is a quarter of it (at most a quarter of the machine), with the memory map off, and an import holds at most 1,024 trades of past markets a MB (operations.md#importing-past-markets); the bulk commands (import, seed, ingest, jobs, migrate, export, backtest) and serve's jobs process cap V8's old generation at half of it (operations.md)",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => /^\d+$/.test(s) && Number(s) >= 256,
          quoting(label, "must be a whole number of MB, 256 or more"),
        ),
        v.transform(Number),
      ),
  }),
  setting({
    env: "SMARTMONEY_POLYMARKET_DATA_URL",
    field: "polymarketDataUrl",
    default: "https://data-api.polymarket.com",
    doc: "Polymarket data API (trades, leaderboard) for `ingest polymarket`",
    value: requiredHttpUrl,
  }),
  setting({
    env: "SMARTMONEY_POLYMARKET_GAMMA_URL",
    field: "polymarketGammaUrl",
    default: "https://gamma-api.polymarket.com",
    doc: "Polymarket Gamma API (markets)",
    value: requiredHttpUrl,
  }),
  setting({
    env: "SMARTMONEY_POLYGON_RPC_URL",
    // With an RPC URL, fills come from chain logs; without, from the data API.
    field: "polygonRpcUrl",
    default: "",
    shown: "(none)",
    doc: "a Polygon JSON-RPC URL; when set, fills and funding transfers come from chain logs (both exchange eras) instead of the data API",
    value: httpUrl,
  }),
  setting({
    env: "SMARTMONEY_POLYMARKET_STREAM_URL",
    // Polymarket's Real-Time Data Socket; null turns the live stream off.
    field: "polymarketStreamUrl",
    default: "wss://ws-live-data.polymarket.com",
    doc: "the live trade socket used while ingest runs (empty turns it off); see [docs/ingest.md](ingest.md)",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => {
            if (s === "") return true;
            try {
              const scheme = new URL(s).protocol;
              return scheme === "ws:" || scheme === "wss:";
            } catch {
              return false;
            }
          },
          quoting(label, "is not a ws:// or wss:// URL (empty turns the stream off)"),
        ),
        v.transform(emptyIsNull),
      ),
  }),
  setting({
    env: "SMARTMONEY_FILL_RETENTION",
    // Off (null) by default: every fill is kept. See src/refresh/retention.ts.
    field: "fillRetentionMs",
    default: "",
    shown: "(off)",
    doc: "compact markets resolved (and last traded) longer ago than this after each scheduled refresh: their fills move to the Parquet fill history beside the database and their read-model rows are frozen, and an import writes such markets' fills there directly; at least 720h. Which answers lose detail: [docs/operations.md](operations.md#fill-retention-and-the-fill-history)",
    value: (label) =>
      v.pipe(
        v.string(),
        v.check(
          (s) => {
            if (s === "") return true;
            const ms = parseDuration(s);
            return ms !== undefined && ms >= MIN_FILL_RETENTION_MS;
          },
          quoting(
            label,
            "must be a duration of at least 720h (30 days) such as 2160h (90 days), or empty for off",
          ),
        ),
        v.transform((s) => (s === "" ? null : parseDuration(s)!)),
      ),
  }),
  setting({
    env: "SMARTMONEY_FUNDING_HORIZON",
    // How far before a new wallet's first fill its inbound funding is read (chain source).
    field: "fundingHorizonMs",
    default: "720h",
    doc: "with an RPC URL: how far before a new wallet's first fill its inbound USDC/pUSD funding is read",
    value: duration("must be a positive duration such as 720h (30 days)", true),
  }),
  setting({
    env: "SMARTMONEY_METRICS_TOKEN",
    // Bearer token for GET /metrics; null leaves the endpoint off (404).
    field: "metricsToken",
    default: "",
    shown: "(none)",
    doc: "bearer token for `GET /metrics` (ingest health, Prometheus text); unset, the endpoint answers 404",
    value: (label) =>
      v.pipe(
        v.string(),
        // The token is a secret: the refusal does not quote it.
        v.check(
          (s) => s === "" || s.length >= 16,
          `${label}: must be at least 16 characters (empty turns /metrics off)`,
        ),
        v.transform(emptyIsNull),
      ),
  }),
  setting({
    env: "SMARTMONEY_SECRET_KEY",
    // Read where the key is loaded (src/installation/key.ts); checked here with the rest.
    field: null,
    default: "",
    shown: "`<db>.key`",
    doc: "the installation's 32-byte secret (64 hex characters or base64): encrypts webhook secrets at rest and signs page cursors. When unset, a key file is created once beside the database (mode 0600); every process checks it against the key id the database records; `backup` copies it ([docs/operations.md](operations.md))",
    value: () =>
      v.pipe(
        v.string(),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed || dataset.value === "") return;
          const parsed = parseSecretKey(dataset.value);
          if (!parsed.ok) addIssue({ message: parsed.reason });
        }),
      ),
  }),
  setting({
    env: "SMARTMONEY_REPLICA_URL",
    // Where `serve` streams the database with Litestream; null: no replication.
    field: "replica",
    flag: { name: "--replicate", option: "replicate", only: "serve" },
    default: "",
    shown: "(none)",
    doc: "stream the database to an S3-compatible bucket (`s3://BUCKET/PATH[?endpoint=URL]`) or a folder (`file:///PATH`) with Litestream, run by `serve` ([docs/operations.md](operations.md))",
    value: (label) =>
      v.pipe(
        v.string(),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          if (dataset.value === "") return null;
          const parsed = parseReplicaUrl(dataset.value);
          if (parsed.ok) return parsed.value;
          addIssue({ message: `${label}: ${parsed.reason}` });
          return NEVER;
        }),
      ),
  }),
] as const;

type AnySetting = (typeof SETTINGS)[number];
type ValueOf<S extends AnySetting> = v.InferOutput<ReturnType<S["value"]>>;
type FromTable = {
  [S in AnySetting as S["field"] extends string ? S["field"] : never]: ValueOf<S>;
};

export type Config = Omit<FromTable, "publicUrl"> & {
  /** SMARTMONEY_PUBLIC_URL, or http://HOST:PORT when unset (then `serve` fills in the real port). */
  publicUrl: string;
  /** True when publicUrl was not given but made from the host and port. */
  publicUrlDerived: boolean;
};

export type ConfigResult = { ok: true; config: Config } | { ok: false; problems: string[] };

/** The text a setting takes: its flag, else its variable unless empty, else its default. */
function textOf(setting: AnySetting, env: NodeJS.ProcessEnv, flags: ConfigFlags): string {
  const flag = setting.flag ? flags[setting.flag.option] : undefined;
  if (flag !== undefined) return String(flag);
  const value = env[setting.env];
  return value === undefined || value === "" ? setting.default : value;
}

/** How a refusal names a setting: its variable, and its flag where it has one. */
export function labelOf(setting: AnySetting): string {
  return setting.flag ? `${setting.env}/${setting.flag.name}` : setting.env;
}

/**
 * Reads every setting once, at start. Collects all problems instead of stopping at the first,
 * so an operator fixes a broken configuration in one go.
 */
export function loadConfig(env: NodeJS.ProcessEnv, flags: ConfigFlags = {}): ConfigResult {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const setting of SETTINGS) {
    const schema = setting.value(labelOf(setting)) as v.GenericSchema<string, unknown>;
    const parsed = v.safeParse(schema, textOf(setting, env, flags), { abortPipeEarly: true });
    if (!parsed.success) problems.push(...parsed.issues.map((issue) => issue.message));
    else if (setting.field !== null) values[setting.field] = parsed.output;
  }
  if (problems.length > 0) return { ok: false, problems };
  const given = values.publicUrl as string | null;
  return {
    ok: true,
    config: {
      ...(values as Omit<FromTable, "publicUrl">),
      publicUrl: given ?? `http://${values.host}:${values.port}`,
      publicUrlDerived: given === null,
    },
  };
}
