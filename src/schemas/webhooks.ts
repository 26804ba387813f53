import * as v from "valibot";
import { DELIVERY_STATUSES } from "../webhooks/deliveries";
import { SCORE_TYPES } from "../webhooks/endpoints";
import { WEBHOOK_EVENTS } from "../webhooks/payload";
import { isoDateTime } from "./shared";

/** Response schemas of the webhook endpoints. */
export const WebhookEndpointSchema = v.object({
  id: v.string(),
  callback_url: v.string(),
  min_score: v.nullable(v.number()),
  score_type: v.nullable(v.picklist(SCORE_TYPES)),
  category: v.nullable(v.string()),
  secret: v.nullable(v.string()),
  created_at: isoDateTime,
});

export const WebhookEndpointListSchema = v.object({ data: v.array(WebhookEndpointSchema) });

const event = v.picklist(WEBHOOK_EVENTS as [string, ...string[]]);

export const WebhookDeliverySchema = v.object({
  id: v.string(),
  event,
  signal_id: v.number(),
  status: v.picklist(DELIVERY_STATUSES),
  attempts: v.number(),
  last_status_code: v.nullable(v.number()),
  last_error: v.nullable(v.string()),
  next_attempt_at: v.nullable(isoDateTime),
  created_at: isoDateTime,
  delivered_at: v.nullable(isoDateTime),
});

export const WebhookTestResultSchema = v.object({
  delivery_id: v.string(),
  event,
  ok: v.boolean(),
  status_code: v.nullable(v.number()),
  error: v.nullable(v.string()),
  duration_ms: v.number(),
  response_excerpt: v.nullable(v.string()),
});
