import * as v from "valibot";
import { TIERS } from "../auth/tiers";
import { ERROR_STATUS, type ErrorCode } from "../errors";

/**
 * Response schemas: the shapes the API promises. They feed the OpenAPI document,
 * and the contract test validates every response the suite sees against them.
 */
const num = v.number();
const nullableNumber = v.nullable(num);
const isoDateTime = v.pipe(v.string(), v.isoTimestamp());
export const AddressSchema = v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/));

export const TradeSchema = v.object({
  id: v.pipe(num, v.integer()),
  tx_hash: v.pipe(v.string(), v.regex(/^0x[0-9a-f]{64}$/)),
  log_index: v.pipe(num, v.integer()),
  wallet: AddressSchema,
  market_slug: v.string(),
  condition_id: v.string(),
  outcome: v.picklist(["YES", "NO"]),
  outcome_name: v.pipe(
    v.nullable(v.string()),
    v.description(
      'The outcome as Polymarket names it ("Yes", "Up", a team): index 0 is YES, index 1 is NO. Null when unknown.',
    ),
  ),
  side: v.picklist(["BUY", "SELL"]),
  price: num,
  size: num,
  usd_value: num,
  trade_timestamp: isoDateTime,
});

/** Every error answer: REST's envelope (src/http/middleware/errors.ts). */
export const ErrorEnvelopeSchema = v.object({
  error: v.object({
    code: v.picklist(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    message: v.string(),
    request_id: v.string(),
  }),
});

/** The key check (GET /v1/_ping): the key works, on this tier. */
export const PingSchema = v.object({ ok: v.literal(true), tier: v.picklist(TIERS) });

export function PageOf<T extends v.GenericSchema>(item: T) {
  return v.object({ data: v.array(item), next_cursor: v.nullable(v.string()) });
}

export { isoDateTime, nullableNumber };
