import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { fail, ok, type Result } from "../result";

/**
 * Endpoint secrets must be readable by the deliverer (it signs with them), so they cannot be
 * hashed; they are encrypted at rest with AES-256-GCM under one key per installation. A copy
 * of the database alone then reveals no secret.
 */

/** Environment variable holding the installation key; overrides the key file. */
export const SECRET_KEY_ENV = "SMARTMONEY_SECRET_KEY";

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = "v1";

/**
 * Accepts 64 hex characters, or 32 bytes in base64 / base64url (43 or 44 characters), which
 * is what `openssl rand -hex 32` and `openssl rand -base64 32` print.
 */
export function parseSecretKey(text: string): Result<Buffer> {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return ok(Buffer.from(trimmed, "hex"));
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) {
    const key = Buffer.from(trimmed.replace(/\+/g, "-").replace(/\//g, "_"), "base64url");
    if (key.length === KEY_BYTES) return ok(key);
  }
  return fail(
    `${SECRET_KEY_ENV} must be 32 bytes written as 64 hex characters or base64 (openssl rand -hex 32)`,
  );
}

/** `v1.<iv>.<tag>.<ciphertext>`, each part base64url; a fresh random IV every time. */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [FORMAT, iv, tag, ciphertext]
    .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
    .join(".");
}

/**
 * Inverse of encryptSecret. Throws when the value was not produced under this key (the key
 * file was replaced or SMARTMONEY_SECRET_KEY changed): that is an operator error, not a
 * condition to retry.
 */
export function decryptSecret(key: Buffer, stored: string): string {
  const parts = stored.split(".");
  if (parts.length !== 4 || parts[0] !== FORMAT) {
    throw new Error("stored webhook secret is not in the v1 encrypted format");
  }
  const [iv, tag, ciphertext] = parts.slice(1).map((part) => Buffer.from(part, "base64url")) as [
    Buffer,
    Buffer,
    Buffer,
  ];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new Error("stored webhook secret is corrupt");
  }
  const decipher = createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8");
  } catch {
    throw new Error(
      `cannot decrypt a webhook secret: the installation key (${SECRET_KEY_ENV} or the .key file beside the database) is not the one it was stored with`,
    );
  }
}
