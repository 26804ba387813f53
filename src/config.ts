import { Cron } from "croner";
import { parseDuration } from "./duration";
import { parseReplicaUrl, type ReplicaConfig } from "./replication/replica-url";
import { parseSecretKey } from "./webhooks/secrets";

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  dbPath: string;
  host: string;
  port: number;
  /** SMARTMONEY_PUBLIC_URL, or http://HOST:PORT when unset (then `serve` fills in the real port). */
  publicUrl: string;
  /** True when publicUrl was not given but made from the host and port. */
  publicUrlDerived: boolean;
  /** Waits after failures 1..n; a delivery gets n + 1 attempts. */
  webhookBackoffMs: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  /** How long `serve` lets requests in flight finish after SIGTERM before it cuts them off. */
  shutdownGraceMs: number;
  refreshCron: string;
  ingestCron: string | null;
  logLevel: LogLevel;
  /** A trade of at least this much USD fires a whale signal. */
  whaleSignalUsd: number;
  /** The memory, MB, a bulk load (import, seed) plans its page cache within (src/db/cache.ts). */
  memoryMb: number;
  /** Polymarket's public APIs and a Polygon JSON-RPC node for `ingest polymarket`. */
  polymarketDataUrl: string;
  polymarketGammaUrl: string;
  /** With an RPC URL, fills come from chain logs; without, from the data API. */
  polygonRpcUrl: string | null;
  /** Where `serve` streams the database with Litestream; null: no replication. */
  replica: ReplicaConfig | null;
  /** Polymarket's Real-Time Data Socket; null turns the live stream off. */
  polymarketStreamUrl: string | null;
  /** Bearer token for GET /metrics; null leaves the endpoint off (404). */
  metricsToken: string | null;
  /** How far before a new wallet's first fill its inbound funding is read (chain source). */
  fundingHorizonMs: number;
}

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

/** Every setting, with its variable, flag and default: the README's configuration table is checked against this. */
export const SETTINGS = [
  { env: "SMARTMONEY_DB", flag: "--db", default: "./data/smartmoney.db" },
  { env: "SMARTMONEY_HOST", flag: "--host", default: "127.0.0.1" },
  { env: "SMARTMONEY_PORT", flag: "--port", default: "8080" },
  { env: "SMARTMONEY_PUBLIC_URL", flag: "--public-url", default: "http://HOST:PORT" },
  { env: "SMARTMONEY_WEBHOOK_BACKOFF", flag: null, default: "5s,30s,5m" },
  { env: "SMARTMONEY_WEBHOOK_TIMEOUT", flag: null, default: "10s" },
  { env: "SMARTMONEY_WEBHOOK_ALLOW_PRIVATE", flag: null, default: "0" },
  { env: "SMARTMONEY_SHUTDOWN_GRACE", flag: "--shutdown-grace", default: "10s" },
  { env: "SMARTMONEY_REFRESH_CRON", flag: null, default: "*/1 * * * *" },
  { env: "SMARTMONEY_INGEST_CRON", flag: null, default: "" },
  { env: "SMARTMONEY_LOG_LEVEL", flag: "--log-level", default: "info" },
  { env: "SMARTMONEY_SECRET_KEY", flag: null, default: "<db>.key" },
  { env: "SMARTMONEY_WHALE_SIGNAL_USD", flag: null, default: "10000" },
  { env: "SMARTMONEY_MEMORY_MB", flag: null, default: "1024" },
  { env: "SMARTMONEY_POLYMARKET_DATA_URL", flag: null, default: "https://data-api.polymarket.com" },
  {
    env: "SMARTMONEY_POLYMARKET_GAMMA_URL",
    flag: null,
    default: "https://gamma-api.polymarket.com",
  },
  { env: "SMARTMONEY_POLYGON_RPC_URL", flag: null, default: "" },
  { env: "SMARTMONEY_REPLICA_URL", flag: "--replicate", default: "" },
  {
    env: "SMARTMONEY_POLYMARKET_STREAM_URL",
    flag: null,
    default: "wss://ws-live-data.polymarket.com",
  },
  { env: "SMARTMONEY_METRICS_TOKEN", flag: null, default: "" },
  { env: "SMARTMONEY_FUNDING_HORIZON", flag: null, default: "720h" },
] as const;

export type ConfigResult = { ok: true; config: Config } | { ok: false; problems: string[] };

