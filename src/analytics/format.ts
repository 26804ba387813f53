/** Number formats for the one-sentence signal explanations (fixed, locale-independent). */

import { DAY_MS, HOUR_MS } from "./fill";

/** Whole dollars with thousands separators: 12000.4 → "$12,000". */
export function formatUsd(usd: number): string {
  const whole = Math.round(Math.abs(usd))
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${usd < 0 ? "-" : ""}$${whole}`;
}

/** A share as a whole percentage: 0.314 → "31%". */
export function formatPercent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** A price with up to three decimals and no trailing zeros: 0.080 → "0.08". */
export function formatPrice(price: number): string {
  return String(Number(price.toFixed(3)));
}

/** "1 trade", "3 trades". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** A coarse age: "less than an hour", "5 hours", "2 days" (whole units, rounded down). */
export function formatAge(ms: number): string {
  if (ms < HOUR_MS) return "less than an hour";
  if (ms < DAY_MS) return plural(Math.floor(ms / HOUR_MS), "hour");
  return plural(Math.floor(ms / DAY_MS), "day");
}

/** "a", "a and b", "a, b and c". */
export function joinClauses(clauses: readonly string[]): string {
  if (clauses.length <= 1) return clauses.join("");
  return `${clauses.slice(0, -1).join(", ")} and ${clauses[clauses.length - 1]}`;
}
