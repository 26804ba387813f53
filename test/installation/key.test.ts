import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Db, openDb } from "../../src/db/open";
import {
  keyFilePath,
  keyId,
  loadInstallationKey,
  openInstallationKey,
  recordedKeyId,
} from "../../src/installation/key";
import { migrate } from "../../src/migrations/migrate";
import { encryptSecret, parseSecretKey, SECRET_KEY_ENV } from "../../src/webhooks/secrets";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-key-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;

function database(name = `db${++seq}`): Db {
  const db = openDb(join(dir, name, "smartmoney.db"));
  migrate(db.writer);
  return db;
}

/** A webhook endpoint row whose secret is sealed under `key`, as the webhook service stores it. */
function storeSecret(db: Db, key: Buffer): void {
  const w = db.writer;
  w.prepare(
    "INSERT OR IGNORE INTO accounts (id, name, tier, created_at) VALUES (1, 'acme', 'terminal', 0)",
  ).run();
  w.prepare(
    `INSERT INTO webhook_endpoints (id, account_id, channel, callback_url, secret_encrypted, created_at)
     VALUES (?, 1, 'api', 'https://example.test/hook', ?, 0)`,
  ).run(`wh_${randomBytes(12).toString("hex")}`, encryptSecret(key, "whsec_x"));
}

const hex = (key: Buffer) => ({ [SECRET_KEY_ENV]: key.toString("hex") });

describe("the installation key of a database that never stored a secret", () => {
  it("mints <db>.key once with mode 0600, reuses it and records its id", () => {
    const db = database();
    const first = loadInstallationKey(db, {});
    const path = keyFilePath(db.path);
    expect(first.source).toEqual({ kind: "file", path, minted: true });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8").trim()).toBe(first.key.toString("hex"));
    expect(recordedKeyId(db.writer)).toBe(first.id);
    expect(first.id).toMatch(/^[0-9a-f]{16}$/);
    expect(first.id).not.toBe(first.key.toString("hex").slice(0, 16));
    const second = loadInstallationKey(db, {});
    expect(second.key.equals(first.key)).toBe(true);
    expect(second.source).toEqual({ kind: "file", path, minted: false });
    db.close();
  });

  it("prefers SMARTMONEY_SECRET_KEY (hex or base64) and then writes no file", () => {
    const db = database();
    const raw = randomBytes(32);
    for (const text of [raw.toString("hex"), raw.toString("base64"), raw.toString("base64url")]) {
      const loaded = loadInstallationKey(db, { [SECRET_KEY_ENV]: text });
      expect(loaded.key.equals(raw)).toBe(true);
      expect(loaded.source).toEqual({ kind: "env" });
    }
    expect(existsSync(keyFilePath(db.path))).toBe(false);
    expect(recordedKeyId(db.writer)).toBe(keyId(raw));
    db.close();
  });

  it("takes another key as its own, since nothing depends on the old one", () => {
    const db = database();
    loadInstallationKey(db, {});
    const other = randomBytes(32);
    expect(loadInstallationKey(db, hex(other)).id).toBe(keyId(other));
    expect(recordedKeyId(db.writer)).toBe(keyId(other));
    db.close();
  });

  it("refuses a key of the wrong length, naming the variable", () => {
    const db = database();
    for (const bad of [
      "abc",
      randomBytes(16).toString("hex"),
      randomBytes(31).toString("base64"),
    ]) {
      expect(parseSecretKey(bad)).toMatchObject({ ok: false });
      expect(() => loadInstallationKey(db, { [SECRET_KEY_ENV]: bad })).toThrow(
        /SMARTMONEY_SECRET_KEY must be 32 bytes/,
      );
    }
    db.close();
  });

  it("refuses a damaged key file instead of silently making a new key", () => {
    const db = database();
    writeFileSync(keyFilePath(db.path), "not a key\n", { mode: 0o600 });
    expect(() => loadInstallationKey(db, {})).toThrow(/malformed/);
    expect(readFileSync(keyFilePath(db.path), "utf8")).toBe("not a key\n");
    db.close();
  });

  it("gives an in-memory database a throwaway key and writes nothing", () => {
    const db = openDb(":memory:");
    migrate(db.writer);
    const loaded = loadInstallationKey(db, {});
    expect(loaded.key).toHaveLength(32);
    expect(loaded.source).toEqual({ kind: "memory" });
    expect(existsSync(":memory:.key")).toBe(false);
    db.close();
  });
});

