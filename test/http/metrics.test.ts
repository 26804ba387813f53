import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createLedger } from "../../src/ingest/polymarket/ledger";
import { STATE_KEYS } from "../../src/ingest/polymarket/state";
import { refreshNow } from "../../src/jobs/refresh";
import { createTestApp, type TestApp } from "../helpers/app";

const TOKEN = "metrics-token-0123456789";
const open: TestApp[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.close();
});

describe("GET /metrics", () => {
  it("is off (404, the error envelope) without SMARTMONEY_METRICS_TOKEN", async () => {
    const t = createTestApp();
    open.push(t);
    const res = await t.app.http.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
  });

  it("wants the token, then serves the ingest status in Prometheus text", async () => {
    const t = createTestApp({ env: { SMARTMONEY_METRICS_TOKEN: TOKEN } });
    open.push(t);
    const denied = await t.app.http.request("/metrics", {
      headers: { authorization: "Bearer wrong" },
    });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ error: { code: "unauthorized" } });

    const ledger = createLedger(t.db);
    const now = t.clock.now();
    t.db.writer.transaction(() => {
      ledger.succeeded("tail", now - 5_000);
      ledger.failed("leaderboard", now, "HTTP 502", now + 30_000);
      ledger.quarantine(
        "tail",
        "data API /trades offset 0",
        "price: must be a number",
        { price: "x" },
        now,
      );
      ledger.recordGap("tail", now - 7_200_000, now - 3_600_000, "offset cap", now);
      const setState = t.db.writer.prepare(
        "INSERT INTO ingest_state (key, value, updated_at) VALUES (?, ?, ?)",
      );
      setState.run(
        STATE_KEYS.newestMarket,
        JSON.stringify({
          slug: "new-market",
          created_at: now - 60_000,
          discovered_at: now - 30_000,
        }),
        now,
      );
      setState.run(
        STATE_KEYS.marketWaits,
        JSON.stringify({ fills: 7, longest_ms: 2_500, pending: {} }),
        now,
      );
    })();
    const res = await t.app.http.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toContain('smartmoney_ingest_consecutive_failures{source="leaderboard"} 1');
    expect(text).toContain('smartmoney_ingest_backing_off{source="leaderboard"} 1');
    expect(text).toContain('smartmoney_ingest_backing_off{source="tail"} 0');
    expect(text).toContain(
      `smartmoney_ingest_last_success_timestamp_seconds{source="tail"} ${(now - 5_000) / 1000}`,
    );
    expect(text).toContain('smartmoney_ingest_quarantined_records{source="tail"} 1');
    expect(text).toContain("smartmoney_ingest_known_gaps 1");
    expect(text).toContain(
      `smartmoney_ingest_newest_market_discovered_timestamp_seconds ${(now - 30_000) / 1000}`,
    );
    expect(text).toContain("smartmoney_ingest_fills_waited_for_market 7");
    expect(text).toContain("smartmoney_ingest_longest_market_wait_seconds 2.5");
    expect(text).toContain("smartmoney_ingest_markets_awaited 0");
  });

  it("adds the read models' age, replication from the server's state file, and the process's own figures", async () => {
    const t = createTestApp({ env: { SMARTMONEY_METRICS_TOKEN: TOKEN } });
    open.push(t);
    const scrape = async () => {
      const res = await t.app.http.request("/metrics", {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    const before = await scrape();
    expect(before).toContain("smartmoney_replication_running 0");
    expect(before).toMatch(/smartmoney_nodejs_eventloop_lag_p99_seconds \d/);

    refreshNow(t.app);
    t.clock.advance(42_000);
    const updatedAt = new Date().toISOString();
    writeFileSync(
      `${t.db.path}.replication.json`,
      JSON.stringify({
        replica: "file:///replica",
        state: "running",
        pid: 1,
        restarts: 0,
        last_error: null,
        lag_seconds: 1.5,
        behind_bytes: 0,
        caught_up_at: updatedAt,
        updated_at: updatedAt,
      }),
    );
    const after = await scrape();
    expect(after).toContain("smartmoney_read_model_age_seconds 42");
    expect(after).toContain("smartmoney_replication_running 1");
    expect(after).toContain("smartmoney_replication_lag_seconds 1.5");
    expect(after).toContain("smartmoney_storage_full 0");
    expect(after).not.toContain("smartmoney_storage_full_since_timestamp_seconds 1");

    // The disk fills up (src/db/storage.ts): the state and since when.
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    t.db.storage.failed("refresh", full, { retries: true });
    const since = Date.parse((t.db.storage.status() as { since: string }).since) / 1000;
    const during = await scrape();
    expect(during).toContain("smartmoney_storage_full 1");
    expect(during).toContain(`smartmoney_storage_full_since_timestamp_seconds ${since}`);
    t.db.storage.succeeded("refresh");
    expect(await scrape()).toContain("smartmoney_storage_full 0");
  });
});
