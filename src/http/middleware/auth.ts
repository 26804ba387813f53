import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Accounts, KeyKind } from "../../auth/accounts";
import type { RateDecision, RateLimiter } from "../../auth/rate-limit";
import { type Tier, tierAllows } from "../../auth/tiers";
import { ApiError } from "../../errors";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The key of an `Authorization: Bearer <key>` header, or undefined when it has another shape. */
export function bearerKey(header: string): string | undefined {
  return BEARER.exec(header)?.[1];
}

/**
 * Resolves the bearer key to a caller. A key of the other kind (an MCP key on /v1, an API key on
 * /mcp) is refused like an unknown key (docs/api.md, Basics).
 */
export function authenticate(accounts: Accounts, kind: KeyKind) {
  return createMiddleware<HttpEnv>(async (c, next) => {
    const header = c.req.header("authorization");
    const expected =
      kind === "api" ? "'Bearer svc_api_…' (an API key)" : "'Bearer svc_mcp_…' (an MCP key)";
    if (!header)
      throw new ApiError("unauthorized", `missing Authorization header: send ${expected}`);
    const key = bearerKey(header);
    if (!key) {
      throw new ApiError("unauthorized", `malformed Authorization header: send ${expected}`);
    }
    const caller = accounts.authenticate(key);
    if (!caller) {
      throw new ApiError(
        "unauthorized",
        `invalid or revoked ${kind === "api" ? "API" : "MCP"} key`,
      );
    }
    if (caller.kind !== kind) {
      throw new ApiError(
        "unauthorized",
        kind === "api"
          ? "an MCP key (svc_mcp_) cannot call the REST API: use an svc_api_ key"
          : "an API key (svc_api_) cannot call the MCP endpoint: use an svc_mcp_ key",
      );
    }
    c.set("caller", caller);
    await next();
  });
}

export function setRateHeaders(headers: (name: string, value: string) => void, d: RateDecision) {
  headers("X-RateLimit-Limit", String(d.limit));
  headers("X-RateLimit-Remaining", String(d.remaining));
  headers("X-RateLimit-Reset", String(d.resetAt));
  if (d.retryAfter !== undefined) headers("Retry-After", String(d.retryAfter));
}

/** Marks access() middleware with its tier, so the route table can be read for it. */
export const MIN_TIER = Symbol("minTier");

/**
 * The tier gate and the rate limit, in that order: a 403 is not counted, a 429 is not counted,
 * everything that passes both is counted whatever it answers (docs/api.md, Rate limits).
 */
export function access(limiter: RateLimiter, minTier: Tier) {
  const middleware = createMiddleware<HttpEnv>(async (c, next) => {
    c.set("minTier", minTier);
    const caller = c.get("caller");
    if (!caller) throw new Error("access() mounted without authenticate()");
    const { account } = caller;
    const limits = { hourly: account.hourlyLimit, monthly: account.monthlyLimit };
    const header = (name: string, value: string) => setHeader(c, name, value);
    if (!tierAllows(account.tier, minTier)) {
      setRateHeaders(header, limiter.peek(account.id, limits));
      throw new ApiError(
        "forbidden",
        `this endpoint needs the ${minTier} tier or above; this key's account is on ${account.tier}`,
      );
    }
    const decision = limiter.admit(account.id, limits);
    setRateHeaders(header, decision);
    if (!decision.admitted) {
      throw new ApiError(
        "rate_limited",
        `${decision.window === "hour" ? "hourly" : "30-day"} rate limit of ${decision.limit} calls reached; retry in ${decision.retryAfter} s`,
      );
    }
    c.set("chargedMinute", decision.minute);
    await next();
  });
  // Read back by the OpenAPI document, which publishes each operation's tier as x-min-tier.
  return Object.assign(middleware, { [MIN_TIER]: minTier });
}

/** The minimum tier of a route's handler chain entry, if it is access(). */
export function minTierOf(handler: unknown): Tier | undefined {
  return (handler as { [MIN_TIER]?: Tier } | undefined)?.[MIN_TIER];
}

/**
 * Undoes access()'s count for an answer that is not counted but is only known once the call
 * was admitted (the webhook endpoint cap's 403), and shows the quota as it now stands.
 */
export function uncount(c: Context<HttpEnv>, limiter: RateLimiter): void {
  const caller = c.get("caller");
  const minute = c.get("chargedMinute");
  if (!caller || minute === undefined) return;
  const { account } = caller;
  const limits = { hourly: account.hourlyLimit, monthly: account.monthlyLimit };
  limiter.refund(account.id, minute);
  c.set("chargedMinute", undefined);
  setRateHeaders((name, value) => setHeader(c, name, value), limiter.peek(account.id, limits));
}
