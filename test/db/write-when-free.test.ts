import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Connection, type Db, openConnection, openDb } from "../../src/db/open";
import { WriteLockTimeout, writeWhenFree } from "../../src/db/write-when-free";

let dir: string;
let db: Db;
let other: Connection;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "smartmoney-write-"));
  db = openDb(join(dir, "w.db"));
  db.writer.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)");
  // Another process's writer: a refresh or an import holding the write lock.
  other = openConnection(join(dir, "w.db"));
});
afterEach(() => {
  if (other.inTransaction) other.exec("ROLLBACK");
  other.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (text: string) => () =>
  db.writer.prepare("INSERT INTO notes (text) VALUES (?)").run(text).changes;

/** Resolves once `count` ticks of a 5 ms timer have run: the event loop is free. */
function ticks(count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const timer = setInterval(() => {
      seen += 1;
      if (seen >= count) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
}

describe("writeWhenFree", () => {
  it("writes at once when nobody holds the lock", async () => {
    expect(await writeWhenFree(db.writer, insert("a"))).toBe(1);
    expect(db.writer.prepare("SELECT count(*) FROM notes").pluck().get()).toBe(1);
  });

  it("waits for another writer's lock on a timer, the event loop running meanwhile", async () => {
    other.exec("BEGIN IMMEDIATE");
    other.prepare("INSERT INTO notes (text) VALUES ('theirs')").run();
    const write = writeWhenFree(db.writer, insert("ours"));
    let done = false;
    void write.then(() => {
      done = true;
    });
    // A write that waited inside SQLite's busy handler would hold these timers back.
    await ticks(10);
    expect(done).toBe(false);
    other.exec("COMMIT");
    expect(await write).toBe(1);
    const texts = db.writer.prepare("SELECT text FROM notes ORDER BY id").pluck().all();
    expect(texts).toEqual(["theirs", "ours"]);
    // The connection's own busy timeout is back for everything else it does.
    expect(db.writer.pragma("busy_timeout", { simple: true })).toBe(5000);
  });

  it("gives up with WriteLockTimeout when the lock is held past the wait, writing nothing", async () => {
    other.exec("BEGIN IMMEDIATE");
    await expect(writeWhenFree(db.writer, insert("late"), { waitMs: 50 })).rejects.toBeInstanceOf(
      WriteLockTimeout,
    );
    other.exec("ROLLBACK");
    expect(db.writer.prepare("SELECT count(*) FROM notes").pluck().get()).toBe(0);
  });

  it("passes other errors through at once", async () => {
    await expect(
      writeWhenFree(db.writer, () => db.writer.prepare("INSERT INTO nowhere VALUES (1)").run()),
    ).rejects.toThrow(/no such table/);
  });
});
