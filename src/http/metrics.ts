import { timingSafeEqual } from "node:crypto";
import type { Context } from "hono";
import type { Gauge as GaugeType } from "prom-client";
import type { App } from "../app";
import type { StorageStatus } from "../db/storage";
import { ApiError } from "../errors";
import { type IngestStatus, ingestStatus } from "../ingest/polymarket/status";
import { type ReplicationReport, replicationStatus } from "../replication/supervisor";
import type { HttpEnv } from "./env";

/**
 * GET /metrics: for operators, in Prometheus' text format: the ingest status (`smartmoney ingest
 * status`), the read models' age, replication (`smartmoney status`), the storage state (as at
 * /healthz), and the server process's own figures (prom-client's defaults: CPU, memory,
 * event-loop delay since the previous scrape). Off (404) unless SMARTMONEY_METRICS_TOKEN is set;
 * then it wants that token as a bearer (401 otherwise). Read-only: every scrape reads the figures
 * afresh.
 */
export function metricsHandler(app: App) {
  // Loaded on the first scrape: every CLI command builds the router, few ever serve /metrics.
  let metrics: Promise<ReturnType<typeof build>> | null = null;
  return async (c: Context<HttpEnv>) => {
    const token = app.deps.config.metricsToken;
    if (!token) throw new ApiError("not_found", "no such route: GET /metrics");
    const given = (c.req.header("authorization") ?? "").replace(/^Bearer\s+/i, "");
    const a = Buffer.from(given);
    const b = Buffer.from(token);
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      throw new ApiError(
        "unauthorized",
        "GET /metrics wants 'Authorization: Bearer <SMARTMONEY_METRICS_TOKEN>'",
      );
    }
    metrics ??= import("prom-client").then(build);
    const { registry, render } = await metrics;
    const now = app.deps.clock.now();
    const asOf = app.freshness.asOf();
    render(
      ingestStatus(app.deps.db, app.deps.clock),
      asOf === null ? null : Math.max(0, (now - asOf) / 1000),
      replicationStatus(app.deps.db.path),
      app.deps.db.storage.status(),
    );
    c.header("content-type", registry.contentType);
    return c.body(await registry.metrics());
  };
}

function build({ Gauge, Registry, collectDefaultMetrics }: typeof import("prom-client")) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "smartmoney_" });
  const gauge = (name: string, help: string, labelNames: string[] = []): GaugeType =>
    new Gauge({ name: `smartmoney_ingest_${name}`, help, labelNames, registers: [registry] });
  const lag = gauge("lag_seconds", "Now minus the newest stored fill");
  const sourceLag = gauge("source_lag_seconds", "Now minus the newest fill a source stored up to", [
    "source",
  ]);
  const lastSuccess = gauge("last_success_timestamp_seconds", "When a source last succeeded", [
    "source",
  ]);
  const failures = gauge("consecutive_failures", "Failures in a row of a source", ["source"]);
  const errors = gauge("errors_total", "Failures of a source since the database was created", [
    "source",
  ]);
  const backingOff = gauge("backing_off", "1 while a source waits out its backoff", ["source"]);
  const quarantined = gauge("quarantined_records", "Records set aside by a source", ["source"]);
  const gaps = gauge("known_gaps", "Time ranges of fills known to be missing");
  const unknown = gauge("markets_category_unknown", "Markets whose category is none of the six");
  const markets = gauge("markets", "Markets stored");
  const stream = gauge("stream_connected", "1 while the live socket is connected");
  const newestMarket = gauge(
    "newest_market_discovered_timestamp_seconds",
    "When the newest market (by Gamma's creation time) was stored",
  );
  const fillsWaited = gauge(
    "fills_waited_for_market",
    "Fills that arrived before their market was stored (each looked it up at once)",
  );
  const longestWait = gauge(
    "longest_market_wait_seconds",
    "The longest wait of a fill for its market, from its arrival to the market stored",
  );
  const awaited = gauge("markets_awaited", "Markets fills wait for that Gamma has not served yet");
  const other = (name: string, help: string): GaugeType =>
    new Gauge({ name: `smartmoney_${name}`, help, registers: [registry] });
  const readModelAge = other(
    "read_model_age_seconds",
    "Now minus the as-of of the latest read-model refresh (X-Read-Model-Age)",
  );
  const replicating = other("replication_running", "1 while Litestream replicates the database");
  const replicationLag = other(
    "replication_lag_seconds",
    "How long the replica has been behind the local database",
  );

  const storageFull = other(
    "storage_full",
    "1 while the disk holding the database is full: writes are refused and retried, reads served",
  );
  const storageFullSince = other(
    "storage_full_since_timestamp_seconds",
    "When the disk holding the database filled up; absent while it has room",
  );

  const render = (
    s: IngestStatus,
    ageSeconds: number | null,
    r: ReplicationReport,
    storage: StorageStatus,
  ) => {
    // Only the gauges set below: the process figures keep their own state between scrapes.
    for (const g of [lag, sourceLag, lastSuccess, failures, errors, backingOff, quarantined])
      g.reset();
    for (const g of [gaps, unknown, markets, stream, readModelAge, replicating, replicationLag]) {
      g.reset();
    }
    for (const g of [newestMarket, fillsWaited, longestWait, awaited]) g.reset();
    storageFullSince.reset();
    storageFull.set(storage.state === "full" ? 1 : 0);
    if (storage.state === "full") storageFullSince.set(Date.parse(storage.since) / 1000);
    if (ageSeconds !== null) readModelAge.set(ageSeconds);
    if (r) {
      const running = !r.stale && r.state === "running";
      replicating.set(running ? 1 : 0);
      if (running && r.lag_seconds !== null) replicationLag.set(r.lag_seconds);
    }
    if (s.lag_seconds !== null) lag.set(s.lag_seconds);
    for (const src of s.sources) {
      const source = { source: src.stage };
      if (src.lag_seconds !== null) sourceLag.set(source, src.lag_seconds);
      if (src.last_success) lastSuccess.set(source, Date.parse(src.last_success) / 1000);
      failures.set(source, src.consecutive_failures);
      errors.set(source, src.errors_total);
      backingOff.set(source, src.next_attempt_at ? 1 : 0);
    }
    for (const q of s.quarantined) quarantined.set({ source: q.stage }, q.count);
    gaps.set(s.gaps.length);
    unknown.set(s.categories_unknown);
    markets.set(s.markets);
    if (s.stream_connected !== null) stream.set(s.stream_connected ? 1 : 0);
    if (s.newest_market) newestMarket.set(Date.parse(s.newest_market.discovered_at) / 1000);
    fillsWaited.set(s.fills_waited_for_market);
    if (s.longest_market_wait_seconds !== null) longestWait.set(s.longest_market_wait_seconds);
    awaited.set(s.markets_awaited);
  };
  return { registry, render };
}
