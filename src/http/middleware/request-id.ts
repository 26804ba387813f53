import { randomBytes } from "node:crypto";
import type { Context } from "hono";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

// A random per-process prefix and a counter: unique across restarts and processes without a
// random draw per request. Always generated here: a client-supplied id could collide with
// another client's in the logs.
const prefix = `req_${randomBytes(6).toString("hex")}`;
let counter = 0;

/** A fresh request id; also for answers given before a request reaches the router (431). */
export function nextRequestId(): string {
  counter += 1;
  return `${prefix}${counter.toString(16).padStart(8, "0")}`;
}

/** Every response carries X-Request-Id; the error envelope repeats it. */
export function assignRequestId(c: Context<HttpEnv>): void {
  const id = nextRequestId();
  c.set("requestId", id);
  setHeader(c, "X-Request-Id", id);
}
