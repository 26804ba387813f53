import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Agent } from "undici";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type AttemptInput,
  deliverAttempt,
  RESPONSE_EXCERPT_BYTES,
  WEBHOOK_USER_AGENT,
} from "../../src/webhooks/deliver";
import {
  buildPayload,
  buildSamplePayload,
  type SignalForDelivery,
  serializePayload,
} from "../../src/webhooks/payload";
import { newSecret, verifySignature } from "../../src/webhooks/signer";
import { createGuardedDispatcher, type Resolver } from "../../src/webhooks/ssrf";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Receiver {
  url(path?: string): string;
  port: number;
  received: Received[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  close(): Promise<void>;
}

const open: Receiver[] = [];

/** A real HTTP server on 127.0.0.1; `answer` runs once the whole request body has arrived. */
async function startReceiver(
  answer: (res: ServerResponse, req: IncomingMessage) => void = (res) => res.writeHead(204).end(),
): Promise<Receiver> {
  const received: Received[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      answer(res, req);
    });
  });
  server.on("connection", () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(receiver);
  return receiver;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((receiver) => receiver.close()));
});

const secret = newSecret();
let clockMs = Date.parse("2026-11-01T12:00:00.000Z");
const now = () => clockMs;

function attempt(
  overrides: Partial<AttemptInput> & { url: string },
): ReturnType<typeof deliverAttempt> {
  return deliverAttempt({
    rawBody: JSON.stringify({ event: "signal.whale", hello: "wörld" }),
    secret,
    deliveryId: "dlv_test_1",
    timeoutMs: 5_000,
    allowPrivate: true,
    now,
    ...overrides,
  });
}

const loopbackResolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];

