import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { openConnection } from "../db/open";
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
    for (const suffix of ["-wal", "-shm"]) rmSync(`${dbPath}${suffix}`, { force: true });
    renameSync(partial, dbPath);
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(partial, { force: true });
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
