import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadConfig, SETTINGS } from "../../src/config";

describe("loadConfig", () => {
  it("has a working default for every setting", () => {
    const result = loadConfig({});
    expect(result).toEqual({
      ok: true,
      config: {
        dbPath: "./data/smartmoney.db",
        host: "127.0.0.1",
        port: 8080,
        publicUrl: "http://127.0.0.1:8080",
        publicUrlDerived: true,
        webhookBackoffMs: [5_000, 30_000, 300_000],
        webhookTimeoutMs: 10_000,
        alertMaxAgeMs: 600_000,
        webhookAllowPrivate: false,
        shutdownGraceMs: 10_000,
        refreshCron: "*/1 * * * *",
        ingestCron: null,
        logLevel: "info",
        whaleSignalUsd: 10_000,
        memoryMb: 1024,
        polymarketDataUrl: "https://data-api.polymarket.com",
        polymarketGammaUrl: "https://gamma-api.polymarket.com",
        polygonRpcUrl: null,
        replica: null,
        polymarketStreamUrl: "wss://ws-live-data.polymarket.com",
        metricsToken: null,
        fillRetentionMs: null,
        fundingHorizonMs: 720 * 3_600_000,
      },
    });
  });

  it("lets flags override the environment", () => {
    const result = loadConfig(
      { SMARTMONEY_PORT: "9000", SMARTMONEY_DB: "/env.db", SMARTMONEY_LOG_LEVEL: "debug" },
      { port: "0", db: "/flag.db" },
    );
    expect(result.ok && result.config).toMatchObject({
      port: 0,
      dbPath: "/flag.db",
      logLevel: "debug",
    });
  });

  it("parses durations and the public URL", () => {
    const result = loadConfig({
      SMARTMONEY_WEBHOOK_BACKOFF: "250ms,1s,2m,1h",
      SMARTMONEY_WEBHOOK_TIMEOUT: "1.5s",
      SMARTMONEY_PUBLIC_URL: "https://api.example.com/",
      SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
      SMARTMONEY_SHUTDOWN_GRACE: "0s",
    });
    expect(result.ok && result.config).toMatchObject({
      shutdownGraceMs: 0,
      webhookBackoffMs: [250, 1_000, 120_000, 3_600_000],
      webhookTimeoutMs: 1_500,
      publicUrl: "https://api.example.com",
      publicUrlDerived: false,
      webhookAllowPrivate: true,
    });
  });

  it("reports every problem at once", () => {
    const result = loadConfig({
      SMARTMONEY_PORT: "70000",
      SMARTMONEY_PUBLIC_URL: "ftp://x",
      SMARTMONEY_WEBHOOK_BACKOFF: "5s,soon",
      SMARTMONEY_WEBHOOK_TIMEOUT: "0s",
      SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "yes",
      SMARTMONEY_SHUTDOWN_GRACE: "a while",
      SMARTMONEY_REFRESH_CRON: "every minute",
      SMARTMONEY_INGEST_CRON: "* * *",
      SMARTMONEY_LOG_LEVEL: "loud",
      SMARTMONEY_SECRET_KEY: "short",
      SMARTMONEY_WHALE_SIGNAL_USD: "-5",
      SMARTMONEY_MEMORY_MB: "100",
      SMARTMONEY_POLYGON_RPC_URL: "polygon-node:8545",
      SMARTMONEY_REPLICA_URL: "gcs://bucket/db",
      SMARTMONEY_POLYMARKET_STREAM_URL: "https://ws-live-data.polymarket.com",
      SMARTMONEY_METRICS_TOKEN: "short",
      SMARTMONEY_FILL_RETENTION: "90 days",
      SMARTMONEY_FUNDING_HORIZON: "a month",
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const names = [
      "SMARTMONEY_PORT",
      "SMARTMONEY_PUBLIC_URL",
      "SMARTMONEY_WEBHOOK_BACKOFF",
      "SMARTMONEY_WEBHOOK_TIMEOUT",
      "SMARTMONEY_WEBHOOK_ALLOW_PRIVATE",
      "SMARTMONEY_SHUTDOWN_GRACE",
      "SMARTMONEY_REFRESH_CRON",
      "SMARTMONEY_INGEST_CRON",
      "SMARTMONEY_LOG_LEVEL",
      "SMARTMONEY_WHALE_SIGNAL_USD",
      "SMARTMONEY_MEMORY_MB",
      "SMARTMONEY_POLYGON_RPC_URL",
      "SMARTMONEY_POLYMARKET_STREAM_URL",
      "SMARTMONEY_FILL_RETENTION",
      "SMARTMONEY_FUNDING_HORIZON",
      "SMARTMONEY_METRICS_TOKEN",
      "SMARTMONEY_SECRET_KEY",
      "SMARTMONEY_REPLICA_URL",
    ];
    expect(result.problems).toHaveLength(names.length);
    for (const [i, name] of names.entries()) expect(result.problems[i]).toContain(name);
  });

  it("every setting is documented in docs/configuration.md's table", () => {
    const doc = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    for (const setting of SETTINGS) {
      expect(doc, `${setting.env} missing from docs/configuration.md`).toMatch(
        new RegExp(`^\\|\\s*\`${setting.env}\`\\s*\\|`, "m"),
      );
    }
  });
});
