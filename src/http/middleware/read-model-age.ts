import type { Context, Next } from "hono";
import type { Clock } from "../../clock";
import type { Freshness } from "../../read/freshness";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

/** Routes whose answers come from no read model: the key check and webhook management. */
const NOT_READ_MODELS = ["/v1/_ping", "/v1/webhooks"];

export const AS_OF_HEADER = "X-Read-Model-As-Of";
export const AGE_HEADER = "X-Read-Model-Age";

/**
 * Every data response says how old the read models behind it are: X-Read-Model-As-Of (the ISO
 * time the latest refresh computed them as of) and X-Read-Model-Age (whole seconds since then).
 * The refresh runs beside the server, never in its way, so a refresh that falls behind shows here
 * as a growing age instead of as a stalled request. Before the first refresh neither is sent.
 */
export function readModelAge(freshness: Freshness, clock: Clock) {
  const ageOf = readModelAgeOf(freshness, clock);
  return (c: Context<HttpEnv>, next: Next): Promise<void> => {
    const age = ageOf(c.req.path);
    if (age) {
      setHeader(c, AS_OF_HEADER, age.asOf);
      setHeader(c, AGE_HEADER, age.age);
    }
    return next();
  };
}

/**
 * The two headers' values for an answer to `path`, or null when it gets none: shared by the
 * middleware above and the answer lane (src/http/answer-lane.ts), so both say the same.
 */
export function readModelAgeOf(freshness: Freshness, clock: Clock) {
  let formattedFor: number | null = null;
  let formatted = "";
  return (path: string): { asOf: string; age: string } | null => {
    const asOf = freshness.asOf();
    if (asOf === null || !fromReadModels(path)) return null;
    if (formattedFor !== asOf) {
      formatted = new Date(asOf).toISOString();
      formattedFor = asOf;
    }
    return { asOf: formatted, age: String(Math.max(0, Math.floor((clock.now() - asOf) / 1000))) };
  };
}

function fromReadModels(path: string): boolean {
  for (const prefix of NOT_READ_MODELS) if (path.startsWith(prefix)) return false;
  return true;
}
