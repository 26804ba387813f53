import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { openConnection } from "../db/open";
import { historyReplica } from "../history/replica";
import { historyDir } from "../history/store";
import { keyFilePath, recordedKeyId, storedSecretCount } from "../installation/key";
import { INSTANT_FORMS, parseInstant } from "../instant";
import { fail, ok, type Result } from "../result";
import { litestreamBinary, litestreamConfig } from "./litestream";
import { parseReplicaUrl } from "./replica-url";

export interface Restored {
  path: string;
  seconds: number;
  /** The installation key id the restored database needs (null: it never recorded one). */
  keyId: string | null;
  secretsStored: number;
  /** Where the key must go: the replica never carries it. */
  keyPath: string;
}

/**
 * Restores a database from a Litestream replica, as of its latest position or of `timestamp`.
 * The copy is written beside the target and renamed over it only once whole, so a failed
 * restore leaves what was there.
 */
export async function restoreDatabase(options: {
  from: string;
  dbPath: string;
  timestamp?: string;
  force: boolean;
}): Promise<Result<Restored>> {
  const replica = parseReplicaUrl(options.from);
  if (!replica.ok) return replica;
  let timestamp: string | undefined;
  if (options.timestamp !== undefined) {
    const ms = parseInstant(options.timestamp);
    if (!Number.isFinite(ms)) {
      return fail(
        `--timestamp "${options.timestamp}" must be ${INSTANT_FORMS} such as 2026-11-25T16:00:00Z`,
      );
    }
    timestamp = new Date(ms).toISOString();
  }
  const dbPath = resolve(options.dbPath);
  if (existsSync(dbPath) && !options.force) {
    return fail(`${dbPath} already exists; pass --force to replace it (stop the server first)`);
  }
  mkdirSync(dirname(dbPath), { recursive: true });
  const partial = `${dbPath}.restoring`;
  rmSync(partial, { force: true });
  const work = mkdtempSync(join(tmpdir(), "smartmoney-restore-"));
  const started = performance.now();
  try {
    const config = join(work, "litestream.yml");
    writeFileSync(config, litestreamConfig({ dbPath, replica: replica.value }));
    const args = ["restore", "-config", config, "-o", partial, "-if-replica-exists"];
    if (timestamp) args.push("-timestamp", timestamp);
    const run = await runLitestream([...args, dbPath]);
    if (run.code !== 0) {
      const reason = lastLine(run.output) ?? `exit ${run.code}`;
      return fail(`litestream restore from ${options.from} failed: ${reason}`);
    }
    if (!existsSync(partial)) {
      return fail(`no replica at ${options.from}${timestamp ? ` as of ${timestamp}` : ""}`);
    }
    // The fill history's files the restored database lists, from beside its replica.
    const fetched = await restoreHistory(partial, `${historyDir(dbPath)}.restoring`, replica.value);
    if (!fetched.ok) return fetched;
    for (const suffix of ["-wal", "-shm"]) rmSync(`${dbPath}${suffix}`, { force: true });
    renameSync(partial, dbPath);
    if (fetched.value > 0) {
      rmSync(historyDir(dbPath), { recursive: true, force: true });
      renameSync(`${historyDir(dbPath)}.restoring`, historyDir(dbPath));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${partial}${suffix}`, { force: true });
    rmSync(`${historyDir(dbPath)}.restoring`, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const db = openConnection(dbPath, { readonly: true });
  try {
    const hasKeyTable = db
      .prepare("SELECT 1 FROM sqlite_master WHERE name = 'installation_key'")
      .get();
    return ok({
      path: dbPath,
      seconds,
      keyId: hasKeyTable ? recordedKeyId(db) : null,
      secretsStored: storedSecretCount(db),
      keyPath: keyFilePath(dbPath),
    });
  } finally {
    db.close();
  }
}

/**
 * Downloads every history file the database at `dbPath` lists into `dir`; refuses (and leaves
 * nothing) when the replica lacks one. Returns the files fetched.
 */
export async function restoreHistory(
  dbPath: string,
  dir: string,
  replica: Parameters<typeof historyReplica>[0],
): Promise<Result<number>> {
  const db = openConnection(dbPath, { readonly: true });
  let listed: string[];
  try {
    const hasManifest = db
      .prepare("SELECT 1 FROM sqlite_master WHERE name = 'history_partitions'")
      .get();
    // A copy of a database migrated before sql/0034 or sql/0037 lists no copies of that kind.
    const columns = new Set(
      db.prepare("SELECT name FROM pragma_table_info('history_partitions')").pluck().all(),
    );
    const listing = ["file", "wallet_file", "time_file"].filter((c) => columns.has(c));
    listed = !hasManifest
      ? []
      : (
          db
            .prepare(`SELECT ${listing.join(", ")} FROM history_partitions`)
            .raw()
            .all() as (string | null)[][]
        )
          .flat()
          .filter((file) => file !== null);
  } finally {
    db.close();
  }
  if (listed.length === 0) return ok(0);
  const files = historyReplica(replica);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const missing: string[] = [];
  for (const file of listed) {
    if (!(await files.get(file, join(dir, file)))) missing.push(file);
  }
  if (missing.length > 0) {
    return fail(
      `the replica lacks ${missing.length} file(s) of the fill history the database lists (${missing.slice(0, 3).join(", ")}${missing.length > 3 ? ", …" : ""}) at ${files.describe}`,
    );
  }
  return ok(listed.length);
}

function runLitestream(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(litestreamBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("error", (error) => done({ code: -1, output: error.message }));
    child.once("close", (code) => done({ code, output }));
  });
}

function lastLine(text: string): string | undefined {
  return text.trim().split("\n").filter(Boolean).at(-1);
}
