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

  it("checks the foreign keys of the tables a migration names and of those referring to them", () => {
    const db = connection();
    const first = {
      name: "0001_a.sql",
      sql: `CREATE TABLE p (id INTEGER PRIMARY KEY);
        CREATE TABLE c (id INTEGER PRIMARY KEY, p_id INTEGER REFERENCES p (id));
        CREATE TABLE q (id INTEGER PRIMARY KEY);
        CREATE TABLE u (id INTEGER PRIMARY KEY, q_id INTEGER REFERENCES q (id));
        INSERT INTO p VALUES (1); INSERT INTO c VALUES (1, 1);`,
    };
    migrate(db, [first]);
    // A key broken before, in tables the next migrations do not name.
    db.pragma("foreign_keys = OFF");
    db.exec("INSERT INTO u VALUES (1, 99)");
    db.pragma("foreign_keys = ON");
    const next = (name: string, sql: string) => [first, { name, sql }];
    // Named in a whole-line comment only: not checked.
    expect(migrate(db, next("0002_b.sql", "-- u and q\nCREATE TABLE b (x);")).current).toBe(2);
    // Deleting a parent breaks the table referring to it, which the migration does not name.
    const deleting = [...next("0002_b.sql", ""), { name: "0003_c.sql", sql: "DELETE FROM p;" }];
    expect(() => migrate(db, deleting)).toThrow("migration 0003_c.sql broke 1 foreign keys");
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    // A data step may write anywhere: every key is checked.
    const stepping = [...next("0002_b.sql", ""), { name: "0003_c.sql", sql: "-- @step noop" }];
    expect(() => migrate(db, { files: stepping, steps: { noop: () => {} } })).toThrow(
      "migration 0003_c.sql broke 1 foreign keys",
    );
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

describe("the schema", () => {
  /**
   * Deleting a row makes SQLite look for rows that refer to it, by their key: without an index
   * led by it, every row of the referring table is read, for each row deleted. Tables whose rows
   * are deleted, and why.
   */
  const DELETED = {
    fills: "a compaction deletes each sealed batch's fills, by the hundred thousand",
    history_partitions: "a merge unlists the files it merges",
  };
  /** Keys read whole at a delete on purpose, and why that costs little. */
  const UNINDEXED = {
    "history_markets (partition_id)":
      "a merge deletes a few manifest rows once it has moved their markets: a read of one row per sealed market each, against the merge's seconds",
  };

  it("indexes every key that refers to a table whose rows are deleted", () => {
    const db = connection();
    migrate(db);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all() as string[];
    const unindexed: string[] = [];
    for (const table of tables) {
      const keys = new Map<number, { parent: string; columns: string[] }>();
      for (const fk of db.prepare("SELECT * FROM pragma_foreign_key_list(?)").all(table) as {
        id: number;
        table: string;
        from: string;
      }[]) {
        const key = keys.get(fk.id) ?? { parent: fk.table, columns: [] };
        key.columns.push(fk.from);
        keys.set(fk.id, key);
      }
      const led = [
        db
          .prepare("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk")
          .pluck()
          .all(table) as string[],
        ...(db.prepare("SELECT name FROM pragma_index_list(?)").pluck().all(table) as string[]).map(
          (index) =>
            db
              .prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
              .pluck()
              .all(index) as string[],
        ),
      ];
      for (const { parent, columns } of keys.values()) {
        if (!(parent in DELETED)) continue;
        if (led.some((index) => columns.every((column, i) => index[i] === column))) continue;
        unindexed.push(`${table} (${columns.join(", ")})`);
      }
    }
    expect(unindexed.sort()).toEqual(Object.keys(UNINDEXED).sort());
    db.close();
  });
});
