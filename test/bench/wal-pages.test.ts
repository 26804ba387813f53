import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { walPages } from "../../bench/lib/wal-pages";
import { type Connection, openConnection } from "../../src/db/open";

/**
 * bench/lib/wal-pages.ts maps the pages a WAL holds to their tables and indexes: the tool that
 * says where a refresh's writes go. It must count the current generation's frames only, and
 * name each page's object.
 */
let dir: string;
let db: Connection;
afterEach(() => {
  db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("walPages", () => {
  it("counts the frames written since the WAL restarted, by table and index", () => {
    dir = mkdtempSync(join(tmpdir(), "wal-pages-"));
    const path = join(dir, "w.db");
    db = openConnection(path);
    db.pragma("wal_autocheckpoint = 0");
    db.exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
      CREATE INDEX notes_by_body ON notes (body);
      CREATE TABLE other (x);`);
    const insert = db.prepare("INSERT INTO notes (body) VALUES (?)");
    db.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run(`note ${i} ${"x".repeat(100)}`);
    })();
    // An older generation: copied back, and overwritten from the start by the next writes. Its
    // frames past them stay in the file, under the old salt, and must not count.
    db.pragma("wal_checkpoint(PASSIVE)");
    db.prepare("UPDATE notes SET body = 'changed' WHERE id = 7").run();
    db.prepare("UPDATE notes SET body = 'changed again' WHERE id = 7").run();

    const map = walPages(path, db);
    const names = map.byObject.map((o) => o.name);
    expect(names).toContain("notes");
    expect(names).toContain("notes_by_body");
    expect(names).not.toContain("other");
    // The same pages written by both updates: two frames each, a few in all.
    expect(map.frames).toBeGreaterThan(map.pages);
    expect(map.frames).toBeLessThan(20);
    expect(map.byObject.reduce((sum, o) => sum + o.pages, 0)).toBeLessThanOrEqual(map.pages);
  });

  it("finds nothing in a database without a WAL", () => {
    dir = mkdtempSync(join(tmpdir(), "wal-pages-"));
    const path = join(dir, "w.db");
    db = openConnection(path);
    db.exec("CREATE TABLE t (x)");
    db.pragma("wal_checkpoint(TRUNCATE)");
    expect(walPages(path, db)).toEqual({ frames: 0, pages: 0, byObject: [] });
  });
});
