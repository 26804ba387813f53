import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FIRST_RETRY_MS, sqliteTempDir } from "../../src/db/storage";
import { createIngest } from "../../src/ingest/ingest";
import { refreshJob } from "../../src/jobs/refresh";
import { jobTick, type ScheduledJob } from "../../src/jobs/scheduler";
import { createTestApp, type TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

/**
 * The server and its jobs on a full disk, made deterministic with SQLite's max_page_count on the
 * writer connections: SQLITE_FULL as soon as a write needs a page more, exactly as with ENOSPC.
 * The storage watch's backoff runs on the wall clock, faked here (Date only).
 */
const START = Date.parse("2026-11-25T10:00:00.000Z");
const NOW = Date.parse("2026-11-01T12:00:00.000Z");
const WALLETS = 300;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;

let t: TestApp;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(START);
  t = createTestApp();
  t.clock.set(NOW);
});
afterEach(() => {
  t.close();
  vi.useRealTimers();
});

/** Trades enough that the first refresh writes many pages of read models. */
function world(): void {
  const ingest = createIngest(t.db, t.clock);
  t.db.writer.transaction(() => {
    const marketId = addMarket(ingest, {
      slug: "m",
      title: "M",
      category: "crypto",
      condition_id: `0x${"c".repeat(64)}`,
      created_at: NOW - 30 * 86_400_000,
    });
    const rows = [];
    for (let n = 1; n <= WALLETS; n++) {
      rows.push(newTrade(wallet(n), marketId, "YES", "BUY", 0.4, 100 + n, NOW - 86_400_000 + n));
      rows.push(newTrade(wallet(n), marketId, "YES", "SELL", 0.5, 50, NOW - 3_600_000 + n));
    }
    ingest.insertTrades(rows);
  })();
}

/** No free page left, and no page more allowed: the next write that needs one meets a full disk. */
function fillDisk(connection = t.db.writer): void {
  connection.exec("VACUUM");
  const pages = connection.pragma("page_count", { simple: true }) as number;
  connection.pragma(`max_page_count = ${pages}`);
}

const freeSpace = (connection = t.db.writer) => connection.pragma("max_page_count = 1073741823");

const count = (table: string) =>
  t.db.reader.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;

const health = async () => (await (await t.get("/healthz")).json()) as Record<string, unknown>;

const storageLines = () =>
  t.logs.filter((l) => typeof l.msg === "string" && (l.msg as string).startsWith("storage "));

describe("jobs on a full disk", () => {
  it("roll back, pause and retry on a backoff while reads go on, and resume by themselves once there is room", async () => {
    world();
    const key = t.key("terminal");
    const log = t.app.deps.log;
    const storage = t.db.storage;
    const refresh = jobTick(refreshJob(t.app), log, storage);
    let ingestRuns = 0;
    const ingestLike: ScheduledJob = {
      name: "ingest",
      pattern: "* * * * * *",
      run: () => {
        ingestRuns++;
      },
    };
    const ingest = jobTick(ingestLike, log, storage);
    fillDisk();

    // The refresh meets the full disk: its transaction rolls back whole.
    expect(await refresh()).toBe(true);
    expect(count("refresh_runs")).toBe(0);
    expect(count("wallet_stats")).toBe(0);
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(storageLines()).toEqual([
      expect.objectContaining({
        level: "error",
        storage: "full",
        writer: "refresh",
        since: new Date(START).toISOString(),
        // SQLite's temporary files fill a disk too (a full refresh sorts there): both are named.
        db: t.db.path,
        sqlite_tmp: sqliteTempDir(),
      }),
    ]);
    expect(await health()).toEqual({
      ok: true,
      storage: { state: "full", since: new Date(START).toISOString(), writers: ["refresh"] },
    });

    // Reads are served all along.
    const trades = await t.get(`/v1/trades?wallet=${wallet(7)}`, key);
    expect(trades.status).toBe(200);
    expect(((await trades.json()) as { data: unknown[] }).data).toHaveLength(2);

    // Until its retry is due the refresh does not run, and the other jobs wait for the storage.
    expect(await refresh()).toBe(false);
    expect(await ingest()).toBe(false);
    expect(ingestRuns).toBe(0);

    // The retry meets the full disk again: the wait doubles, and no second "full" line.
    vi.setSystemTime(START + FIRST_RETRY_MS);
    expect(await refresh()).toBe(true);
    expect(storage.retryIn("refresh")).toBe(2 * FIRST_RETRY_MS);
    expect(storageLines()).toHaveLength(1);
    expect(t.logs.filter((l) => l.msg === "job failed")).toEqual([]);
    expect(
      t.logs.filter((l) => String(l.msg).startsWith("job rolled back")).map((l) => l.retry_in_ms),
    ).toEqual([FIRST_RETRY_MS, 2 * FIRST_RETRY_MS]);
    vi.setSystemTime(START + 2 * FIRST_RETRY_MS);
    expect(await refresh()).toBe(false);

    // Space is freed: the next retry goes through, and everything resumes.
    freeSpace();
    vi.setSystemTime(START + 3 * FIRST_RETRY_MS);
    expect(await refresh()).toBe(true);
    expect(count("refresh_runs")).toBe(1);
    expect(count("wallet_stats")).toBeGreaterThanOrEqual(WALLETS);
    expect(storageLines().at(-1)).toEqual(
      expect.objectContaining({
        level: "info",
        storage: "ok",
        writer: "refresh",
        full_for_ms: 3 * FIRST_RETRY_MS,
      }),
    );
    expect(await health()).toEqual({ ok: true, storage: { state: "ok" } });
    expect(await ingest()).toBe(true);
    expect(ingestRuns).toBe(1);
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
  });
});

