import { randomBytes } from "node:crypto";
import { createMiddleware } from "hono/factory";
import type { HttpEnv } from "../env";
import { setHeader } from "../headers";

// A random per-process prefix and a counter: unique across restarts and processes without a
// random draw per request. Always generated here: a client-supplied id could collide with
// another client's in the logs.
const prefix = `req_${randomBytes(6).toString("hex")}`;
let counter = 0;

/** Every response carries X-Request-Id; the error envelope repeats it. */
export const requestId = createMiddleware<HttpEnv>(async (c, next) => {
  counter += 1;
  const id = `${prefix}${counter.toString(16).padStart(8, "0")}`;
  c.set("requestId", id);
  setHeader(c, "X-Request-Id", id);
  await next();
});
