import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { describeRoute, resolver, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { writeWhenFree } from "../../db/write-when-free";
import { isoOrNull as iso } from "../../domain";
import { ApiError, badRequest, notFound } from "../../errors";
import { toPage } from "../../paging/pages";
import { PageOf } from "../../schemas/shared";
import {
  WebhookDeliverySchema,
  WebhookEndpointListSchema,
  WebhookEndpointSchema,
  WebhookTestResultSchema,
} from "../../schemas/webhooks";
import type { DeliveryPosition } from "../../webhooks/deliveries";
import { DELIVERY_STATUSES, deliveryJson } from "../../webhooks/deliveries";
import { type Endpoint, MAX_CATEGORY_LENGTH, SCORE_TYPES } from "../../webhooks/endpoints";
import { MAX_CALLBACK_URL_LENGTH } from "../../webhooks/ssrf";
import type { HttpEnv } from "../env";
import { access, uncount } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { cursorParam, integer, invalidParams, oneOf } from "../params";

// Request schemas. JSON numbers arrive typed, so these check types rather than parse text.
const CreateBody = v.object({
  callback_url: v.pipe(
    v.string("callback_url is required: an absolute https URL"),
    v.nonEmpty("callback_url is required: an absolute https URL"),
    v.metadata({
      format: "uri",
      pattern: "^https://",
      maxLength: MAX_CALLBACK_URL_LENGTH,
      description:
        "An absolute https URL without credentials, whose host is a public address or a fully qualified public name (not localhost, nor .local, .internal, .localdomain, .home.arpa or .lan).",
    }),
  ),
  min_score: v.optional(
    v.nullable(
      v.pipe(
        v.number("min_score must be an integer from 0 to 100"),
        v.integer("min_score must be an integer from 0 to 100"),
        v.minValue(0, "min_score must be an integer from 0 to 100"),
        v.maxValue(100, "min_score must be an integer from 0 to 100"),
      ),
    ),
  ),
  score_type: v.optional(
    v.nullable(v.picklist(SCORE_TYPES, `score_type must be one of ${SCORE_TYPES.join(", ")}`)),
  ),
  category: v.optional(
    v.nullable(
      v.pipe(
        v.string("category must be a string"),
        v.nonEmpty("category must not be empty"),
        v.maxLength(
          MAX_CATEGORY_LENGTH,
          `category must be at most ${MAX_CATEGORY_LENGTH} characters`,
        ),
        // Stored as given: a value with surrounding whitespace could never match a market.
        v.regex(/^\S(?:[\s\S]*\S)?$/, "category must not start or end with whitespace"),
      ),
    ),
  ),
});

interface BodyIssue {
  type: string;
  message: string;
  received?: string;
  path?: ReadonlyArray<{ key: unknown }>;
}

/**
 * The body's validator hook. valibot words a missing key in its own terms; name the field
 * instead. Everything else keeps the schema's message.
 */
function invalidBody(result: { success: boolean; error?: ReadonlyArray<{ message: string }> }) {
  if (result.success) return;
  const issue = result.error?.[0] as BodyIssue | undefined;
  const key = issue?.path?.map((p) => String(p.key)).join(".");
  if (issue?.type === "object" && issue.received === "undefined") {
    throw badRequest(`${key} is required`);
  }
  throw badRequest(issue?.message ?? "invalid request body");
}

const IdParam = v.object({
  id: v.pipe(
    v.string(),
    v.regex(
      /^wh_[0-9a-f]{24}$/,
      "id must be a webhook endpoint id: wh_ followed by 24 hex characters",
    ),
  ),
});

const DeliveriesQuery = v.object({
  limit: integer("limit", 1, 100, 25),
  status: oneOf("status", DELIVERY_STATUSES),
  cursor: cursorParam,
});

type WebhookEndpoint = v.InferOutput<typeof WebhookEndpointSchema>;
type WebhookDelivery = v.InferOutput<typeof WebhookDeliverySchema>;
type WebhookTestResult = v.InferOutput<typeof WebhookTestResultSchema>;

/** The endpoint as the API shows it; the secret only in the creation answer. */
function endpointJson(endpoint: Endpoint, secret: string | null): WebhookEndpoint {
  return {
    id: endpoint.id,
    callback_url: endpoint.callbackUrl,
    min_score: endpoint.minScore,
    score_type: endpoint.scoreType,
    category: endpoint.category,
    secret,
    created_at: iso(endpoint.createdAt)!,
  };
}

/**
 * The body must be declared JSON (anything else would validate as an empty object) and
 * be a JSON object. The validator then reads the parsed body from hono's cache.
 */
const requireJsonObject = createMiddleware<HttpEnv>(async (c, next) => {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
  if (!/^application\/([\w.-]+\+)?json$/i.test(type)) {
    throw badRequest("Content-Type must be application/json");
  }
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw badRequest("the request body is not valid JSON");
  }
  // valibot takes an array for an object with every key missing; say what is wrong instead.
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badRequest("the request body must be a JSON object");
  }
  await next();
});

const created = (description: string, schema: v.GenericSchema) => ({
  201: {
    description,
    headers: { "X-Request-Id": { schema: { type: "string" as const } } },
    content: { "application/json": { schema: resolver(schema) } },
  },
});

/**
 * Webhook management (docs/webhooks.md, Managing endpoints): on every tier, every call counted. An endpoint of
 * another account answers exactly like one that does not exist.
 */