describe("deliverAttempt against a loopback receiver", () => {
  it("POSTs the raw body with exactly the documented headers and a verifiable signature", async () => {
    const receiver = await startReceiver((res) => res.writeHead(200).end("thanks"));
    const rawBody = serializePayload(
      buildSamplePayload({
        event: "signal.insider",
        publicUrl: "https://sm.example",
        nowMs: now(),
      }),
    );
    const result = await attempt({ url: receiver.url("/hook?x=1"), rawBody });

    expect(result).toMatchObject({
      ok: true,
      statusCode: 200,
      error: null,
      responseExcerpt: "thanks",
      retryable: false,
      timestampMs: clockMs,
    });
    expect(receiver.received).toHaveLength(1);
    const got = receiver.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/hook?x=1");
    expect(got.body.toString("utf8")).toBe(rawBody);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["user-agent"]).toBe(WEBHOOK_USER_AGENT);
    expect(got.headers["user-agent"]).toBe("Service-Webhooks/1");
    expect(got.headers["x-service-timestamp"]).toBe(String(clockMs));
    expect(got.headers["x-service-delivery-id"]).toBe("dlv_test_1");
    expect(got.headers["x-service-signature"]).toMatch(/^[0-9a-f]{64}$/);
    const serviceHeaders = Object.keys(got.headers).filter((name) => name.startsWith("x-"));
    expect(serviceHeaders.sort()).toEqual([
      "x-service-delivery-id",
      "x-service-signature",
      "x-service-timestamp",
    ]);
    expect(
      verifySignature(
        secret,
        got.headers["x-service-timestamp"] as string,
        got.body.toString("utf8"),
        got.headers["x-service-signature"] as string,
        now(),
      ),
    ).toBe(true);
  });

  it("signs every attempt with a fresh timestamp while the delivery id stays the same", async () => {
    const receiver = await startReceiver();
    await attempt({ url: receiver.url() });
    clockMs += 5_000;
    await attempt({ url: receiver.url() });
    const [first, second] = receiver.received as [Received, Received];
    expect(Number(second.headers["x-service-timestamp"])).toBe(
      Number(first.headers["x-service-timestamp"]) + 5_000,
    );
    expect(second.headers["x-service-signature"]).not.toBe(first.headers["x-service-signature"]);
    expect(second.headers["x-service-delivery-id"]).toBe(first.headers["x-service-delivery-id"]);
    for (const got of [first, second]) {
      const ok = verifySignature(
        secret,
        got.headers["x-service-timestamp"] as string,
        got.body.toString("utf8"),
        got.headers["x-service-signature"] as string,
        now(),
      );
      expect(ok).toBe(true);
    }
  });

  it("treats a 500 as a retryable failure and keeps the answer's excerpt", async () => {
    const receiver = await startReceiver((res) => res.writeHead(500).end("database down"));
    const result = await attempt({ url: receiver.url() });
    expect(result).toMatchObject({
      ok: false,
      statusCode: 500,
      error: "HTTP 500",
      responseExcerpt: "database down",
      retryable: true,
    });
  });

  it("treats a 4xx as a failure too", async () => {
    const receiver = await startReceiver((res) => res.writeHead(401).end());
    const result = await attempt({ url: receiver.url() });
    expect(result).toMatchObject({ ok: false, statusCode: 401, error: "HTTP 401" });
  });

  it("does not follow a 302: a failure, and the Location target gets no request", async () => {
    const target = await startReceiver();
    const receiver = await startReceiver((res) =>
      res.writeHead(302, { location: target.url("/elsewhere") }).end(),
    );
    const result = await attempt({ url: receiver.url() });
    expect(result).toMatchObject({ ok: false, statusCode: 302, retryable: true });
    expect(result.error).toMatch(/redirect HTTP 302 not followed/);
    expect(receiver.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
    expect(target.connections).toBe(0);
  });

  it("fails with 'timeout' when the receiver does not answer within timeoutMs", async () => {
    const receiver = await startReceiver(() => {
      // Never answers; the socket is closed by afterEach.
    });
    const result = await attempt({ url: receiver.url(), timeoutMs: 300 });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: "timeout",
      retryable: true,
    });
    expect(receiver.received).toHaveLength(1);
  });

  it("fails with 'timeout' when the body stalls after the headers", async () => {
    const receiver = await startReceiver((res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
    });
    const result = await attempt({ url: receiver.url(), timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, error: "timeout" });
  });

  it("keeps only the first 2 KiB of an endless answer and stops reading", async () => {
    let written = 0;
    const receiver = await startReceiver((res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(64 * 1024, "x");
      // Endless: only a client that stops reading lets this attempt finish at all.
      const pump = () => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", pump);
            return;
          }
        }
      };
      pump();
    });
    const result = await attempt({ url: receiver.url() });
    expect(result.ok).toBe(true);
    expect(result.statusCode).toBe(200);
    expect(RESPONSE_EXCERPT_BYTES).toBe(2048);
    expect(result.responseExcerpt).toBe("x".repeat(RESPONSE_EXCERPT_BYTES));
    expect(written).toBeGreaterThan(RESPONSE_EXCERPT_BYTES);
  });

  it("reports a refused connection as a retryable failure", async () => {
    const receiver = await startReceiver();
    const url = receiver.url();
    await receiver.close();
    const result = await attempt({ url });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: "connection refused",
      responseExcerpt: null,
      retryable: true,
    });
  });

  it("never puts the secret in the result", async () => {
    const receiver = await startReceiver((res) => res.writeHead(500).end());
    const failed = await attempt({ url: receiver.url() });
    const refused = await attempt({ url: "http://127.0.0.1:1/x", allowPrivate: false });
    expect(JSON.stringify([failed, refused])).not.toContain(secret);
    expect(JSON.stringify([failed, refused])).not.toContain(secret.slice(6));
  });
});