/**
 * Reads every setting once, at start. Collects all problems instead of stopping at the first,
 * so an operator fixes a broken configuration in one go.
 */
export function loadConfig(env: NodeJS.ProcessEnv, flags: ConfigFlags = {}): ConfigResult {
  const problems: string[] = [];
  const pick = (flag: string | number | undefined, name: string, fallback: string): string => {
    if (flag !== undefined) return String(flag);
    const value = env[name];
    return value === undefined || value === "" ? fallback : value;
  };

  const dbPath = pick(flags.db, "SMARTMONEY_DB", "./data/smartmoney.db");
  if (dbPath.trim() === "") problems.push("SMARTMONEY_DB/--db: must not be empty");

  const host = pick(flags.host, "SMARTMONEY_HOST", "127.0.0.1");
  if (host.trim() === "") problems.push("SMARTMONEY_HOST/--host: must not be empty");

  const portText = pick(flags.port, "SMARTMONEY_PORT", "8080");
  const port = /^\d+$/.test(portText) ? Number(portText) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    problems.push(`SMARTMONEY_PORT/--port: "${portText}" is not a port number (0-65535)`);
  }

  const publicUrlText = pick(flags.publicUrl, "SMARTMONEY_PUBLIC_URL", "");
  let publicUrl = publicUrlText === "" ? `http://${host}:${port}` : publicUrlText;
  if (publicUrlText !== "") {
    try {
      const url = new URL(publicUrlText);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("scheme");
      publicUrl = publicUrlText.replace(/\/+$/, "");
    } catch {
      problems.push(
        `SMARTMONEY_PUBLIC_URL/--public-url: "${publicUrlText}" is not an absolute http(s) URL`,
      );
    }
  }

  const backoffText = pick(undefined, "SMARTMONEY_WEBHOOK_BACKOFF", "5s,30s,5m");
  const webhookBackoffMs = backoffText.split(",").map((part) => parseDuration(part));
  if (webhookBackoffMs.some((ms) => ms === undefined)) {
    problems.push(
      `SMARTMONEY_WEBHOOK_BACKOFF: "${backoffText}" must be a comma-separated list of durations such as 5s,30s,5m`,
    );
  }

  const timeoutText = pick(undefined, "SMARTMONEY_WEBHOOK_TIMEOUT", "10s");
  const webhookTimeoutMs = parseDuration(timeoutText);
  if (webhookTimeoutMs === undefined || webhookTimeoutMs <= 0) {
    problems.push(
      `SMARTMONEY_WEBHOOK_TIMEOUT: "${timeoutText}" must be a positive duration such as 10s`,
    );
  }

  const allowText = pick(undefined, "SMARTMONEY_WEBHOOK_ALLOW_PRIVATE", "0");
  if (allowText !== "0" && allowText !== "1") {
    problems.push(`SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "${allowText}" must be 0 or 1`);
  }

  const graceText = pick(flags.shutdownGrace, "SMARTMONEY_SHUTDOWN_GRACE", "10s");
  const shutdownGraceMs = parseDuration(graceText);
  if (shutdownGraceMs === undefined) {
    problems.push(
      `SMARTMONEY_SHUTDOWN_GRACE/--shutdown-grace: "${graceText}" must be a duration such as 10s (0s = cut requests off at once)`,
    );
  }

  const refreshCron = pick(undefined, "SMARTMONEY_REFRESH_CRON", "*/1 * * * *");
  const cronProblem = (name: string, pattern: string) => {
    try {
      new Cron(pattern, { paused: true }).stop();
    } catch (error) {
      problems.push(`${name}: "${pattern}" is not a cron pattern (${(error as Error).message})`);
    }
  };
  cronProblem("SMARTMONEY_REFRESH_CRON", refreshCron);
  const ingestCronText = pick(undefined, "SMARTMONEY_INGEST_CRON", "");
  if (ingestCronText !== "") cronProblem("SMARTMONEY_INGEST_CRON", ingestCronText);

  const logLevel = pick(flags.logLevel, "SMARTMONEY_LOG_LEVEL", "info");
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(
      `SMARTMONEY_LOG_LEVEL/--log-level: "${logLevel}" must be one of ${LOG_LEVELS.join(", ")}`,
    );
  }

  const whaleText = pick(undefined, "SMARTMONEY_WHALE_SIGNAL_USD", "10000");
  const whaleSignalUsd = /^\d+(\.\d+)?$/.test(whaleText) ? Number(whaleText) : Number.NaN;
  if (!(whaleSignalUsd > 0)) {
    problems.push(`SMARTMONEY_WHALE_SIGNAL_USD: "${whaleText}" must be a positive USD amount`);
  }

  const memoryText = pick(undefined, "SMARTMONEY_MEMORY_MB", "1024");
  const memoryMb = /^\d+$/.test(memoryText) ? Number(memoryText) : Number.NaN;
  if (!(memoryMb >= 256)) {
    problems.push(
      `SMARTMONEY_MEMORY_MB: "${memoryText}" must be a whole number of MB, 256 or more`,
    );
  }

  const urlSetting = (name: string, fallback: string): string => {
    const text = pick(undefined, name, fallback);
    if (text === "") return text;
    try {
      const url = new URL(text);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("scheme");
    } catch {
      problems.push(`${name}: "${text}" is not an absolute http(s) URL`);
    }
    return text.replace(/\/+$/, "");
  };
  const polymarketDataUrl = urlSetting(
    "SMARTMONEY_POLYMARKET_DATA_URL",
    "https://data-api.polymarket.com",
  );
  const polymarketGammaUrl = urlSetting(
    "SMARTMONEY_POLYMARKET_GAMMA_URL",
    "https://gamma-api.polymarket.com",
  );
  const polygonRpcUrl = urlSetting("SMARTMONEY_POLYGON_RPC_URL", "");
  const streamText = pick(
    undefined,
    "SMARTMONEY_POLYMARKET_STREAM_URL",
    "wss://ws-live-data.polymarket.com",
  );
  if (streamText !== "") {
    let scheme = "";
    try {
      scheme = new URL(streamText).protocol;
    } catch {
      // reported below
    }
    if (scheme !== "ws:" && scheme !== "wss:") {
      problems.push(
        `SMARTMONEY_POLYMARKET_STREAM_URL: "${streamText}" is not a ws:// or wss:// URL (empty turns the stream off)`,
      );
    }
  }
  const horizonText = pick(undefined, "SMARTMONEY_FUNDING_HORIZON", "720h");
  const fundingHorizonMs = parseDuration(horizonText);
  if (fundingHorizonMs === undefined || fundingHorizonMs <= 0) {
    problems.push(
      `SMARTMONEY_FUNDING_HORIZON: "${horizonText}" must be a positive duration such as 720h (30 days)`,
    );
  }
  const metricsToken = pick(undefined, "SMARTMONEY_METRICS_TOKEN", "");
  if (metricsToken !== "" && metricsToken.length < 16) {
    problems.push(
      "SMARTMONEY_METRICS_TOKEN: must be at least 16 characters (empty turns /metrics off)",
    );
  }

  const secretKeyText = env.SMARTMONEY_SECRET_KEY;
  if (secretKeyText !== undefined && secretKeyText !== "") {
    const parsed = parseSecretKey(secretKeyText);
    if (!parsed.ok) problems.push(parsed.reason);
  }

  const replicaText = pick(flags.replicate, "SMARTMONEY_REPLICA_URL", "");
  let replica: ReplicaConfig | null = null;
  if (replicaText !== "") {
    const parsed = parseReplicaUrl(replicaText);
    if (parsed.ok) replica = parsed.value;
    else problems.push(`SMARTMONEY_REPLICA_URL/--replicate: ${parsed.reason}`);
  }

  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    config: {
      dbPath,
      host,
      port,
      publicUrl,
      publicUrlDerived: publicUrlText === "",
      webhookBackoffMs: webhookBackoffMs as number[],
      webhookTimeoutMs: webhookTimeoutMs as number,
      webhookAllowPrivate: allowText === "1",
      shutdownGraceMs: shutdownGraceMs as number,
      refreshCron,
      ingestCron: ingestCronText === "" ? null : ingestCronText,
      logLevel: logLevel as LogLevel,
      whaleSignalUsd,
      memoryMb,
      polymarketDataUrl,
      polymarketGammaUrl,
      polygonRpcUrl: polygonRpcUrl === "" ? null : polygonRpcUrl,
      replica,
      polymarketStreamUrl: streamText === "" ? null : streamText,
      metricsToken: metricsToken === "" ? null : metricsToken,
      fundingHorizonMs: fundingHorizonMs as number,
    },
  };
}
