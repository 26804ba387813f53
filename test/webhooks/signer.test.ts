import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decryptSecret, encryptSecret } from "../../src/webhooks/secrets";
import {
  newSecret,
  SIGNATURE_TOLERANCE_MS,
  signPayload,
  verifySignature,
} from "../../src/webhooks/signer";

const secret = `whsec_${"0123456789abcdef".repeat(4)}`;
const timestamp = 1_793_534_400_000;
const body = '{"event":"signal.whale","note":"café"}';

describe("signPayload", () => {
  it("matches a vector computed outside Node (Python hmac) and node:crypto directly", () => {
    // python3: hmac.new(secret.encode(), b"1793534400000." + body.encode(), sha256).hexdigest()
    const published = "e79286534c5ce0f74b07b782c099df80ba11d9ebb8ff3afb91f391b60422a8ee";
    const direct = createHmac("sha256", Buffer.from(secret, "utf8"))
      .update(Buffer.concat([Buffer.from(`${timestamp}.`), Buffer.from(body, "utf8")]))
      .digest("hex");
    expect(direct).toBe(published);
    expect(signPayload(secret, timestamp, body)).toBe(published);
  });

  it("keys with the whole secret, prefix included", () => {
    const withoutPrefix = createHmac("sha256", secret.slice("whsec_".length))
      .update(`${timestamp}.${body}`)
      .digest("hex");
    expect(signPayload(secret, timestamp, body)).not.toBe(withoutPrefix);
  });
});

describe("verifySignature", () => {
  const signature = signPayload(secret, timestamp, body);
  const verify = (overrides: {
    secret?: string;
    ts?: string | null;
    body?: string;
    sig?: string | null;
    now?: number;
  }) =>
    verifySignature(
      overrides.secret ?? secret,
      overrides.ts === undefined ? String(timestamp) : overrides.ts,
      overrides.body ?? body,
      overrides.sig === undefined ? signature : overrides.sig,
      overrides.now ?? timestamp,
    );

  it("accepts an authentic delivery, upper-case hex included", () => {
    expect(verify({})).toBe(true);
    expect(verify({ sig: signature.toUpperCase() })).toBe(true);
  });

  it("accepts exactly 5 minutes of skew either way and refuses 1 ms more", () => {
    expect(SIGNATURE_TOLERANCE_MS).toBe(300_000);
    expect(verify({ now: timestamp + 300_000 })).toBe(true);
    expect(verify({ now: timestamp - 300_000 })).toBe(true);
    expect(verify({ now: timestamp + 300_001 })).toBe(false);
    expect(verify({ now: timestamp - 300_001 })).toBe(false);
  });

  it("honours a custom tolerance", () => {
    expect(
      verifySignature(secret, String(timestamp), body, signature, timestamp + 1_001, 1_000),
    ).toBe(false);
    expect(
      verifySignature(secret, String(timestamp), body, signature, timestamp + 1_000, 1_000),
    ).toBe(true);
  });

  it("refuses a tampered body, timestamp or secret", () => {
    expect(verify({ body: body.replace("whale", "whalf") })).toBe(false);
    expect(verify({ body: `${body} ` })).toBe(false);
    expect(verify({ ts: String(timestamp + 1), now: timestamp })).toBe(false);
    expect(verify({ ts: `0${timestamp}` })).toBe(false);
    expect(verify({ secret: newSecret() })).toBe(false);
  });

  it("refuses missing or malformed headers without throwing", () => {
    expect(verify({ ts: null })).toBe(false);
    expect(verify({ sig: null })).toBe(false);
    expect(verify({ ts: "" })).toBe(false);
    expect(verify({ ts: "1793534400.5" })).toBe(false);
    expect(verify({ ts: "-1" })).toBe(false);
    expect(verify({ sig: signature.slice(0, 63) })).toBe(false);
    expect(verify({ sig: `${signature}00` })).toBe(false);
    expect(verify({ sig: `${signature.slice(0, 62)}zz` })).toBe(false);
    expect(verify({ sig: `sha256=${signature}` })).toBe(false);
  });
});

describe("newSecret", () => {
  it("is whsec_ plus 32 random bytes in hex, different every time", () => {
    const a = newSecret();
    const b = newSecret();
    expect(a).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(b).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });
});

describe("secrets at rest", () => {
  const key = randomBytes(32);

  it("round-trips, with a fresh IV each time and no plaintext in the stored value", () => {
    const plain = newSecret();
    const a = encryptSecret(key, plain);
    const b = encryptSecret(key, plain);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(a).not.toContain(plain.slice(6, 20));
    expect(decryptSecret(key, a)).toBe(plain);
    expect(decryptSecret(key, b)).toBe(plain);
  });

  it("refuses a value under another key or altered in storage", () => {
    const stored = encryptSecret(key, newSecret());
    expect(() => decryptSecret(randomBytes(32), stored)).toThrow(/installation key/);
    const parts = stored.split(".");
    const ct = Buffer.from(parts[3]!, "base64url");
    ct[0] = ct[0]! ^ 1;
    parts[3] = ct.toString("base64url");
    expect(() => decryptSecret(key, parts.join("."))).toThrow(/installation key/);
    expect(() => decryptSecret(key, "whsec_plaintext")).toThrow(/v1 encrypted format/);
  });
});