describe("SSRF guard at delivery time", () => {
  it("refuses a name that resolves to loopback at connect time, though creation checks pass", async () => {
    const receiver = await startReceiver();
    const url = `https://hooks.example.test:${receiver.port}/hook`;
    const dispatcher = createGuardedDispatcher({
      allowPrivate: false,
      timeoutMs: 5_000,
      resolve: loopbackResolver,
    });
    try {
      const result = await attempt({ url, allowPrivate: false, dispatcher });
      expect(result).toMatchObject({ ok: false, statusCode: null, retryable: false });
      // The customer learns that the target is refused, not what the name resolved to.
      expect(result.error).toBe("blocked: callback_url host resolves to a non-public address");
      expect(result.logDetail).toMatch(
        /^hooks\.example\.test resolves to a non-public address: loopback address 127\.0\.0\.1/,
      );
    } finally {
      await dispatcher.close();
    }
    // The throwaway dispatcher built from `resolve` guards the same way.
    const viaResolve = await attempt({ url, allowPrivate: false, resolve: loopbackResolver });
    expect(viaResolve.error).toBe("blocked: callback_url host resolves to a non-public address");
    expect(viaResolve.logDetail).toMatch(/loopback/);
    expect(receiver.connections).toBe(0);
  });

  it("refuses when any of several resolved addresses is private (rebinding)", async () => {
    const receiver = await startReceiver();
    const result = await attempt({
      url: `https://hooks.example.test:${receiver.port}/hook`,
      allowPrivate: false,
      resolve: async () => [
        { address: "93.184.216.34", family: 4 },
        { address: "::ffff:127.0.0.1", family: 6 },
      ],
    });
    expect(result.error).not.toMatch(/127\.0\.0\.1|loopback/);
    expect(result.logDetail).toMatch(/IPv4-mapped address embedding loopback/);
    expect(receiver.connections).toBe(0);
  });

  it("delivers the same way to a loopback receiver when allowPrivate is set", async () => {
    const receiver = await startReceiver();
    const result = await attempt({
      url: `http://hooks.example.test:${receiver.port}/hook`,
      allowPrivate: true,
      resolve: loopbackResolver,
    });
    expect(result).toMatchObject({ ok: true, statusCode: 204 });
    expect(receiver.received[0]?.headers.host).toBe(`hooks.example.test:${receiver.port}`);
  });

  it("checks IP-literal hosts itself, whatever dispatcher it is handed", async () => {
    const receiver = await startReceiver();
    const permissive = new Agent();
    try {
      for (const url of [
        `https://127.0.0.1:${receiver.port}/hook`,
        `https://[::ffff:127.0.0.1]:${receiver.port}/hook`,
        `https://2130706433:${receiver.port}/hook`,
      ]) {
        const result = await attempt({ url, allowPrivate: false, dispatcher: permissive });
        expect(result, url).toMatchObject({ ok: false, retryable: false, timestampMs: null });
        expect(result.error, url).toMatch(/^blocked: callback_url host is not public: .*loopback/);
      }
    } finally {
      await permissive.close();
    }
    expect(receiver.connections).toBe(0);
  });

  it("re-applies the creation rules: http is refused once allowPrivate is off", async () => {
    const result = await attempt({ url: "http://example.com/hook", allowPrivate: false });
    expect(result).toMatchObject({ ok: false, retryable: false });
    expect(result.error).toMatch(/^blocked: .*must use https/);
  });
});

const whaleSignal: SignalForDelivery = {
  id: 48213,
  type: "whale",
  score: 82.4,
  betValue: 25000,
  side: "BUY",
  outcome: "YES",
  price: 0.37,
  explanation: "A 25,000 USD buy of YES at 0.37.",
  createdAt: Date.parse("2026-11-01T12:34:56.789Z"),
  wallet: { address: "0x5B3E0A1C9D2F4E6A8B7C1D0E9F8A7B6C5D4E3F21", type: "smart_money" },
  market: { title: "Will the Fed cut rates in December?", category: "economics", slug: "fed-cut" },
};

describe("payloads as the receiver sees them (docs/webhooks.md)", () => {
  const signalPart = {
    type: "whale",
    id: 48213,
    score: 82.4,
    betValue: 25000,
    side: "BUY",
    outcome: "YES",
    price: 0.37,
    explanation: "A 25,000 USD buy of YES at 0.37.",
    createdAt: "2026-11-01T12:34:56.789Z",
  };
  const wallet = {
    address: "0x5b3e0a1c9d2f4e6a8b7c1d0e9f8a7b6c5d4e3f21",
    type: "smart_money",
    profileUrl: "https://sm.example/v1/wallets/0x5b3e0a1c9d2f4e6a8b7c1d0e9f8a7b6c5d4e3f21",
  };
  const market = {
    title: "Will the Fed cut rates in December?",
    category: "economics",
    slug: "fed-cut",
  };

  it("signal.whale: exact shape, no followedVia", async () => {
    const receiver = await startReceiver();
    const payload = buildPayload({ signal: whaleSignal, publicUrl: "https://sm.example/" });
    await attempt({ url: receiver.url(), rawBody: serializePayload(payload) });
    const body = JSON.parse(receiver.received[0]!.body.toString("utf8"));
    expect(body).toStrictEqual({ event: "signal.whale", signal: signalPart, wallet, market });
    expect(Object.keys(body)).toEqual(["event", "signal", "wallet", "market"]);
  });

  it("signal.insider from an insider signal", () => {
    const payload = buildPayload({
      signal: { ...whaleSignal, type: "insider", wallet: { ...whaleSignal.wallet, type: null } },
      publicUrl: "https://sm.example",
    });
    expect(payload.event).toBe("signal.insider");
    expect(payload).toMatchObject({ signal: { type: "insider" }, wallet: { type: "unknown" } });
    expect("followedVia" in payload).toBe(false);
  });

  it("alert.followed_wallet: the object key is alert and followedVia is present", async () => {
    const receiver = await startReceiver();
    const payload = buildPayload({
      signal: whaleSignal,
      publicUrl: "https://sm.example",
      followedVia: "list:macro-desk",
    });
    await attempt({ url: receiver.url(), rawBody: serializePayload(payload) });
    const body = JSON.parse(receiver.received[0]!.body.toString("utf8"));
    expect(body).toStrictEqual({
      event: "alert.followed_wallet",
      alert: signalPart,
      wallet,
      market,
      followedVia: "list:macro-desk",
    });
  });

  it("sample payloads follow the endpoint's event and are marked by id 0", () => {
    const at = Date.parse("2026-11-01T00:00:00.000Z");
    const alert = buildSamplePayload({
      event: "alert.followed_wallet",
      publicUrl: "https://a.b",
      nowMs: at,
    });
    expect(alert).toMatchObject({
      event: "alert.followed_wallet",
      alert: { id: 0, type: "whale", createdAt: "2026-11-01T00:00:00.000Z" },
      followedVia: "wallet",
    });
    expect(alert.wallet.profileUrl).toBe(`https://a.b/v1/wallets/${alert.wallet.address}`);
    expect(alert.wallet.address).toMatch(/^0x[0-9a-f]{40}$/);
    const insider = buildSamplePayload({
      event: "signal.insider",
      publicUrl: "https://a.b",
      nowMs: at,
    });
    expect(insider).toMatchObject({ event: "signal.insider", signal: { id: 0, type: "insider" } });
    expect("followedVia" in insider).toBe(false);
  });
});

