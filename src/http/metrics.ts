import { timingSafeEqual } from "node:crypto";
import type { Context } from "hono";
import type { Gauge as GaugeType } from "prom-client";
import type { App } from "../app";
import { ApiError } from "../errors";
import { type IngestStatus, ingestStatus } from "../ingest/polymarket/status";
import type { HttpEnv } from "./env";

/**
 * GET /metrics: the ingest status (`smartmoney ingest status`) in Prometheus' text format, for
 * operators. Off (404) unless SMARTMONEY_METRICS_TOKEN is set; then it wants that token as a
 * bearer (401 otherwise). Read-only: every scrape reads the figures afresh from the database.
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
    render(ingestStatus(app.deps.db, app.deps.clock));
    c.header("content-type", registry.contentType);
    return c.body(await registry.metrics());
  };
}

function build({ Gauge, Registry }: typeof import("prom-client")) {
  const registry = new Registry();
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

  const render = (s: IngestStatus) => {
    registry.resetMetrics();
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
  };
  return { registry, render };
}
