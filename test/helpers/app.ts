import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { benchEndpoints, pickFromWorld } from "../../bench/lib/endpoints";
import { type App, createApp } from "../../src/app";
import type { Tier } from "../../src/auth/tiers";
import { type Config, loadConfig } from "../../src/config";
import { type Db, openDb } from "../../src/db/open";
import { sqlFiles } from "../../src/db/sql-files";
import { seedWorld } from "../../src/fixtures/seed-world";
import type { Manifest } from "../../src/fixtures/world";
import { createLog } from "../../src/log";
import { migrate } from "../../src/migrations/migrate";
import { FakeClock } from "./clock";
import { createContract } from "./contract";

export interface TestApp {
  app: App;
  db: Db;
  clock: FakeClock;
  config: Config;
  /** Every log line written so far, parsed. */
  logs: Record<string, unknown>[];
  /** The raw log text, for "never logged" assertions. */
  logText(): string;
  dir: string;
  /** Mints a key on a fresh account (or the named one) and returns it. */
  key(tier: Tier, options?: { account?: string; kind?: "api" | "mcp" }): string;
  /** An in-process request through the whole middleware chain, checked against the OpenAPI contract. */
  get(path: string, key?: string, init?: RequestInit): Promise<Response>;
  /** The same without the contract check, for routes a test mounts itself. */
  raw(path: string, key?: string, init?: RequestInit): Promise<Response>;
  close(): void;
}

let accountSeq = 0;

/** A fresh migrated SQLite file in a temp folder, a fake clock and captured logs. */
export function createTestApp(
  options: { env?: NodeJS.ProcessEnv; clock?: FakeClock } = {},
): TestApp {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-test-"));
  const fresh = join(dir, "test.db");
  const loaded = loadConfig({ SMARTMONEY_DB: fresh, ...options.env });
  if (!loaded.ok) throw new Error(loaded.problems.join("; "));
  const config = loaded.config;
  // A fresh database starts as a copy of the one test/global-setup.ts migrated once per run, and
  // migrate() below finds nothing left to apply (without that setup, it applies everything). A
  // database the test names (an old one to migrate, say) is opened as it is.
  const migrated = inject("migratedDb");
  if (config.dbPath === fresh && migrated) copyFileSync(migrated, fresh);
  const db = openDb(config.dbPath);
  migrate(db.writer);
  const clock = options.clock ?? new FakeClock();
  let text = "";
  const sink = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  const log = createLog("info", sink);
  const app = createApp({
    db,
    config,
    clock,
    log,
    fetch: globalThis.fetch,
    secretKey: randomBytes(32),
  });
  const contract = createContract(app.http);
  return {
    app,
    db,
    clock,
    config,
    dir,
    get logs() {
      return text
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    logText: () => text,
    key(tier, keyOptions = {}) {
      const minted = app.accounts.mintKey({
        tier,
        account: keyOptions.account ?? `acct-${++accountSeq}`,
        kind: keyOptions.kind ?? "api",
      });
      if (!minted.ok) throw new Error(minted.reason);
      return minted.value.key;
    },
    async raw(path, key, init = {}) {
      const headers = new Headers(init.headers);
      if (key) headers.set("authorization", `Bearer ${key}`);
      return app.http.request(path, { ...init, headers });
    },
    async get(path, key, init = {}) {
      const res = await this.raw(path, key, init);
      await contract(init.method ?? "GET", path, res);
      return res;
    },
    close() {
      app.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh test app holding the small fixture world of `seed`, seeded as `smartmoney seed` seeds
 * it, at `now` on the fake clock; with the world's manifest (written beside the database).
 */
export async function seededTestApp(options: {
  now: number;
  seed?: number;
}): Promise<{ t: TestApp; manifest: Manifest }> {
  const t = createTestApp();
  t.clock.set(options.now);
  const seeded = await seedWorld(t.app, {
    scale: "small",
    seed: options.seed ?? 42,
    now: options.now,
    manifestPath: `${t.config.dbPath}.manifest.json`,
  });
  if (!seeded.ok) {
    t.close();
    throw new Error(seeded.reason);
  }
  return { t, manifest: seeded.value.manifest };
}

/**
 * The small seeded world shared by the tests of one file: seeded before them, closed after.
 * Read `.t` inside tests (it exists once the file's beforeAll has run).
 */
export function seededTestAppPerFile(options: { now: number }): { readonly t: TestApp } {
  let t: TestApp | undefined;
  beforeAll(async () => {
    ({ t } = await seededTestApp(options));
  }, 120_000);
  afterAll(() => t?.close());
  return {
    get t() {
      if (!t) throw new Error("the seeded world is read before its file's beforeAll ran");
      return t;
    },
  };
}

/**
 * A body with each cursor's signature cut off: a cursor is signed with each app's own key, so two
 * apps over the same data compare what their cursors say, not their signatures.
 */
export function unsigned(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body), (key, value) =>
    key === "next_cursor" && typeof value === "string" ? value.split(".")[0] : value,
  );
}

/**
 * A migration test's check that every fill came through, field for field, and that the migrated
 * database is at the current schema.
 */
export function expectSameFills(current: TestApp, migrated: TestApp): void {
  const all = "SELECT * FROM trades ORDER BY id";
  const before = current.db.reader.prepare(all).all();
  expect(before.length).toBeGreaterThan(10_000);
  expect(migrated.db.reader.prepare(all).all()).toEqual(before);
  expect(migrated.db.reader.pragma("user_version", { simple: true })).toBe(sqlFiles().length);
}

/**
 * Asks both apps every GET endpoint of the bench's list (bench/lib/endpoints.ts) about wallets
 * and markets picked from `current`'s world, and expects the same status and body (cursors
 * unsigned): a migration test's check that a migrated database answers as one built new.
 */
export async function expectSameGetAnswers(
  current: TestApp,
  migrated: TestApp,
  /** Paths whose answers are expected to differ, and are not compared. */
  except: (path: string) => boolean = () => false,
): Promise<void> {
  const picks = pickFromWorld(current.config.dbPath, 3);
  const endpoints = benchEndpoints(picks).filter((e) => e.method === "GET" && !except(e.path));
  expect(endpoints.length).toBeGreaterThan(20);
  const keyA = current.key("terminal_pro");
  const keyB = migrated.key("terminal_pro");
  for (const endpoint of endpoints) {
    const a = await current.get(endpoint.path, keyA);
    const b = await migrated.get(endpoint.path, keyB);
    expect(b.status, endpoint.path).toBe(a.status);
    expect(unsigned(await b.json()), endpoint.path).toEqual(unsigned(await a.json()));
  }
}
