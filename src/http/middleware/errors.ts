import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { isStorageFull, StorageFullError } from "../../db/storage";
import { ApiError, envelope } from "../../errors";
import type { Log } from "../../log";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

/** The challenge every 401 carries (RFC 9110 §11.6.1; the scheme is RFC 6750's). */
export const BEARER_CHALLENGE = 'Bearer realm="smartmoney"';

/**
 * Three tiers: our own errors carry their code; the framework's (body limit, malformed input)
 * map by status; anything else is a bug, logged with its stack and answered as a bare 500 that
 * leaks neither the stack nor any SQL.
 */
export function errorHandler(log: Log) {
  return (error: Error, c: Context<HttpEnv>) => {
    const requestId = c.get("requestId") ?? "req_unknown";
    // setHeader, as the request-id middleware does: the name keeps its case on the wire.
    setHeader(c, "X-Request-Id", requestId);
    if (error instanceof ApiError) {
      if (error.status === 401) setHeader(c, "WWW-Authenticate", BEARER_CHALLENGE);
      return c.json(envelope(error.code, error.message, requestId), error.status);
    }
    if (error instanceof HTTPException) {
      const status = error.status;
      if (status === 413) {
        return c.json(envelope("bad_request", "request body exceeds 64 KiB", requestId), 413);
      }
      if (status === 401) {
        setHeader(c, "WWW-Authenticate", BEARER_CHALLENGE);
        return c.json(envelope("unauthorized", "invalid or missing API key", requestId), 401);
      }
      if (status < 500) {
        return c.json(envelope("bad_request", error.message || "bad request", requestId), 400);
      }
    }
    if (isStorageFull(error)) {
      // A write no writer wrapped (src/db/storage.ts): still the full disk, not a bug.
      const full = new StorageFullError("this request's write");
      return c.json(envelope(full.code, full.message, requestId), full.status);
    }
    log.error({ request_id: requestId, err: error }, "unhandled error");
    return c.json(
      envelope(
        "internal_error",
        "internal error; quote the request id when reporting it",
        requestId,
      ),
      500,
    );
  };
}

export function notFoundHandler(c: Context<HttpEnv>) {
  const requestId = c.get("requestId") ?? "req_unknown";
  return c.json(
    envelope("not_found", `no route for ${c.req.method} ${c.req.path}`, requestId),
    404,
  );
}
