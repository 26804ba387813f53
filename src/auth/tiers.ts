export const TIERS = ["free", "terminal", "terminal_pro"] as const;
export type Tier = (typeof TIERS)[number];

export function isTier(value: string): value is Tier {
  return (TIERS as readonly string[]).includes(value);
}

/** True when `tier` may call an endpoint whose minimum tier is `minimum`. */
export function tierAllows(tier: Tier, minimum: Tier): boolean {
  return TIERS.indexOf(tier) >= TIERS.indexOf(minimum);
}

/** Calls per rolling hour and per rolling 30 days (docs/api.md, Rate limits). */
export const TIER_LIMITS: Record<Tier, { hourly: number; monthly: number }> = {
  free: { hourly: 50, monthly: 500 },
  terminal: { hourly: 1_000, monthly: 50_000 },
  terminal_pro: { hourly: 5_000, monthly: 250_000 },
};

/** Webhook endpoints per account (docs/api.md, Rate limits). */
export const WEBHOOK_ENDPOINT_CAP: Record<Tier, number> = {
  free: 1,
  terminal: 10,
  terminal_pro: 10,
};
