import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import { migrate } from "../../src/migrations/migrate";

/** Migration numbers are consecutive: a gap would let a database skip a file numbered in it. */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function connection() {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-migrate-"));
  dirs.push(dir);
  return openConnection(join(dir, "m.db"));
}

describe("migrate", () => {
  it("applies files in order, once", () => {
    const db = connection();
    const files = [
      { name: "0001_a.sql", sql: "CREATE TABLE a (x);" },
      { name: "0002_b.sql", sql: "CREATE TABLE b (x);" },
    ];
    expect(migrate(db, files)).toEqual({ applied: ["0001_a.sql", "0002_b.sql"], current: 2 });
    expect(migrate(db, files)).toEqual({ applied: [], current: 2 });
    db.close();
  });

  it("skips what another process applied after this one read the version, and goes on from there", () => {
    const db = connection();
    const other = openConnection(db.name);
    const files = [
      { name: "0001_a.sql", sql: "CREATE TABLE a (x);" },
      { name: "0002_b.sql", sql: "CREATE TABLE b (x);" },
      { name: "0003_c.sql", sql: "CREATE TABLE c (x);" },
    ];
    // Two processes started together on an upgraded binary: the other applies the first two
    // between this one's reading of the version (0) and its first migration.
    const raced = Object.assign([...files], {
      *[Symbol.iterator]() {
        expect(migrate(other, files.slice(0, 2)).applied).toHaveLength(2);
        yield* files;
      },
    });
    expect(migrate(db, raced)).toEqual({ applied: ["0003_c.sql"], current: 3 });
    other.close();
    db.close();
  });

  it("runs its steps with sorts on disk and no memory map, then puts both back, even on failure", () => {
    const db = connection();
    const before = {
      temp: db.pragma("temp_store", { simple: true }),
      mmap: db.pragma("mmap_size", { simple: true }),
    };
    expect(before).toEqual({ temp: 2, mmap: 268435456 });
    const seen: unknown[] = [];
    const steps = {
      look: (c: typeof db) => {
        seen.push([
          c.pragma("temp_store", { simple: true }),
          c.pragma("mmap_size", { simple: true }),
        ]);
      },
      fail: () => {
        throw new Error("step failed");
      },
    };
    migrate(db, {
      files: [{ name: "0001_a.sql", sql: "-- @step look\nCREATE TABLE a (x);" }],
      steps,
    });
    expect(seen).toEqual([[1, 0]]);
    const now = () => ({
      temp: db.pragma("temp_store", { simple: true }),
      mmap: db.pragma("mmap_size", { simple: true }),
    });
    expect(now()).toEqual(before);
    expect(() =>
      migrate(db, {
        files: [
          { name: "0001_a.sql", sql: "" },
          { name: "0002_b.sql", sql: "-- @step fail" },
        ],
        steps,
      }),
    ).toThrow("step failed");
    expect(now()).toEqual(before);
    db.close();
  });

  it("refuses a gap in the numbers, applying nothing past it", () => {
    const db = connection();
    const files = [
      { name: "0001_a.sql", sql: "CREATE TABLE a (x);" },
      { name: "0100_c.sql", sql: "CREATE TABLE c (x);" },
    ];
    expect(() => migrate(db, files)).toThrow(
      "migration 0100_c.sql skips a version (database is at 1)",
    );
    expect(db.pragma("user_version", { simple: true })).toBe(1);
    db.close();
  });

  it("refuses a database newer than every file it knows", () => {
    const db = connection();
    migrate(db, [
      { name: "0001_a.sql", sql: "CREATE TABLE a (x);" },
      { name: "0002_b.sql", sql: "CREATE TABLE b (x);" },
    ]);
    expect(() => migrate(db, [{ name: "0001_a.sql", sql: "CREATE TABLE a (x);" }])).toThrow(
      "the database is at schema version 2, newer than this build knows (1): upgrade smartmoney",
    );
    db.close();
  });
});
