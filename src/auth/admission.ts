import type { Account, Accounts, Caller, KeyKind } from "./accounts";
import type { RateDecision, RateLimiter } from "./rate-limit";
import { type Tier, tierAllows } from "./tiers";

/**
 * Admission: who is calling, whether their tier may call the endpoint, and whether their quota
 * has room. The one rule for every request the REST API answers, whichever way it came in: the
 * router's middleware (http/middleware/auth.ts) and the answer lane (http/answer-lane.ts) both
 * call these functions, so the two cannot disagree (docs/api.md, Basics and Rate limits).
 *
 * A refusal is returned, not thrown: the answer lane, meeting one, hands the request to the
 * router, which asks again and answers the refusal; building an Error for it would be waste.
 */
export interface Refusal {
  code: "unauthorized" | "forbidden" | "rate_limited";
  message: string;
}

export type Identified = { ok: true; caller: Caller } | { ok: false; refusal: Refusal };

/** A call's outcome, and the quota to show the caller either way. */
export type Charged =
  | { ok: true; quota: RateDecision }
  | { ok: false; refusal: Refusal; quota: RateDecision };

const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** "Bearer " and a key (svc_api_ or svc_mcp_ and 48 hex digits, accounts.ts). */
const BEARER_HEADER_LENGTH = 7 + 56;

/** The key of an `Authorization: Bearer <key>` header, or undefined when it has another shape. */
export function bearerKey(header: string): string | undefined {
  // The common case, a well-formed key, needs no regex: accounts.authenticate checks its shape.
  if (header.length === BEARER_HEADER_LENGTH && header.startsWith("Bearer ")) {
    return header.slice(7);
  }
  return BEARER.exec(header)?.[1];
}

/**
 * The caller behind an Authorization header. A key of the other kind (an MCP key on /v1, an API
 * key on /mcp) is refused like an unknown key.
 */
export function identify(
  accounts: Accounts,
  header: string | undefined,
  kind: KeyKind,
): Identified {
  const expected =
    kind === "api" ? "'Bearer svc_api_…' (an API key)" : "'Bearer svc_mcp_…' (an MCP key)";
  if (!header) return unauthorized(`missing Authorization header: send ${expected}`);
  const key = bearerKey(header);
  if (!key) return unauthorized(`malformed Authorization header: send ${expected}`);
  const caller = accounts.authenticate(key);
  if (!caller) return unauthorized(`invalid or revoked ${kind === "api" ? "API" : "MCP"} key`);
  if (caller.kind !== kind) {
    return unauthorized(
      kind === "api"
        ? "an MCP key (svc_mcp_) cannot call the REST API: use an svc_api_ key"
        : "an API key (svc_api_) cannot call the MCP endpoint: use an svc_mcp_ key",
    );
  }
  return { ok: true, caller };
}

function unauthorized(message: string): Identified {
  return { ok: false, refusal: { code: "unauthorized", message } };
}

/** An account's limits, as the ledger takes them. */
function limitsOf(account: Account) {
  return { hourly: account.hourlyLimit, monthly: account.monthlyLimit };
}

/**
 * The tier gate and the rate limit, in that order: a 403 is not counted, a 429 is not counted,
 * a call that passes both is counted whatever it answers. `what` names the thing called in a
 * 403 (an MCP tool, the MCP server); `calls` counts a batch (MCP) all at once or not at all.
 */
export function charge(
  limiter: RateLimiter,
  account: Account,
  minTier: Tier,
  options: { what?: string; calls?: number } = {},
): Charged {
  if (!tierAllows(account.tier, minTier)) {
    return {
      ok: false,
      refusal: {
        code: "forbidden",
        message: tierRefusal(options.what ?? "this endpoint", minTier, account.tier),
      },
      quota: quotaOf(limiter, account),
    };
  }
  const quota =
    options.calls === undefined
      ? limiter.admit(account.id, limitsOf(account))
      : limiter.admitMany(account.id, limitsOf(account), options.calls);
  if (quota.admitted) return { ok: true, quota };
  return { ok: false, refusal: { code: "rate_limited", message: rateRefusal(quota) }, quota };
}

/** Why a tier may not call `what`, worded alike by REST and both MCP transports. */
export function tierRefusal(what: string, minTier: Tier, tier: Tier): string {
  return `${what} needs the ${minTier} tier or above; this key's account is on ${tier}`;
}

/** Why a call past the quota was refused, and when to retry. */
function rateRefusal(quota: RateDecision): string {
  return `${quota.window === "hour" ? "hourly" : "30-day"} rate limit of ${quota.limit} calls reached; retry in ${quota.retryAfter} s`;
}

/** The quota as it stands, nothing counted: for answers that are not calls (404, 405). */
export function quotaOf(limiter: RateLimiter, account: Account): RateDecision {
  return limiter.peek(account.id, limitsOf(account));
}

/**
 * Undoes charge()'s count for an answer that is not counted but is only known once the call
 * was admitted (the webhook endpoint cap's 403), and returns the quota as it now stands.
 */
export function refund(limiter: RateLimiter, account: Account, minute: number): RateDecision {
  limiter.refund(account.id, minute);
  return quotaOf(limiter, account);
}

/** The three quota headers, and Retry-After on a refusal (docs/api.md, Rate limits). */
export function quotaHeaders(set: (name: string, value: string) => void, quota: RateDecision) {
  set("X-RateLimit-Limit", String(quota.limit));
  set("X-RateLimit-Remaining", String(quota.remaining));
  set("X-RateLimit-Reset", String(quota.resetAt));
  if (quota.retryAfter !== undefined) set("Retry-After", String(quota.retryAfter));
}
