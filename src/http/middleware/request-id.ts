import { randomUUID } from "node:crypto";
import { createMiddleware } from "hono/factory";
import type { HttpEnv } from "../env";

/** Every response carries X-Request-Id; the error envelope repeats it. Always generated here:
 * a client-supplied id would let one client's id collide with another's in the logs. */
export const requestId = createMiddleware<HttpEnv>(async (c, next) => {
  const id = `req_${randomUUID().replaceAll("-", "")}`;
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
  c.res.headers.set("X-Request-Id", id);
});
