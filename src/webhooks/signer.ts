import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** Prefix every endpoint secret carries. */
export const SECRET_PREFIX = "whsec_";

/** Receivers reject deliveries whose timestamp is further than this from their clock, either way. */
export const SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

/**
 * A new endpoint secret: `whsec_` + 32 random bytes as 64 lowercase hex characters. Hex keeps
 * the secret copy-paste safe (no `-`/`_` ambiguity at line breaks) and trivially validated.
 */
export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString("hex")}`;
}

/**
 * X-Service-Signature: hex HMAC-SHA256 over `${timestampMs}.${rawBody}`, keyed with the whole
 * secret string (prefix included) as UTF-8 bytes (docs/webhooks.md, Verifying a delivery).
 */
export function signPayload(secret: string, timestampMs: number, rawBody: string): string {
  return hmacHex(secret, String(timestampMs), rawBody);
}

function hmacHex(secret: string, timestampText: string, rawBody: string): string {
  return createHmac("sha256", secret).update(`${timestampText}.${rawBody}`).digest("hex");
}

/**
 * The reference receiver's check: the timestamp header is integer epoch milliseconds within
 * `toleranceMs` of `nowMs` in either direction, and the signature matches in constant time.
 */
export function verifySignature(
  secret: string,
  timestampHeader: string | null | undefined,
  rawBody: string,
  signatureHeader: string | null | undefined,
  nowMs: number,
  toleranceMs: number = SIGNATURE_TOLERANCE_MS,
): boolean {
  if (!timestampHeader || !signatureHeader) return false;
  if (!/^\d{1,16}$/.test(timestampHeader)) return false;
  if (!/^[0-9a-fA-F]{64}$/.test(signatureHeader)) return false;
  const timestampMs = Number(timestampHeader);
  if (Math.abs(nowMs - timestampMs) > toleranceMs) return false;
  // Signed over the header text exactly as sent, so a re-formatted number cannot match.
  const expected = Buffer.from(hmacHex(secret, timestampHeader, rawBody), "hex");
  const given = Buffer.from(signatureHeader, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
