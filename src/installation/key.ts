import { createHmac, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Connection, Db } from "../db/open";
import { fail, ok, type Result } from "../result";
import { decryptSecret, parseSecretKey, SECRET_KEY_ENV } from "../webhooks/secrets";

/**
 * The installation key encrypts webhook secrets at rest and signs page cursors. It never enters
 * the database; its id does (sql/0008). Every process that opens the database resolves the key
 * here first: a key that is not the one the stored secrets were encrypted with is refused, and
 * a new key is minted only for a database that never stored a secret.
 */

const KEY_BYTES = 32;
const ID_LABEL = "smartmoney installation key id";

/** Where the key came from, for messages and `smartmoney status`. */
export type KeySource =
  | { kind: "env" }
  | { kind: "file"; path: string; minted: boolean }
  | { kind: "memory" };

export interface InstallationKey {
  key: Buffer;
  /** A check value, not the key: the first 16 hex of HMAC-SHA256(key, a fixed label). */
  id: string;
  source: KeySource;
}

export function keyId(key: Buffer): string {
  return createHmac("sha256", key).update(ID_LABEL).digest("hex").slice(0, 16);
}

/** Where the generated key lives: beside the database. */
export function keyFilePath(dbPath: string): string {
  return `${dbPath}.key`;
}

export function describeSource(source: KeySource): string {
  if (source.kind === "env") return SECRET_KEY_ENV;
  if (source.kind === "file") return source.path;
  return "a throwaway key (in-memory database)";
}

/** The key id the database recorded, or null before any was. */
export function recordedKeyId(db: Connection): string | null {
  const row = db.prepare("SELECT key_id FROM installation_key WHERE singleton = 1").get() as
    | { key_id: string }
    | undefined;
  return row?.key_id ?? null;
}

export function recordKeyId(db: Connection, id: string, now: number): void {
  db.prepare(
    `INSERT INTO installation_key (singleton, key_id, recorded_at) VALUES (1, ?, ?)
     ON CONFLICT (singleton) DO UPDATE SET key_id = excluded.key_id, recorded_at = excluded.recorded_at
     WHERE key_id <> excluded.key_id`,
  ).run(id, now);
}

/** Webhook secrets ever stored (removed endpoints keep theirs), the sign that a key matters. */
export function storedSecretCount(db: Connection): number {
  return (db.prepare("SELECT count(*) AS n FROM webhook_endpoints").get() as { n: number }).n;
}

/** The key the operator supplied: the variable first, else the file; null when neither exists. */
function suppliedKey(
  dbPath: string,
  env: NodeJS.ProcessEnv,
): Result<{ key: Buffer; source: KeySource } | null> {
  const fromEnv = env[SECRET_KEY_ENV];
  if (fromEnv !== undefined && fromEnv !== "") {
    const parsed = parseSecretKey(fromEnv);
    return parsed.ok ? ok({ key: parsed.value, source: { kind: "env" } }) : parsed;
  }
  const path = keyFilePath(dbPath);
  if (!existsSync(path)) return ok(null);
  const parsed = parseSecretKey(readFileSync(path, "utf8"));
  if (!parsed.ok)
    return fail(`installation key file ${path} is malformed: expected 64 hex characters`);
  return ok({ key: parsed.value, source: { kind: "file", path, minted: false } });
}

/**
 * Resolves the installation key for a migrated database and checks it against the recorded id.
 * Fails with one operator-facing line that names the expected key id (never the key), where it
 * looked and how to supply it; in that case no key file has been created.
 */
export function openInstallationKey(
  db: Connection,
  dbPath: string,
  env: NodeJS.ProcessEnv,
  now: number,
): Result<InstallationKey> {
  if (dbPath === ":memory:" || dbPath === "") {
    const key = randomBytes(KEY_BYTES);
    recordKeyId(db, keyId(key), now);
    return ok({ key, id: keyId(key), source: { kind: "memory" } });
  }
  const supplied = suppliedKey(dbPath, env);
  if (!supplied.ok) return supplied;
  const recorded = recordedKeyId(db);
  const given = supplied.value;
  if (given && recorded === keyId(given.key)) {
    return ok({ key: given.key, id: recorded, source: given.source });
  }

  if (storedSecretCount(db) > 0) {
    if (recorded !== null) return fail(refusal(dbPath, env, recorded, given));
    // A database from before key ids were recorded: the key is right if it opens a secret.
    if (!given) return fail(refusal(dbPath, env, null, null));
    const sample = db
      .prepare("SELECT secret_encrypted FROM webhook_endpoints ORDER BY created_at LIMIT 1")
      .get() as { secret_encrypted: string };
    try {
      decryptSecret(given.key, sample.secret_encrypted);
    } catch {
      return fail(refusal(dbPath, env, null, given));
    }
    recordKeyId(db, keyId(given.key), now);
    return ok({ key: given.key, id: keyId(given.key), source: given.source });
  }

  // No secret was ever stored: nothing depends on the old key, so the given one (or a new one)
  // becomes this database's key.
  const chosen = given ? ok(given) : mintKeyFile(dbPath);
  if (!chosen.ok) return chosen;
  const { key, source } = chosen.value;
  recordKeyId(db, keyId(key), now);
  return ok({ key, id: keyId(key), source });
}

