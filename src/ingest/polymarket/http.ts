import type { Clock } from "../../clock";
import type { Log } from "../../log";
import { acquire, type RateBucket, type Sleep } from "./limiter";

/**
 * JSON over HTTP for the ingesters: every request passes the client-side rate limiter, and a
 * 429, a 5xx or a network failure is retried after the server's Retry-After (seconds or an
 * HTTP date) or else an exponential backoff with jitter, both capped. A 200 whose body is not
 * JSON (cut short, garbled) is retried too. Other 4xx answers are final. Failures come back as values that name the request.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** The first backoff; doubles with each failure. */
  baseMs: number;
  /** No single wait is longer, Retry-After included. */
  capMs: number;
  /** Per-attempt timeout. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 8,
  baseMs: 500,
  capMs: 60_000,
  timeoutMs: 30_000,
};

export interface HttpDeps {
  fetch: typeof fetch;
  clock: Clock;
  sleep: Sleep;
  /** In [0, 1): the jitter source. */
  random: () => number;
  log?: Log;
  retry?: RetryPolicy;
}

export interface HttpStats {
  requests: number;
  retries: number;
  /** Time spent waiting on the limiter and on backoffs, ms. */
  waitedMs: number;
  /** Endpoints that answered with a Deprecation or Sunset header: path → the headers' text. */
  deprecated: Record<string, string>;
}

export interface HttpFailure {
  ok: false;
  reason: string;
  /** The last HTTP status, when there was an answer. */
  status: number | null;
}

export type HttpResult = { ok: true; value: unknown } | HttpFailure;

export interface HttpClient {
  readonly stats: HttpStats;
  getJson(url: string, buckets: readonly RateBucket[], signal?: AbortSignal): Promise<HttpResult>;
  postJson(
    url: string,
    body: unknown,
    buckets: readonly RateBucket[],
    signal?: AbortSignal,
  ): Promise<HttpResult>;
}

/** Retry-After as ms from now: whole seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Equal jitter: half the exponential step for sure, the other half at random. */
export function backoffMs(failures: number, policy: RetryPolicy, random: () => number): number {
  const step = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(step / 2 + random() * (step / 2));
}

const retryable = (status: number) => status === 429 || status >= 500;

export function createHttpClient(deps: HttpDeps): HttpClient {
  const policy = deps.retry ?? DEFAULT_RETRY;
  const stats: HttpStats = { requests: 0, retries: 0, waitedMs: 0, deprecated: {} };

  /** An endpoint that announces its removal is logged once per client (a round or a stream). */
  function noteDeprecation(url: string, headers: Headers): void {
    const deprecation = headers.get("deprecation");
    const sunset = headers.get("sunset");
    if (deprecation === null && sunset === null) return;
    const path = new URL(url).pathname;
    if (Object.hasOwn(stats.deprecated, path)) return;
    const note = [deprecation && `deprecation ${deprecation}`, sunset && `sunset ${sunset}`]
      .filter(Boolean)
      .join(", ");
    stats.deprecated[path] = note;
    deps.log?.warn({ endpoint: path, deprecation, sunset }, "upstream endpoint is deprecated");
  }

  async function request(
    url: string,
    init: RequestInit,
    buckets: readonly RateBucket[],
    signal?: AbortSignal,
  ): Promise<HttpResult> {
    const name = `${init.method ?? "GET"} ${redact(url)}`;
    let last: HttpFailure = { ok: false, reason: `${name}: not attempted`, status: null };
    for (let attempt = 1; attempt <= policy.attempts; attempt++) {
      if (signal?.aborted) return { ok: false, reason: `${name}: stopped`, status: null };
      stats.waitedMs += await acquire(buckets, deps.clock, deps.sleep, signal);
      stats.requests++;
      let wait: number | undefined;
      try {
        const timeout = AbortSignal.timeout(policy.timeoutMs);
        const response = await deps.fetch(url, {
          ...init,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        const text = await response.text();
        noteDeprecation(url, response.headers);
        if (response.ok) {
          try {
            return { ok: true, value: JSON.parse(text) };
          } catch {
            // A body cut short or garbled on the way (a proxy, a dropped connection) is
            // transient: retried like a 5xx.
            last = { ok: false, reason: `${name}: answer is not JSON`, status: response.status };
          }
        } else {
          last = {
            ok: false,
            reason: `${name}: HTTP ${response.status} ${text.slice(0, 200).replace(/\s+/g, " ")}`,
            status: response.status,
          };
          if (!retryable(response.status)) return last;
          wait = retryAfterMs(response.headers.get("retry-after"), deps.clock.now());
        }
      } catch (error) {
        if (signal?.aborted) return { ok: false, reason: `${name}: stopped`, status: null };
        last = { ok: false, reason: `${name}: ${describeError(error)}`, status: null };
      }
      if (attempt === policy.attempts) break;
      const delay = Math.min(policy.capMs, wait ?? backoffMs(attempt, policy, deps.random));
      deps.log?.warn({ request: name, attempt, wait_ms: delay, reason: last.reason }, "retrying");
      stats.retries++;
      stats.waitedMs += delay;
      await deps.sleep(delay, signal);
    }
    return { ...last, reason: `${last.reason} (gave up after ${policy.attempts} attempts)` };
  }

  return {
    stats,
    getJson: (url, buckets, signal) =>
      request(url, { headers: { accept: "application/json" } }, buckets, signal),
    postJson: (url, body, buckets, signal) =>
      request(
        url,
        {
          method: "POST",
          headers: { accept: "application/json", "content-type": "application/json" },
          body: JSON.stringify(body),
        },
        buckets,
        signal,
      ),
  };
}

/** RPC URLs often carry an API key in the path or query: never put one in a message or log. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    const path =
      u.pathname.length > 1 && /[0-9a-f]{16,}|[A-Za-z0-9_-]{24,}/.test(u.pathname)
        ? "/…"
        : u.pathname;
    const query = [...u.searchParams.keys()].some((k) => /key|token|secret/i.test(k))
      ? "?…"
      : u.search;
    return `${u.origin}${path}${query}`;
  } catch {
    return "(invalid url)";
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === "TimeoutError") return "timed out";
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
