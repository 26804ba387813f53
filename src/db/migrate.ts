import type { Connection } from "./open";
import { type SqlFile, sqlFiles } from "./sql-files";

export interface MigrationResult {
  applied: string[];
  current: number;
}

const VERSION = /^(\d{4})_[a-z0-9_]+\.sql$/;

/**
 * Applies every migration newer than the database's `user_version`, each in its own transaction
 * together with the version bump, so a failed migration leaves the previous version intact.
 * Numbers are consecutive: with a gap, a database migrated past it would silently skip a file
 * numbered inside it later (work merged from another branch, say), so a gap is refused.
 */
export function migrate(db: Connection, files: SqlFile[] = sqlFiles()): MigrationResult {
  const current = db.pragma("user_version", { simple: true }) as number;
  const applied: string[] = [];
  let version = current;
  for (const file of files) {
    const match = VERSION.exec(file.name);
    if (!match) throw new Error(`migration file name "${file.name}" is not NNNN_name.sql`);
    const fileVersion = Number(match[1]);
    if (fileVersion <= version) continue;
    if (fileVersion !== version + 1) {
      throw new Error(`migration ${file.name} skips a version (database is at ${version})`);
    }
    db.transaction(() => {
      db.exec(file.sql);
      db.pragma(`user_version = ${fileVersion}`);
    })();
    version = fileVersion;
    applied.push(file.name);
  }
  const latest = files.reduce((max, f) => Math.max(max, Number(VERSION.exec(f.name)?.[1] ?? 0)), 0);
  if (version > latest) {
    throw new Error(
      `the database is at schema version ${version}, newer than this build knows (${latest}): upgrade smartmoney`,
    );
  }
  return { applied, current: version };
}
