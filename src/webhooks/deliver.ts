import { type Dispatcher, request } from "undici";
import { signPayload } from "./signer";
import { checkCallbackUrl, createGuardedDispatcher, type Resolver } from "./ssrf";

export const WEBHOOK_USER_AGENT = "Service-Webhooks/1";
/** How much of an endpoint's answer is kept for the deliveries list; the rest is discarded. */
export const RESPONSE_EXCERPT_BYTES = 2048;

export interface AttemptInput {
  url: string;
  /** The exact body to send and sign (serializePayload output), identical on every attempt. */
  rawBody: string;
  /** The decrypted endpoint secret. Used only to sign; never logged or returned. */
  secret: string;
  /** Stable across retries and replays so receivers can be idempotent. */
  deliveryId: string;
  timeoutMs: number;
  allowPrivate: boolean;
  now(): number;
  /** Reuse one guarded dispatcher across attempts; a throwaway one is made when absent. */
  dispatcher?: Dispatcher;
  /** Name resolution for the throwaway dispatcher (tests map names without DNS). */
  resolve?: Resolver;
}

export interface AttemptResult {
  /** The endpoint answered 2xx: the delivery is done. */
  ok: boolean;
  statusCode: number | null;
  /** Short, secret-free reason for a failure: "timeout", "HTTP 500", "blocked: ...", ... */
  error: string | null;
  durationMs: number;
  /** The first RESPONSE_EXCERPT_BYTES of the answer's body, decoded as UTF-8. */
  responseExcerpt: string | null;
  /** False when another attempt cannot help: the target is refused by the SSRF rules. */
  retryable: boolean;
  /** X-Service-Timestamp of this attempt (epoch ms); null when nothing was sent. */
  timestampMs: number | null;
  /**
   * For the server log only, never for the customer: what a blocked name resolved to. Telling
   * the customer would let anyone map the operator's internal DNS.
   */
  logDetail?: string;
}

/** What a customer is told when the callback's name resolves to a non-public address. */
export const BLOCKED_RESOLUTION = "blocked: callback_url host resolves to a non-public address";

class AttemptTimeout extends Error {
  constructor() {
    super("timeout");
  }
}

const TIMEOUT_CODES = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

/**
 * One POST of a signed delivery. Never throws for the endpoint's behaviour: every outcome is an
 * AttemptResult. Redirects are answers, not instructions (a 3xx is a failure and is not
 * followed), and the timeout covers connecting, the headers and the excerpt of the body.
 */
export async function deliverAttempt(input: AttemptInput): Promise<AttemptResult> {
  const started = input.now();
  const done = (result: Omit<AttemptResult, "durationMs">): AttemptResult => ({
    ...result,
    durationMs: Math.max(0, input.now() - started),
  });

  // Rules can tighten after creation (ALLOW_PRIVATE switched off); IP literals never reach
  // the dispatcher's lookup, so this is also where they are checked.
  const checked = checkCallbackUrl(input.url, { allowPrivate: input.allowPrivate });
  if (!checked.ok) {
    return done({ ...refused(`blocked: ${checked.reason}`), timestampMs: null });
  }

  const timestampMs = input.now();
  const headers = {
    "content-type": "application/json",
    "x-service-signature": signPayload(input.secret, timestampMs, input.rawBody),
    "x-service-timestamp": String(timestampMs),
    "x-service-delivery-id": input.deliveryId,
    "user-agent": WEBHOOK_USER_AGENT,
  };
  const throwaway =
    input.dispatcher === undefined
      ? createGuardedDispatcher({
          allowPrivate: input.allowPrivate,
          timeoutMs: input.timeoutMs,
          ...(input.resolve ? { resolve: input.resolve } : {}),
        })
      : null;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new AttemptTimeout()), input.timeoutMs);
  try {
    const response = await request(checked.value, {
      method: "POST",
      headers,
      body: input.rawBody,
      dispatcher: input.dispatcher ?? throwaway!,
      signal: controller.signal,
    });
    const excerpt = await readExcerpt(response.body, RESPONSE_EXCERPT_BYTES);
    const status = response.statusCode;
    const ok = status >= 200 && status < 300;
    let error: string | null = null;
    if (status >= 300 && status < 400) error = `redirect HTTP ${status} not followed`;
    else if (!ok) error = `HTTP ${status}`;
    return done({
      ok,
      statusCode: status,
      error,
      responseExcerpt: excerpt,
      retryable: !ok,
      timestampMs,
    });
  } catch (thrown) {
    const blocked = blockedResolution(thrown);
    if (blocked !== null) {
      return done({ ...refused(BLOCKED_RESOLUTION), timestampMs, logDetail: blocked });
    }
    const error = describeFailure(thrown, controller.signal);
    return done({
      ok: false,
      statusCode: null,
      error,
      responseExcerpt: null,
      retryable: true,
      timestampMs,
    });
  } finally {
    clearTimeout(timer);
    await throwaway?.destroy();
  }
}

function refused(error: string): Omit<AttemptResult, "durationMs" | "timestampMs"> {
  return { ok: false, statusCode: null, error, responseExcerpt: null, retryable: false };
}

/**
 * Keeps the first `limit` bytes. Leaving the loop early destroys the body stream, so the rest
 * of a large answer is never read into memory (the connection is dropped instead).
 */
async function readExcerpt(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const kept: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = limit - size;
    kept.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    size += Math.min(chunk.length, room);
    if (size >= limit) break;
  }
  return Buffer.concat(kept).toString("utf8");
}

/** The guarded lookup's refusal (thrown itself or as the cause), with what the name resolved to. */
function blockedResolution(thrown: unknown): string | null {
  const error = thrown as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (const candidate of [error, error?.cause as typeof error]) {
    if (candidate?.code === "ERR_WEBHOOK_BLOCKED_ADDRESS") return String(candidate.message);
  }
  return null;
}

/** A short reason without stack or secret; undici and Node errors carry a `code`. */
function describeFailure(thrown: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof AttemptTimeout) return "timeout";
  const error = thrown as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  const code = typeof error?.code === "string" ? error.code : null;
  if (code !== null && TIMEOUT_CODES.has(code)) return "timeout";
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `DNS lookup failed (${code})`;
  const message = typeof error?.message === "string" && error.message !== "" ? error.message : null;
  if (code !== null) return message ? `${code}: ${message}` : code;
  return message ?? "request failed";
}
