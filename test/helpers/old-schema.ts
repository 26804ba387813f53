import { join } from "node:path";
import { openConnection } from "../../src/db/open";
import { sqlFiles } from "../../src/db/sql-files";
import { migrate } from "../../src/migrations/migrate";
import { createTestApp, seededTestApp, type TestApp } from "./app";

/**
 * A migration test's world: the small world seeded at `now` on the current schema (`current`),
 * and a copy of it made at schema `version` (`migrated`): every table that schema has (not the
 * full-text indexes' own shadow tables) filled from the seeded database, attached as `source`,
 * then opened as an app, which migrates it to the current schema.
 *
 * A table is copied by its columns' names, or by the SELECT list from `source."table"` that
 * `select(table)` gives (every column of the old table, in order). A full-text index is copied
 * with its rowids, which are its order (sql/0006).
 */
export async function worldFromSchema(options: {
  now: number;
  version: number;
  select?: (table: string) => string | undefined;
}): Promise<{ current: TestApp; migrated: TestApp; path: string }> {
  const { t: current } = await seededTestApp({ now: options.now });
  current.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  const path = join(current.dir, `schema-${options.version}.db`);
  const old = openConnection(path);
  migrate(old, { files: sqlFiles().slice(0, options.version) });
  old.pragma("foreign_keys = OFF");
  old.prepare("ATTACH DATABASE ? AS source").run(current.config.dbPath);
  const tables = old
    .prepare<[], { name: string; virtual: number }>(
      `SELECT t.name, t.sql LIKE 'CREATE VIRTUAL%' AS virtual FROM main.sqlite_master t
        WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%'
          AND NOT EXISTS (SELECT 1 FROM main.sqlite_master v
                           WHERE v.sql LIKE 'CREATE VIRTUAL%' AND t.name GLOB v.name || '_*'
                             AND substr(t.name, length(v.name) + 2)
                                 IN ('data', 'idx', 'content', 'docsize', 'config'))`,
    )
    .all();
  old.transaction(() => {
    for (const { name, virtual } of tables) {
      const columns = (
        old.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).pluck().all(name) as string[]
      )
        .map((c) => `"${c}"`)
        .join(", ");
      const select = options.select?.(name);
      const [into, from] =
        select !== undefined
          ? ["", select]
          : virtual === 1
            ? [`(rowid, ${columns})`, `rowid, ${columns}`]
            : [`(${columns})`, columns];
      // OR REPLACE: a migration may have stored a table's first row already (a singleton).
      old.exec(
        `INSERT OR REPLACE INTO main."${name}" ${into} SELECT ${from} FROM source."${name}"`,
      );
    }
  })();
  old.exec("DETACH DATABASE source");
  old.close();
  const migrated = createTestApp({ env: { SMARTMONEY_DB: path } });
  migrated.clock.set(options.now);
  return { current, migrated, path };
}