/** Writes a fresh key to `<db>.key` (0600); of two processes starting together, one writes it. */
function mintKeyFile(dbPath: string): Result<{ key: Buffer; source: KeySource }> {
  const path = keyFilePath(dbPath);
  mkdirSync(dirname(path), { recursive: true });
  let minted = true;
  try {
    writeFileSync(path, `${randomBytes(KEY_BYTES).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
      // This process created it (wx) but could not finish it, a full disk say: an empty key
      // file would pass for a malformed key at every later start.
      rmSync(path, { force: true });
      throw error;
    }
    minted = false;
  }
  const parsed = parseSecretKey(readFileSync(path, "utf8"));
  if (!parsed.ok)
    return fail(`installation key file ${path} is malformed: expected 64 hex characters`);
  return ok({ key: parsed.value, source: { kind: "file", path, minted } });
}

function refusal(
  dbPath: string,
  env: NodeJS.ProcessEnv,
  expected: string | null,
  given: { key: Buffer; source: KeySource } | null,
): string {
  const path = keyFilePath(dbPath);
  const wanted =
    expected === null
      ? "the installation key its webhook secrets were encrypted with (they predate recorded key ids)"
      : `installation key id ${expected} (it stores encrypted webhook secrets)`;
  const found = given
    ? `${describeSource(given.source)} holds key id ${keyId(given.key)}`
    : `${SECRET_KEY_ENV} is unset and ${path} does not exist`;
  const pending = pendingRotation(dbPath, expected);
  const fix = pending
    ? `a key rotation was interrupted: rename ${pending} to ${path}`
    : env[SECRET_KEY_ENV]
      ? `set ${SECRET_KEY_ENV} to that key, or unset it to use ${path}`
      : `put the key file from your backup at ${path} (mode 0600) or set ${SECRET_KEY_ENV} to that key`;
  return `${dbPath} needs ${wanted}, but ${found}; ${fix}`;
}

/** A `<db>.key.next` left by an interrupted rotation that holds the expected key. */
function pendingRotation(dbPath: string, expected: string | null): string | null {
  const next = `${keyFilePath(dbPath)}.next`;
  if (expected === null || !existsSync(next)) return null;
  const parsed = parseSecretKey(readFileSync(next, "utf8"));
  return parsed.ok && keyId(parsed.value) === expected ? next : null;
}

/** openInstallationKey for the entry points and harnesses: throws the refusal as an Error. */
export function loadInstallationKey(
  db: Db,
  env: NodeJS.ProcessEnv,
  now: number = Date.now(),
): InstallationKey {
  const result = openInstallationKey(db.writer, db.path, env, now);
  if (!result.ok) throw new Error(result.reason);
  return result.value;
}

export interface SecretsCheck {
  /** Secrets stored, removed endpoints' included. */
  stored: number;
  decrypting: number;
  /** Endpoint ids whose secret does not decrypt under the key. */
  failing: string[];
}

/** Decrypts every stored secret: what `smartmoney status` reports beside the key id. */
export function checkSecrets(db: Connection, key: Buffer): SecretsCheck {
  const rows = db
    .prepare("SELECT id, secret_encrypted FROM webhook_endpoints ORDER BY created_at, id")
    .all() as { id: string; secret_encrypted: string }[];
  const failing: string[] = [];
  for (const row of rows) {
    try {
      decryptSecret(key, row.secret_encrypted);
    } catch {
      failing.push(row.id);
    }
  }
  return { stored: rows.length, decrypting: rows.length - failing.length, failing };
}
