import { randomBytes } from "node:crypto";
import type { Dispatcher } from "undici";
import type { Clock } from "../clock";
import type { Config } from "../config";
import type { Log } from "../log";
import { type AttemptResult, deliverAttempt } from "./deliver";
import type { AttemptOutcome, Claimed, DeliveryStore } from "./deliveries";
import type { Endpoint, Endpoints } from "./endpoints";
import {
  buildPayload,
  buildSamplePayload,
  type FollowedVia,
  serializePayload,
  type WebhookEvent,
} from "./payload";

export interface TestOutcome extends AttemptResult {
  deliveryId: string;
  event: WebhookEvent;
}

export type Sender = ReturnType<typeof createSender>;

/**
 * Turns a claimed delivery into one signed POST: the payload is rebuilt from the stored signal,
 * signed with the endpoint's secret, and deliverAttempt stamps a fresh timestamp. Every
 * outcome comes back as a value; a delivery that cannot even be built fails like an attempt.
 */
export function createSender(deps: {
  config: Config;
  clock: Clock;
  endpoints: Endpoints;
  store: DeliveryStore;
  dispatcher: Dispatcher;
  log: Log;
}) {
  const { config, clock, endpoints, store, dispatcher, log } = deps;
  const now = () => clock.now();
  // An endpoint's secret never changes, so it is decrypted once, not on every attempt (the
  // decryption was a tenth of a busy drainer's time). Plaintext stays in this process only,
  // which already holds the installation key that opens every secret.
  const secrets = new Map<string, string>();

  function secretOf(endpointId: string): string {
    let secret = secrets.get(endpointId);
    if (secret === undefined) {
      secret = endpoints.secretOf(endpointId);
      secrets.set(endpointId, secret);
    }
    return secret;
  }

  /** One attempt; what only the operator may see goes to the log and no further. */
  async function attempt(url: string, endpointId: string, deliveryId: string, rawBody: string) {
    const { logDetail, ...result } = await sendOnce(url, endpointId, deliveryId, rawBody);
    if (logDetail !== undefined) {
      log.warn(
        { endpoint_id: endpointId, delivery_id: deliveryId, detail: logDetail },
        "webhook target blocked",
      );
    }
    return result;
  }

  function sendOnce(url: string, endpointId: string, deliveryId: string, rawBody: string) {
    return deliverAttempt({
      url,
      rawBody,
      secret: secretOf(endpointId),
      deliveryId,
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      now,
      dispatcher,
    });
  }

  return {
    async send(claimed: Claimed, url: string): Promise<AttemptOutcome> {
      const startedAt = clock.now();
      try {
        const signal = store.signalForDelivery(claimed.signalId);
        if (!signal) throw new Error(`signal ${claimed.signalId} is missing`);
        const payload = buildPayload({
          signal,
          publicUrl: config.publicUrl,
          ...(claimed.event === "alert.followed_wallet"
            ? { followedVia: (claimed.followedVia ?? "wallet") as FollowedVia }
            : {}),
        });
        const result = await attempt(
          url,
          claimed.endpointId,
          claimed.id,
          serializePayload(payload),
        );
        return { ...result, startedAt };
      } catch (error) {
        // Only a fault of ours lands here (a missing row, a secret the key cannot open): record
        // it like a failed attempt so the delivery is visibly stuck instead of silently leased.
        return {
          ok: false,
          retryable: true,
          statusCode: null,
          error: `not sent: ${(error as Error).message}`,
          responseExcerpt: null,
          startedAt,
          durationMs: 0,
        };
      }
    },

    /** The Test action: a sample payload of the endpoint's own event, sent at once, not stored. */
    async sendTest(endpoint: Endpoint): Promise<TestOutcome> {
      const event: WebhookEvent =
        endpoint.channel === "dashboard"
          ? "alert.followed_wallet"
          : `signal.${endpoint.scoreType ?? "whale"}`;
      const payload = buildSamplePayload({ event, publicUrl: config.publicUrl, nowMs: now() });
      const deliveryId = `dlv_${randomBytes(12).toString("hex")}`;
      const result = await attempt(
        endpoint.callbackUrl,
        endpoint.id,
        deliveryId,
        serializePayload(payload),
      );
      return { ...result, deliveryId, event };
    },
  };
}
