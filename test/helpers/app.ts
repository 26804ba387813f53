import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type App, createApp } from "../../src/app";
import type { Tier } from "../../src/auth/tiers";
import { type Config, loadConfig } from "../../src/config";
import { migrate } from "../../src/db/migrate";
import { type Db, openDb } from "../../src/db/open";
import { createLog } from "../../src/log";
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

let template: string | undefined;

/**
 * A database migrated once per test process, checkpointed into its one file: a test app starts
 * from a copy of it instead of running every migration again (tens of milliseconds each time,
 * hundreds of times a run). migrate() still runs on the copy, and finds nothing left to apply.
 */
function migratedTemplate(): string {
  if (template) return template;
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-template-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "template.db");
  const db = openDb(path);
  try {
    migrate(db.writer);
    db.writer.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  template = path;
  return path;
}

/** A fresh migrated SQLite file in a temp folder, a fake clock and captured logs. */
export function createTestApp(
  options: { env?: NodeJS.ProcessEnv; clock?: FakeClock } = {},
): TestApp {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-test-"));
  const fresh = join(dir, "test.db");
  const loaded = loadConfig({ SMARTMONEY_DB: fresh, ...options.env });
  if (!loaded.ok) throw new Error(loaded.problems.join("; "));
  const config = loaded.config;
  // A database the test names (an old one to migrate, say) is opened as it is.
  if (config.dbPath === fresh) copyFileSync(migratedTemplate(), fresh);
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
