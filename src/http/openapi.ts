import { type DescribeRouteOptions, resolver } from "hono-openapi";
import type * as v from "valibot";
import { ErrorEnvelopeSchema } from "../schemas/shared";

type Responses = NonNullable<DescribeRouteOptions["responses"]>;

const DESCRIPTIONS: Record<number, string> = {
  400: "Malformed parameter or rejected guardrail",
  401: "Missing, invalid or revoked key",
  403: "The key's tier is below the endpoint's minimum (or a plan cap is reached)",
  404: "The resource does not exist",
  413: "Request body over 64 KiB",
  429: "Hourly or 30-day window exhausted; see Retry-After",
  500: "A bug: logged with the request id, answered without details",
  503: "storage_full: the disk holding the database is full and the call needed a write (its count, or the change asked for); nothing was written, reads go on",
};

/** The tags the operations use, declared once so viewers group and describe them. */
export const TAGS = [
  { name: "Utility", description: "Key check" },
  { name: "Trades", description: "Fills from the trade log" },
  { name: "Wallets", description: "Profiles, dossiers and per-wallet analytics" },
  { name: "Signals", description: "Smart-money scores and whale sentiment" },
  { name: "Leaderboards", description: "Wallets ranked by volume, PnL or category record" },
  { name: "Markets", description: "Trending and moving markets, flow and sentiment" },
  { name: "Analyze", description: "One market, analyzed in one call" },
  { name: "Clusters", description: "Sybil clusters from the funding graph" },
  { name: "Investigations", description: "Wallets whose wins beat their entry prices" },
  { name: "Webhooks", description: "Signed signal deliveries to your endpoints" },
];

const rateHeaders = {
  "X-RateLimit-Limit": { schema: { type: "integer" }, description: "Cap of the binding window" },
  "X-RateLimit-Remaining": { schema: { type: "integer" }, description: "Calls left in it" },
  "X-RateLimit-Reset": {
    schema: { type: "integer" },
    description: "Unix seconds when it frees a call",
  },
} as const;

/**
 * OpenAPI response objects for the listed error statuses, all with the one envelope. Every
 * operation can fail with a bug, so 500 is always among them, and every counted call writes its
 * count, so 503 (a full disk) is too.
 */
export function errorResponses(...statuses: number[]): Responses {
  const out: Responses = {};
  for (const status of new Set([...statuses, 500, 503])) {
    out[status] = {
      description: DESCRIPTIONS[status] ?? "Error",
      headers: {
        "X-Request-Id": { schema: { type: "string" as const } },
        ...(status === 401
          ? {
              "WWW-Authenticate": {
                schema: { type: "string" as const },
                description: "The Bearer challenge (RFC 9110)",
              },
            }
          : {}),
        ...(status === 429
          ? { ...rateHeaders, "Retry-After": { schema: { type: "integer" as const } } }
          : {}),
      },
      content: { "application/json": { schema: resolver(ErrorEnvelopeSchema) } },
    };
  }
  return out;
}

/** What every data answer says of the read models behind it (src/http/middleware/read-model-age.ts). */
const readModelHeaders = {
  "X-Read-Model-As-Of": {
    schema: { type: "string", format: "date-time" },
    description:
      "The time the latest read-model refresh computed its figures as of; absent before the first refresh",
  },
  "X-Read-Model-Age": {
    schema: { type: "integer", minimum: 0 },
    description: "Whole seconds since X-Read-Model-As-Of",
  },
} as const;

/**
 * A 200 response with the JSON schema and the rate-limit headers every 200 carries, and the
 * read-model age headers unless the route serves no read model (`fromReadModels: false`).
 */
export function okResponse(
  description: string,
  schema: v.GenericSchema,
  options: { fromReadModels?: boolean } = {},
): Responses {
  return {
    200: {
      description,
      headers: {
        ...rateHeaders,
        "X-Request-Id": { schema: { type: "string" as const } },
        ...(options.fromReadModels === false ? {} : readModelHeaders),
      },
      content: { "application/json": { schema: resolver(schema) } },
    },
  };
}
