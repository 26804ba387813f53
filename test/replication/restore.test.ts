import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnection, openDb } from "../../src/db/open";
import { loadInstallationKey } from "../../src/installation/key";
import { createLog } from "../../src/log";
import { migrate } from "../../src/migrations/migrate";
import { restoreDatabase } from "../../src/replication/restore";
import { startReplication } from "../../src/replication/supervisor";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-restore-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const silent = createLog("silent", new Writable({ write: (_c, _e, done) => done() }));
const replica = join(dir, "replica");
const from = `file://${replica}`;

const until = async (what: string, test: () => boolean, ms = 90_000) => {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

const names = (path: string) => {
  const db = openConnection(path, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM accounts ORDER BY id").all() as { name: string }[]).map(
      (row) => row.name,
    );
  } finally {
    db.close();
  }
};

describe("restore from a Litestream replica", () => {
  let between = "";
  let keyId = "";

  // Setup, not a test: the replica the tests below restore from, holding two writes seconds apart.
  beforeAll(async () => {
    const dbPath = join(dir, "live", "smartmoney.db");
    const db = openDb(dbPath);
    migrate(db.writer);
    keyId = loadInstallationKey(db, {}).id;
    const replication = await startReplication({
      dbPath,
      replica: { type: "file", path: replica },
      log: silent,
    });
    const add = (name: string) =>
      db.writer
        .prepare("INSERT INTO accounts (name, tier, created_at) VALUES (?, 'free', ?)")
        .run(name, Date.now());
    const caughtUp = async () => {
      const since = Date.now();
      await until("the replica to catch up", () => {
        const state = replication.state();
        return state.lag_seconds === 0 && Date.parse(state.updated_at) > since + 1000;
      });
    };
    add("before");
    await caughtUp();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    between = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    add("after");
    await caughtUp();
    await replication.stop();
    db.close();
  }, 240_000);

  it("restores the latest state, and the state at a --timestamp in between", async () => {
    const latest = await restoreDatabase({ from, dbPath: join(dir, "latest.db"), force: false });
    expect(latest).toMatchObject({ ok: true, value: { keyId, secretsStored: 0 } });
    expect(names(join(dir, "latest.db"))).toEqual(["before", "after"]);

    const earlier = await restoreDatabase({
      from,
      dbPath: join(dir, "earlier.db"),
      timestamp: between,
      force: false,
    });
    expect(earlier.ok).toBe(true);
    expect(names(join(dir, "earlier.db"))).toEqual(["before"]);
  }, 60_000);

  it("replaces an existing database only with force, and leaves it whole when refused", async () => {
    const target = join(dir, "earlier.db");
    const refused = await restoreDatabase({ from, dbPath: target, force: false });
    expect(refused).toEqual({
      ok: false,
      reason: `${target} already exists; pass --force to replace it (stop the server first)`,
    });
    expect(names(target)).toEqual(["before"]);
    const forced = await restoreDatabase({ from, dbPath: target, force: true });
    expect(forced.ok).toBe(true);
    expect(names(target)).toEqual(["before", "after"]);
    expect(existsSync(`${target}.restoring`)).toBe(false);
  }, 60_000);

  it("says so when there is no replica, or the time is not a time", async () => {
    const empty = await restoreDatabase({
      from: `file://${join(dir, "nothing-here")}`,
      dbPath: join(dir, "none.db"),
      force: false,
    });
    expect(empty).toEqual({
      ok: false,
      reason: `no replica at file://${join(dir, "nothing-here")}`,
    });
    expect(existsSync(join(dir, "none.db"))).toBe(false);
    const badTime = await restoreDatabase({
      from,
      dbPath: join(dir, "x.db"),
      timestamp: "yesterday",
      force: false,
    });
    expect(badTime.ok ? "" : badTime.reason).toContain(
      '--timestamp "yesterday" must be an RFC 3339 date-time or date, or Unix milliseconds',
    );
    const badUrl = await restoreDatabase({
      from: "ftp://host/x",
      dbPath: join(dir, "x.db"),
      force: false,
    });
    expect(badUrl.ok ? "" : badUrl.reason).toContain("only s3:// and file:// replicas");
    expect(readFileSync(join(dir, "latest.db")).length).toBeGreaterThan(0);
  });
});
