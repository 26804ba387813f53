/**
 * The errors the core raises for a caller to see, and the closed list of codes (docs/api.md,
 * Errors) with the HTTP status each maps to: REST answers them as the envelope, MCP as tool
 * errors, so the rules live here and not in either adapter.
 */
import type * as v from "valibot";
import type { ErrorEnvelopeSchema } from "./schemas/shared";

export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  rate_limited: 429,
  internal_error: 500,
  storage_full: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
/** Beyond each code's own status: 413 (body too large) and 431 (headers too large) are bad_request. */
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode] | 413 | 431;

/** An error a client caused or must be told about; anything else thrown becomes internal_error. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: ErrorStatus;

  constructor(code: ErrorCode, message: string, status?: ErrorStatus) {
    super(message);
    this.code = code;
    this.status = status ?? ERROR_STATUS[code];
  }
}

export const badRequest = (message: string) => new ApiError("bad_request", message);
export const notFound = (message: string) => new ApiError("not_found", message);

export type ErrorEnvelope = v.InferOutput<typeof ErrorEnvelopeSchema>;

export function envelope(code: ErrorCode, message: string, requestId: string): ErrorEnvelope {
  return { error: { code, message, request_id: requestId } };
}
