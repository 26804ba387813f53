/**
 * Delivery payloads (docs/webhooks.md, Events and payloads): the one place in the service that speaks camelCase. Built from
 * plain objects so the outbox can store the exact body it will sign and send on every attempt.
 */

export type SignalType = "whale" | "insider";
export type WebhookEvent = "alert.followed_wallet" | "signal.whale" | "signal.insider";
export const WEBHOOK_EVENTS: readonly WebhookEvent[] = [
  "alert.followed_wallet",
  "signal.whale",
  "signal.insider",
];

/** How a dashboard-channel alert reached the account: a direct follow or a followed list. */
export type FollowedVia = "wallet" | `list:${string}`;

/** A fired signal with what the payload shows of its wallet and market. */
export interface SignalForDelivery {
  id: number;
  type: SignalType;
  score: number;
  /** USD value of the trade that fired the signal. */
  betValue: number;
  side: "BUY" | "SELL";
  outcome: string;
  price: number;
  explanation: string;
  /** Epoch milliseconds. */
  createdAt: number;
  wallet: { address: string; type: string | null };
  market: { title: string | null; category: string | null; slug: string };
}

export interface PayloadSignal {
  type: SignalType;
  id: number;
  score: number;
  betValue: number;
  side: "BUY" | "SELL";
  outcome: string;
  price: number;
  explanation: string;
  createdAt: string;
}

interface PayloadCommon {
  wallet: { address: string; type: string; profileUrl: string };
  market: { title: string; category: string; slug: string };
}

export type WebhookPayload =
  | ({ event: "alert.followed_wallet"; alert: PayloadSignal } & PayloadCommon & {
        followedVia: FollowedVia;
      })
  | ({ event: "signal.whale" | "signal.insider"; signal: PayloadSignal } & PayloadCommon);

/** A wallet not yet classified by the refresh job still needs a string `type`. */
export const UNCLASSIFIED_WALLET_TYPE = "unknown";

/**
 * The payload for one (signal, endpoint): `alert.followed_wallet` with `followedVia` for
 * dashboard-channel endpoints, `signal.<type>` without it for API-channel endpoints.
 * `publicUrl` is SMARTMONEY_PUBLIC_URL, the base of `wallet.profileUrl`.
 */
export function buildPayload(input: {
  signal: SignalForDelivery;
  publicUrl: string;
  followedVia?: FollowedVia;
}): WebhookPayload {
  const { signal, publicUrl, followedVia } = input;
  const address = signal.wallet.address.toLowerCase();
  const body: PayloadSignal = {
    type: signal.type,
    id: signal.id,
    score: signal.score,
    betValue: signal.betValue,
    side: signal.side,
    outcome: signal.outcome,
    price: signal.price,
    explanation: signal.explanation,
    createdAt: new Date(signal.createdAt).toISOString(),
  };
  const common: PayloadCommon = {
    wallet: {
      address,
      type: signal.wallet.type ?? UNCLASSIFIED_WALLET_TYPE,
      profileUrl: `${publicUrl.replace(/\/+$/, "")}/v1/wallets/${address}`,
    },
    market: {
      title: signal.market.title ?? "",
      category: signal.market.category ?? "",
      slug: signal.market.slug,
    },
  };
  if (followedVia !== undefined) {
    return { event: "alert.followed_wallet", alert: body, ...common, followedVia };
  }
  return { event: `signal.${signal.type}`, signal: body, ...common };
}

/** The exact bytes sent and signed. Built once per delivery and reused by every attempt. */
export function serializePayload(payload: WebhookPayload): string {
  return JSON.stringify(payload);
}

/** Test deliveries carry signal id 0, which no real signal has (ids start at 1). */
export const SAMPLE_SIGNAL_ID = 0;

/**
 * The payload of the Test action: the endpoint's own event shape, obviously fake values, so a
 * receiver can exercise its parsing and verification without waiting for a real signal.
 */
export function buildSamplePayload(input: {
  event: WebhookEvent;
  publicUrl: string;
  nowMs: number;
}): WebhookPayload {
  const type: SignalType = input.event === "signal.insider" ? "insider" : "whale";
  const signal: SignalForDelivery = {
    id: SAMPLE_SIGNAL_ID,
    type,
    score: 87.5,
    betValue: 25000,
    side: "BUY",
    outcome: "YES",
    price: 0.42,
    explanation: "Test delivery from smartmoney: a sample signal, not a real trade.",
    createdAt: input.nowMs,
    wallet: { address: `0x${"0".repeat(39)}1`, type: type === "insider" ? "insider" : "whale" },
    market: { title: "Sample market (test delivery)", category: "other", slug: "sample-market" },
  };
  return buildPayload({
    signal,
    publicUrl: input.publicUrl,
    ...(input.event === "alert.followed_wallet" ? { followedVia: "wallet" as const } : {}),
  });
}
