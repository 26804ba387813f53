import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Accounts, KeyKind } from "../../auth/accounts";
import { charge, identify, quotaHeaders, quotaOf, refund } from "../../auth/admission";
import type { RateLimiter } from "../../auth/rate-limit";
import type { Tier } from "../../auth/tiers";
import { ApiError } from "../../errors";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

// The rules themselves live in auth/admission.ts, which the answer lane (answer-lane.ts) calls
// too: this file only binds them to hono's context and turns a refusal into the error envelope.

/**
 * Resolves the bearer key to a caller, or answers 401 (docs/api.md, Basics). A key of the other
 * kind (an MCP key on /v1, an API key on /mcp) is refused like an unknown key.
 */
export function authenticate(accounts: Accounts, kind: KeyKind) {
  return createMiddleware<HttpEnv>(async (c, next) => {
    const identified = identify(accounts, c.req.header("authorization"), kind);
    if (!identified.ok) throw new ApiError(identified.refusal.code, identified.refusal.message);
    c.set("caller", identified.caller);
    await next();
  });
}

/** Marks access() middleware with its tier, so the route table can be read for it. */
export const MIN_TIER = Symbol("minTier");

/**
 * The tier gate and the rate limit (auth/admission.ts, charge): a 403 is not counted, a 429 is
 * not counted, everything that passes both is counted whatever it answers (docs/api.md, Rate
 * limits). Every answer carries the quota headers.
 */
export function access(limiter: RateLimiter, minTier: Tier) {
  const middleware = createMiddleware<HttpEnv>(async (c, next) => {
    c.set("minTier", minTier);
    const caller = c.get("caller");
    if (!caller) throw new Error("access() mounted without authenticate()");
    const charged = charge(limiter, caller.account, minTier);
    quotaHeaders((name, value) => setHeader(c, name, value), charged.quota);
    if (!charged.ok) throw new ApiError(charged.refusal.code, charged.refusal.message);
    c.set("chargedMinute", charged.quota.minute);
    await next();
  });
  // Read back by the OpenAPI document, which publishes each operation's tier as x-min-tier.
  return Object.assign(middleware, { [MIN_TIER]: minTier });
}

/** The minimum tier of a route's handler chain entry, if it is access(). */
export function minTierOf(handler: unknown): Tier | undefined {
  return (handler as { [MIN_TIER]?: Tier } | undefined)?.[MIN_TIER];
}

/** Shows an authenticated caller its quota on an answer that is not a call (404, 405). */
export function showQuota(c: Context<HttpEnv>, limiter: RateLimiter): void {
  const caller = c.get("caller");
  if (!caller) return;
  quotaHeaders((name, value) => setHeader(c, name, value), quotaOf(limiter, caller.account));
}

/**
 * Undoes access()'s count for an answer that is not counted but is only known once the call
 * was admitted (the webhook endpoint cap's 403), and shows the quota as it now stands.
 */
export function uncount(c: Context<HttpEnv>, limiter: RateLimiter): void {
  const caller = c.get("caller");
  const minute = c.get("chargedMinute");
  if (!caller || minute === undefined) return;
  c.set("chargedMinute", undefined);
  const quota = refund(limiter, caller.account, minute);
  quotaHeaders((name, value) => setHeader(c, name, value), quota);
}