/** The code blocks docs/webhooks.md marks as tested, exactly as a reader copies them. */
function docsBlock(marker: string, language: string): string {
  const docs = readFileSync(join(import.meta.dirname, "../../docs/webhooks.md"), "utf8");
  const match = new RegExp(
    `<!-- tested: ${marker}[^>]*-->\\s*\`\`\`${language}\\n([\\s\\S]*?)\`\`\``,
  ).exec(docs);
  if (!match?.[1]) throw new Error(`docs/webhooks.md has no tested ${marker} block`);
  return match[1];
}

function hasPython(): boolean {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("the verification code in docs/webhooks.md", () => {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-docs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function realDelivery(): Promise<Received> {
    const receiver = await startReceiver();
    const payload = buildPayload({ signal: whaleSignal, publicUrl: "https://sm.example" });
    await attempt({ url: receiver.url(), rawBody: serializePayload(payload) });
    return receiver.received[0]!;
  }

  it("Node: accepts a real delivery, rejects a tampered body, a wrong secret and a stale timestamp", async () => {
    const file = join(dir, "verify.mjs");
    writeFileSync(file, docsBlock("node-verify", "js"));
    const { verifyWebhook } = (await import(pathToFileURL(file).href)) as {
      verifyWebhook: (s: string, h: IncomingHttpHeaders, b: Buffer, n?: number) => boolean;
    };
    const got = await realDelivery();
    expect(verifyWebhook(secret, got.headers, got.body, now())).toBe(true);
    expect(
      verifyWebhook(secret, got.headers, Buffer.concat([got.body, Buffer.from(" ")]), now()),
    ).toBe(false);
    expect(verifyWebhook(newSecret(), got.headers, got.body, now())).toBe(false);
    expect(verifyWebhook(secret, got.headers, got.body, now() + 5 * 60_000)).toBe(true);
    expect(verifyWebhook(secret, got.headers, got.body, now() + 5 * 60_000 + 1)).toBe(false);
    expect(verifyWebhook(secret, got.headers, got.body, now() - 5 * 60_000 - 1)).toBe(false);
  });

  it.skipIf(!hasPython())("Python: accepts a real delivery and rejects tampering", async () => {
    const got = await realDelivery();
    const script = join(dir, "verify.py");
    writeFileSync(
      script,
      `${docsBlock("python-verify", "python")}
import base64, json, sys
case = json.load(sys.stdin)
headers = {"X-Service-Timestamp": case["timestamp"], "X-Service-Signature": case["signature"]}
print(json.dumps([verify_webhook(case["secret"], headers, base64.b64decode(b), n) for b, n in case["checks"]]))
`,
    );
    const tampered = Buffer.from(got.body.toString("utf8").replace("82.4", "92.4"));
    const input = JSON.stringify({
      secret,
      timestamp: got.headers["x-service-timestamp"],
      signature: got.headers["x-service-signature"],
      checks: [
        [got.body.toString("base64"), now()],
        [tampered.toString("base64"), now()],
        [got.body.toString("base64"), now() + 5 * 60_000 + 1],
      ],
    });
    const output = execFileSync("python3", [script], { input, encoding: "utf8" });
    expect(JSON.parse(output)).toEqual([true, false, false]);
  });
});
