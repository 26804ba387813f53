import type { ServerResponse } from "node:http";
import type { Context } from "hono";

/**
 * Sets a response header. Served by @hono/node-server, it goes straight onto Node's response
 * (which merges it into the status line's headers): hono's own c.header() allocates a fetch
 * Headers object per response, which was a large share of a cheap request's cost. In-process
 * (tests, app.request()) there is no Node response, and c.header() does the job.
 */
export function setHeader(c: Context, name: string, value: string): void {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing && !outgoing.headersSent) outgoing.setHeader(name, value);
  else c.header(name, value);
}
