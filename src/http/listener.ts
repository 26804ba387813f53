import type { IncomingMessage, ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { App } from "../app";

/**
 * The app's node:http request handler: the answer lane (answer-lane.ts) first, for answers the
 * router has already computed and kept, then the router through @hono/node-server. What
 * `smartmoney serve` listens with, and the benchmarks and tests that serve over real sockets.
 */
export function createRequestListener(
  app: App,
): (req: IncomingMessage, res: ServerResponse) => void {
  const route = getRequestListener(app.http.fetch);
  return (req, res) => {
    if (!app.lane.answer(req, res)) void route(req, res);
  };
}