describe("the installation key of a database with webhook secrets", () => {
  it("accepts the key they were stored with, from the file or the variable", () => {
    const db = database();
    const loaded = loadInstallationKey(db, {});
    storeSecret(db, loaded.key);
    expect(loadInstallationKey(db, {}).id).toBe(loaded.id);
    rmSync(keyFilePath(db.path));
    expect(loadInstallationKey(db, hex(loaded.key)).id).toBe(loaded.id);
    db.close();
  });

  it("refuses a missing key with one line naming the expected id, and creates no file", () => {
    const db = database();
    const loaded = loadInstallationKey(db, {});
    storeSecret(db, loaded.key);
    rmSync(keyFilePath(db.path));
    const refused = openInstallationKey(db.writer, db.path, {}, 0);
    expect(refused.ok).toBe(false);
    const reason = refused.ok ? "" : refused.reason;
    expect(reason).toContain(`installation key id ${loaded.id}`);
    expect(reason).toContain(
      `${SECRET_KEY_ENV} is unset and ${keyFilePath(db.path)} does not exist`,
    );
    expect(reason).toContain(`put the key file from your backup at ${keyFilePath(db.path)}`);
    expect(reason).not.toContain(loaded.key.toString("hex"));
    expect(reason).not.toContain("\n");
    expect(existsSync(keyFilePath(db.path))).toBe(false);
    expect(recordedKeyId(db.writer)).toBe(loaded.id);
    db.close();
  });

  it("refuses a different key, from the variable or the file, naming both ids", () => {
    const db = database();
    const loaded = loadInstallationKey(db, {});
    storeSecret(db, loaded.key);
    const other = randomBytes(32);
    expect(() => loadInstallationKey(db, hex(other))).toThrow(
      `needs installation key id ${loaded.id} (it stores encrypted webhook secrets), but ${SECRET_KEY_ENV} holds key id ${keyId(other)}; set ${SECRET_KEY_ENV} to that key, or unset it`,
    );
    writeFileSync(keyFilePath(db.path), `${other.toString("hex")}\n`);
    expect(() => loadInstallationKey(db, {})).toThrow(
      `${keyFilePath(db.path)} holds key id ${keyId(other)}`,
    );
    expect(recordedKeyId(db.writer)).toBe(loaded.id);
    db.close();
  });

  it("points at the key an interrupted rotation left in <db>.key.next", () => {
    const db = database();
    const loaded = loadInstallationKey(db, {});
    storeSecret(db, loaded.key);
    const path = keyFilePath(db.path);
    writeFileSync(`${path}.next`, readFileSync(path));
    writeFileSync(path, `${randomBytes(32).toString("hex")}\n`);
    expect(() => loadInstallationKey(db, {})).toThrow(
      `a key rotation was interrupted: rename ${path}.next to ${path}`,
    );
    db.close();
  });

  it("checks a database from before key ids by decrypting a stored secret", () => {
    const db = database();
    const key = randomBytes(32);
    storeSecret(db, key);
    expect(recordedKeyId(db.writer)).toBeNull();
    expect(() => loadInstallationKey(db, {})).toThrow(
      /predate recorded key ids\), but SMARTMONEY_SECRET_KEY is unset.*does not exist/,
    );
    expect(existsSync(keyFilePath(db.path))).toBe(false);
    expect(() => loadInstallationKey(db, hex(randomBytes(32)))).toThrow(/predate recorded key ids/);
    expect(recordedKeyId(db.writer)).toBeNull();
    expect(loadInstallationKey(db, hex(key)).id).toBe(keyId(key));
    expect(recordedKeyId(db.writer)).toBe(keyId(key));
    db.close();
  });
});