export function webhookRoutes(app: App) {
  const { limiter, cursors, webhooks } = app;
  // The request thread's writes never wait on the jobs' write lock (src/db/write-when-free.ts).
  const writer = app.deps.db.writer;
  const storage = app.deps.db.storage;
  const free = access(limiter, "free");

  const owned = (id: string, accountId: number): Endpoint => {
    const endpoint = webhooks.endpoints.get(id);
    if (!endpoint || endpoint.accountId !== accountId) throw notFound(`no webhook endpoint ${id}`);
    return endpoint;
  };

  return new Hono<HttpEnv>()
    .post(
      "/webhooks",
      describeRoute({
        tags: ["Webhooks"],
        summary: "Create a webhook endpoint",
        description:
          "Signals matching the filters (omitted = no constraint) are POSTed, signed, to callback_url. The secret is shown only in this answer. The number of endpoints per account is capped by plan (1 on free, 10 on terminal and above).",
        responses: {
          ...created("The endpoint, with its one-time secret", WebhookEndpointSchema),
          ...errorResponses(400, 401, 403, 413, 429),
        },
      }),
      free,
      requireJsonObject,
      validator("json", CreateBody, invalidBody),
      async (c) => {
        const body = c.req.valid("json");
        const { account } = c.get("caller")!;
        const result = await storage.writeAsync("webhook endpoints", () =>
          writeWhenFree(writer, () =>
            webhooks.endpoints.create({
              accountId: account.id,
              tier: account.tier,
              channel: "api",
              callbackUrl: body.callback_url,
              minScore: body.min_score ?? null,
              scoreType: body.score_type ?? null,
              category: body.category ?? null,
            }),
          ),
        );
        if (!result.ok) {
          if (result.refusal === "invalid") throw badRequest(result.reason);
          uncount(c, limiter); // a 403 is never counted, even one found after admission
          throw new ApiError("forbidden", result.reason);
        }
        return c.json(endpointJson(result.value.endpoint, result.value.secret), 201);
      },
    )
    .get(
      "/webhooks",
      describeRoute({
        tags: ["Webhooks"],
        summary: "List your webhook endpoints",
        description: "Every secret is null: secrets are shown only at creation.",
        responses: {
          ...okResponse("The caller's endpoints", WebhookEndpointListSchema, {
            fromReadModels: false,
          }),
          ...errorResponses(401, 429),
        },
      }),
      free,
      (c) => {
        const { account } = c.get("caller")!;
        const data = webhooks.endpoints.list(account.id).map((e) => endpointJson(e, null));
        return c.json({ data });
      },
    )
    .delete(
      "/webhooks/:id",
      describeRoute({
        tags: ["Webhooks"],
        summary: "Remove a webhook endpoint",
        description: "Deliveries still waiting for it end as dead; nothing more is sent.",
        responses: {
          204: { description: "Removed; no body" },
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      free,
      validator("param", IdParam, invalidParams),
      async (c) => {
        const { id } = c.req.valid("param");
        owned(id, c.get("caller")!.account.id);
        await storage.writeAsync("webhook endpoints", () =>
          writeWhenFree(writer, () => webhooks.endpoints.remove(id)),
        );
        return c.body(null, 204);
      },
    )
    .get(
      "/webhooks/:id/deliveries",
      describeRoute({
        tags: ["Webhooks"],
        summary: "Recent deliveries to an endpoint",
        description: "Newest first; filter by status. Dead deliveries are never retried.",
        responses: {
          ...okResponse("A page of deliveries", PageOf(WebhookDeliverySchema), {
            fromReadModels: false,
          }),
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      free,
      validator("param", IdParam, invalidParams),
      validator("query", DeliveriesQuery, invalidParams),
      (c) => {
        const { id } = c.req.valid("param");
        const q = c.req.valid("query");
        owned(id, c.get("caller")!.account.id);
        // The cursor is bound to this endpoint and this status filter.
        const scope = `webhook-deliveries:${id}:${q.status ?? "all"}`;
        let after: DeliveryPosition | undefined;
        if (q.cursor) {
          const [createdAt, deliveryId] = cursors.decode(scope, q.cursor, 2);
          if (typeof createdAt !== "number" || typeof deliveryId !== "string") {
            throw badRequest(
              "cursor is invalid: pass next_cursor from the previous page unchanged",
            );
          }
          after = { createdAt, id: deliveryId };
        }
        const { rows, next } = webhooks.deliveries.page(id, {
          limit: q.limit!,
          ...(q.status ? { status: q.status } : {}),
          ...(after ? { after } : {}),
        });
        return c.json(
          toPage(
            cursors,
            scope,
            rows.map((d): WebhookDelivery => deliveryJson(d)),
            next !== null,
            (last) => [Date.parse(last.created_at), last.id],
          ),
        );
      },
    )
    .post(
      "/webhooks/:id/test",
      describeRoute({
        tags: ["Webhooks"],
        summary: "Send a sample payload now",
        description:
          "Signs and POSTs a sample payload of the endpoint's event type at once and answers the attempt's outcome. Not retried and not listed among deliveries.",
        responses: {
          ...okResponse("The attempt's outcome", WebhookTestResultSchema, {
            fromReadModels: false,
          }),
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      free,
      validator("param", IdParam, invalidParams),
      async (c) => {
        const { id } = c.req.valid("param");
        const endpoint = owned(id, c.get("caller")!.account.id);
        const outcome = await webhooks.sender.sendTest(endpoint);
        app.deps.log.info(
          {
            endpoint_id: id,
            delivery_id: outcome.deliveryId,
            status_code: outcome.statusCode,
            error: outcome.error,
          },
          "webhook test sent",
        );
        const result: WebhookTestResult = {
          delivery_id: outcome.deliveryId,
          event: outcome.event,
          ok: outcome.ok,
          status_code: outcome.statusCode,
          error: outcome.error,
          duration_ms: outcome.durationMs,
          response_excerpt: outcome.responseExcerpt,
        };
        return c.json(result);
      },
    );
}
