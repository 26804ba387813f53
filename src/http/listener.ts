import type { IncomingMessage, ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { App } from "../app";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The app's node:http request handler: the answer lane (answer-lane.ts) first, for answers the
 * router has already computed and kept, then the router through @hono/node-server. What
 * `smartmoney serve` listens with, and the benchmarks and tests that serve over real sockets.
 *
 * `track` (graceful.ts) wraps only the router: a lane answer is written whole before the handler
 * returns, so there is nothing in flight for a drain to wait for, and the bookkeeping would be a
 * tenth of the lane's cost. While `draining`, every request goes to the router, whose answers
 * say `Connection: close`.
 */
export function createRequestListener(
  app: App,
  shutdown: { track(handler: Handler): Handler; draining(): boolean } = {
    track: (handler) => handler,
    draining: () => false,
  },
): Handler {
  const fetchListener = getRequestListener(app.http.fetch);
  const route = shutdown.track((req, res) => void fetchListener(req, res));
  return (req, res) => {
    if (shutdown.draining() || !app.lane.answer(req, res)) route(req, res);
  };
}
