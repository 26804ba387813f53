import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Log } from "../log";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Bounded shutdown of an HTTP server. `track` wraps the server's request handler; `close`
 * then stops listening, closes idle keep-alive connections at once, answers every request still
 * being handled with `Connection: close` (so no client sends another on that connection), gives
 * those requests `graceMs` to finish, and then cuts off whatever is left: a request still
 * running, a client that sent half a request and went silent, a slow reader.
 */
export function gracefulShutdown(log: Log) {
  const open = new Set<ServerResponse>();
  let draining = false;

  const markClosing = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader("Connection", "close");
  };
  // One listener for every response (an emitter calls it with itself as `this`), rather than a
  // closure and a once-wrapper per request: this runs on every request, even the cheapest.
  function forget(this: ServerResponse) {
    open.delete(this);
  }

  return {
    /** True from `close` on: answers must close their connection. */
    draining: () => draining,

    /** The request handler, wrapped so that answers during the drain close their connection. */
    track(handler: Handler): Handler {
      return (req, res) => {
        if (draining) markClosing(res);
        open.add(res);
        res.on("close", forget);
        handler(req, res);
      };
    },

    /** Resolves once every connection is gone; `forced` counts the requests cut off. */
    close(server: Server, graceMs: number): Promise<{ forced: number }> {
      draining = true;
      for (const res of open) markClosing(res);
      return new Promise((resolve) => {
        let forced = 0;
        const deadline = setTimeout(() => {
          forced = open.size;
          if (forced > 0) log.warn({ requests: forced, grace_ms: graceMs }, "requests cut off");
          // Every connection, including those with half a request that no handler saw yet.
          server.closeAllConnections();
        }, graceMs);
        server.close(() => {
          clearTimeout(deadline);
          resolve({ forced });
        });
        server.closeIdleConnections();
      });
    },
  };
}