describe("requests that need a write on a full disk", () => {
  it("answer 503 storage_full when a webhook endpoint cannot be stored, and store it once there is room", async () => {
    const create = (key: string) =>
      t.get("/v1/webhooks", key, {
        method: "POST",
        body: JSON.stringify({ callback_url: "https://hooks.example.com/smartmoney?token=abc" }),
        headers: { "content-type": "application/json" },
      });
    fillDisk();
    const keys = Array.from({ length: 20 }, () => t.key("terminal"));
    let refused: Response | undefined;
    let created = 0;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await create(keys[Math.floor(i / 10)]!);
      if (res.status === 201) created++;
      else refused = res;
    }
    expect(refused?.status).toBe(503);
    const body = (await refused!.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("storage_full");
    expect(body.error.message).toMatch(/^the disk holding the database is full: webhook endpoints/);
    expect(count("webhook_endpoints")).toBe(created);
    expect(((await health()).storage as { writers: string[] }).writers).toEqual([
      "webhook endpoints",
    ]);

    freeSpace();
    const again = await create(keys[Math.floor(created / 10)]!);
    expect(again.status).toBe(201);
    expect(count("webhook_endpoints")).toBe(created + 1);
    expect(await health()).toEqual({ ok: true, storage: { state: "ok" } });
  });

  it("refuse a call whose count cannot be stored with 503, count nothing for it, and count again once there is room", async () => {
    // The ledger lives in <db>.limits: it is that file's writer that meets the full disk.
    const key = t.key("terminal");
    expect((await t.get("/v1/_ping", key)).status).toBe(200);
    fillDisk(t.db.limits);
    const keys = Array.from({ length: 400 }, () => t.key("terminal"));
    let refused: Response | undefined;
    let served = 0;
    for (const k of keys) {
      const res = await t.get("/v1/_ping", k);
      if (res.status !== 200) {
        refused = res;
        break;
      }
      served++;
    }
    expect(refused?.status).toBe(503);
    expect(((await refused!.json()) as { error: { code: string } }).error.code).toBe(
      "storage_full",
    );
    const refusedKey = keys[served]!;
    // An answer that counts no call needs no write: a 404 stays a 404, with its headers.
    const unknown = await t.raw("/v1/no-such-route", refusedKey);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("x-ratelimit-limit")).toBe("1000");
    const ledgerRows = () =>
      t.db.limits.prepare("SELECT count(*) FROM rate_minutes").pluck().get() as number;
    const rows = ledgerRows();
    expect(rows).toBe(served + 1);
    expect(((await health()).storage as { writers: string[] }).writers).toEqual(["rate limits"]);

    freeSpace(t.db.limits);
    const again = await t.get("/v1/_ping", refusedKey);
    expect(again.status).toBe(200);
    expect(ledgerRows()).toBe(rows + 1);
    expect(await health()).toEqual({ ok: true, storage: { state: "ok" } });
  });
});
