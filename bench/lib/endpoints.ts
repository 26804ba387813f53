import type { Tier } from "../../src/auth/tiers";

/**
 * What `npm run bench` loads. Every row is measured against the same ceiling (a bare node:http
 * server answering a constant JSON) in the same run. To cover another endpoint, add a row: the
 * app server mints one key per tier named here, on an account whose rate limits are raised.
 */
export interface BenchEndpoint {
  /** Short name for the table and `--only`. */
  name: string;
  method: "GET" | "POST" | "DELETE";
  /** Path and query, e.g. "/v1/_ping"; must answer `status` on the benchmark's database. */
  path: string;
  /** The key sent as `Authorization: Bearer …`; null sends none. */
  tier: Tier | null;
  body?: unknown;
  /** The status every response must have; anything else makes the run invalid. */
  status: number;
  /** Least acceptable requests/s as a share of the ceiling's, when there is a target. */
  target?: number;
}

export const ENDPOINTS: BenchEndpoint[] = [
  // The target: an authenticated, rate-limited endpoint at >= 0.6 of the ceiling.
  {
    name: "ping",
    method: "GET",
    path: "/v1/_ping",
    tier: "terminal_pro",
    status: 200,
    target: 0.6,
  },
];

/** The ceiling's answer: the same body /v1/_ping gives a terminal_pro key. */
export const CEILING_BODY = JSON.stringify({ ok: true, tier: "terminal_pro" });
