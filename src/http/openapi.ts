import { type DescribeRouteOptions, resolver } from "hono-openapi";
import * as v from "valibot";
import { ERROR_STATUS, type ErrorCode } from "./errors";

export const ErrorEnvelopeSchema = v.object({
  error: v.object({
    code: v.picklist(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    message: v.string(),
    request_id: v.string(),
  }),
});

type Responses = NonNullable<DescribeRouteOptions["responses"]>;

const DESCRIPTIONS: Record<number, string> = {
  400: "Malformed parameter or rejected guardrail",
  401: "Missing, invalid or revoked key",
  403: "The key's tier is below the endpoint's minimum (or a plan cap is reached)",
  404: "The resource does not exist",
  413: "Request body over 64 KiB",
  429: "Hourly or 30-day window exhausted; see Retry-After",
};

const rateHeaders = {
  "X-RateLimit-Limit": { schema: { type: "integer" }, description: "Cap of the binding window" },
  "X-RateLimit-Remaining": { schema: { type: "integer" }, description: "Calls left in it" },
  "X-RateLimit-Reset": {
    schema: { type: "integer" },
    description: "Unix seconds when it frees a call",
  },
} as const;

/** OpenAPI response objects for the listed error statuses, all with the one envelope. */
export function errorResponses(...statuses: number[]): Responses {
  const out: Responses = {};
  for (const status of statuses) {
    out[status] = {
      description: DESCRIPTIONS[status] ?? "Error",
      headers: {
        "X-Request-Id": { schema: { type: "string" as const } },
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
