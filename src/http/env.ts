import type { Caller } from "../auth/accounts";
import type { Tier } from "../auth/tiers";

/** Per-request values set by the middleware chain. */
export interface HttpEnv {
  Variables: {
    requestId: string;
    caller: Caller | undefined;
    /** The minimum tier of the matched route, for logs. */
    minTier: Tier | undefined;
    /** The minute this request's call was counted in, so a refusal that is not counted can undo it. */
    chargedMinute: number | undefined;
  };
}
