import { type MigrationStep, migrationSteps } from "./migration-steps";
import { type Connection, overridePragmas, TEMP_STORE_FILE } from "./open";
import { type SqlFile, sqlFiles } from "./sql-files";

export interface MigrationResult {
  applied: string[];
  current: number;
}

/** How far a long migration step is: `done` of `total` units (rows, for a data copy). */
export interface MigrationProgress {
  migration: string;
  step: string;
  done: number;
  total: number;
}

export interface MigrateOptions {
  files?: SqlFile[];
  steps?: Record<string, MigrationStep>;
  onProgress?(progress: MigrationProgress): void;
}

const VERSION = /^(\d{4})_[a-z0-9_]+\.sql$/;
/** A line `-- @step name` in a migration runs the data step of that name at that point. */
const STEP = /^-- @step ([a-z0-9_]+)[ \t]*$/m;

/**
 * Applies every migration newer than the database's `user_version`, each in its own transaction
 * together with the version bump, so a failed (or killed) migration leaves the previous version
 * intact. Foreign keys are off while a migration runs, so that a table can be rebuilt under its
 * children (SQLite's documented procedure); every key is checked before the commit.
 * Numbers are consecutive: with a gap, a database migrated past it would silently skip a file
 * numbered inside it later (work merged from another branch, say), so a gap is refused.
 */
export function migrate(db: Connection, options: MigrateOptions | SqlFile[] = {}): MigrationResult {
  const opts = Array.isArray(options) ? { files: options } : options;
  const files = opts.files ?? sqlFiles();
  const steps = opts.steps ?? migrationSteps;
  const current = db.pragma("user_version", { simple: true }) as number;
  const applied: string[] = [];
  let version = current;
  // A data step copies whole tables and builds their indexes again: sorts that temp_store
  // MEMORY holds in the heap (1.2 GB of RSS for 0020–0022 on the large world), and pages that
  // the memory map adds to the RSS. As the full refresh does, both are off while migrations run.
  const pending = files.some((f) => Number(VERSION.exec(f.name)?.[1] ?? 0) > current);
  const restore = pending
    ? overridePragmas(db, { temp_store: TEMP_STORE_FILE, mmap_size: 0 })
    : () => {};
  try {
    version = applyPending(db, files, steps, version, applied, opts.onProgress);
  } finally {
    restore();
  }
  const latest = files.reduce((max, f) => Math.max(max, Number(VERSION.exec(f.name)?.[1] ?? 0)), 0);
  if (version > latest) {
    throw new Error(
      `the database is at schema version ${version}, newer than this build knows (${latest}): upgrade smartmoney`,
    );
  }
  return { applied, current: version };
}

/** Applies the files newer than `version` in order, appending each to `applied`; the new version. */
function applyPending(
  db: Connection,
  files: SqlFile[],
  steps: Record<string, MigrationStep>,
  from: number,
  applied: string[],
  onProgress: MigrateOptions["onProgress"],
): number {
  let version = from;
  for (const file of files) {
    const match = VERSION.exec(file.name);
    if (!match) throw new Error(`migration file name "${file.name}" is not NNNN_name.sql`);
    const fileVersion = Number(match[1]);
    if (fileVersion <= version) continue;
    if (fileVersion !== version + 1) {
      throw new Error(`migration ${file.name} skips a version (database is at ${version})`);
    }
    const foreignKeys = db.pragma("foreign_keys", { simple: true }) as number;
    db.pragma("foreign_keys = OFF");
    try {
      db.transaction(() => {
        runParts(db, file, steps, onProgress);
        const broken = db.pragma("foreign_key_check") as unknown[];
        if (broken.length > 0) {
          throw new Error(`migration ${file.name} broke ${broken.length} foreign keys`);
        }
        db.pragma(`user_version = ${fileVersion}`);
      })();
    } finally {
      db.pragma(`foreign_keys = ${foreignKeys}`);
    }
    version = fileVersion;
    applied.push(file.name);
  }
  return version;
}

function runParts(
  db: Connection,
  file: SqlFile,
  steps: Record<string, MigrationStep>,
  onProgress: MigrateOptions["onProgress"],
): void {
  let rest = file.sql;
  for (let m = STEP.exec(rest); m !== null; m = STEP.exec(rest)) {
    db.exec(rest.slice(0, m.index));
    const name = m[1]!;
    const step = steps[name];
    if (!step) throw new Error(`migration ${file.name} names an unknown step "${name}"`);
    step(db, (done, total) => onProgress?.({ migration: file.name, step: name, done, total }));
    rest = rest.slice(m.index + m[0].length);
  }
  db.exec(rest);
}
