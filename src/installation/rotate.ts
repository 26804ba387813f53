import { randomBytes } from "node:crypto";
import { existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { Db } from "../db/open";
import { fail, ok, type Result } from "../result";
import { decryptSecret, encryptSecret, parseSecretKey } from "../webhooks/secrets";
import { type InstallationKey, keyFilePath, keyId, recordedKeyId, recordKeyId } from "./key";

/** Where a rotation takes the new key from when the current one comes from the environment. */
export const NEW_SECRET_KEY_ENV = "SMARTMONEY_NEW_SECRET_KEY";

export interface Rotation {
  oldId: string;
  newId: string;
  reencrypted: number;
  /** The key file now in use, or null when the key comes from the environment. */
  keyPath: string | null;
  /** Where the old key file was kept, until the operator removes it. */
  retiredPath: string | null;
}

/**
 * Re-encrypts every stored webhook secret (removed endpoints' too) under `next` and records the
 * new key id, all in one transaction: either every secret moves or none does.
 */
export function reencryptSecrets(
  db: Db,
  current: InstallationKey,
  next: Buffer,
  now: number,
): Result<number> {
  const w = db.writer;
  const rows = w.prepare("SELECT id, secret_encrypted FROM webhook_endpoints");
  const update = w.prepare("UPDATE webhook_endpoints SET secret_encrypted = ? WHERE id = ?");
  try {
    return ok(
      w.transaction(() => {
        if (recordedKeyId(w) !== current.id) {
          throw new Error("the database's key id changed while rotating; nothing was changed");
        }
        let count = 0;
        for (const row of rows.all() as { id: string; secret_encrypted: string }[]) {
          const plain = decryptSecret(current.key, row.secret_encrypted);
          update.run(encryptSecret(next, plain), row.id);
          count += 1;
        }
        recordKeyId(w, keyId(next), now);
        return count;
      })(),
    );
  } catch (error) {
    return fail(`key rotation rolled back: ${(error as Error).message}`);
  }
}

/**
 * The operator's rotation. With a key file: the new key is written to `<db>.key.next` first,
 * the secrets move in one transaction, then the old file becomes `<db>.key.retired-<old id>` and
 * the new one takes its name (a crash between the two is named by the start-up check). With
 * SMARTMONEY_SECRET_KEY: the new key comes from SMARTMONEY_NEW_SECRET_KEY, and the operator
 * swaps the variables afterwards.
 */
export function rotateInstallationKey(
  db: Db,
  current: InstallationKey,
  env: NodeJS.ProcessEnv,
  now: number,
): Result<Rotation> {
  const { source } = current;
  if (source.kind === "memory") return fail("an in-memory database has no key to rotate");
  if (source.kind === "env") {
    const text = env[NEW_SECRET_KEY_ENV];
    if (!text) {
      return fail(
        `the key comes from SMARTMONEY_SECRET_KEY: put the new key in ${NEW_SECRET_KEY_ENV} (openssl rand -hex 32)`,
      );
    }
    const parsed = parseSecretKey(text);
    if (!parsed.ok) return fail(parsed.reason.replace("SMARTMONEY_SECRET_KEY", NEW_SECRET_KEY_ENV));
    if (keyId(parsed.value) === current.id) {
      return fail(`${NEW_SECRET_KEY_ENV} holds the current key; generate a new one`);
    }
    const moved = reencryptSecrets(db, current, parsed.value, now);
    if (!moved.ok) return moved;
    return ok({
      oldId: current.id,
      newId: keyId(parsed.value),
      reencrypted: moved.value,
      keyPath: null,
      retiredPath: null,
    });
  }

  const path = keyFilePath(db.path);
  const nextPath = `${path}.next`;
  const retiredPath = `${path}.retired-${current.id}`;
  for (const taken of [nextPath, retiredPath]) {
    if (existsSync(taken))
      return fail(`${taken} exists from an earlier rotation; move it away first`);
  }
  const next = randomBytes(32);
  try {
    writeFileSync(nextPath, `${next.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    // A full disk leaves the file partly written: left there, it would refuse the next rotation.
    rmSync(nextPath, { force: true });
    throw error;
  }
  const moved = reencryptSecrets(db, current, next, now);
  if (!moved.ok) {
    rmSync(nextPath, { force: true });
    return moved;
  }
  renameSync(path, retiredPath);
  renameSync(nextPath, path);
  return ok({
    oldId: current.id,
    newId: keyId(next),
    reencrypted: moved.value,
    keyPath: path,
    retiredPath,
  });
}
