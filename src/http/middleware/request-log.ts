import type { Context, MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Log } from "../../log";
import type { HttpEnv } from "../env";

/** One structured line per request. Never the Authorization header, a key or a body. */
export function requestLog(log: Log) {
  return (c: Context<HttpEnv>, next: Continue): Outcome => {
    // Below info (e.g. a benchmark at warn) the line would be dropped: do not build it.
    if (!log.isLevelEnabled("info")) return next();
    return logged(log, c, next);
  };
}

/** The rest of the chain (hono's next()), which answers errors itself: it never throws. */
type Continue = () => Outcome;
type Outcome = ReturnType<MiddlewareHandler>;

async function logged(log: Log, c: Context<HttpEnv>, next: Continue): Promise<void> {
  const started = performance.now();
  await next();
  const status = c.res.status;
  writeRequestLine(log, {
    request_id: c.get("requestId"),
    account_id: c.get("caller")?.account.id ?? null,
    method: c.req.method,
    route: c.res.status === 404 && !c.get("minTier") ? null : routePath(c),
    path: c.req.path,
    status,
    started,
  });
}

/** The request line, also written by the answer lane (src/http/answer-lane.ts). */
export function writeRequestLine(
  log: Log,
  request: {
    request_id: string;
    account_id: number | null;
    method: string;
    route: string | null;
    path: string;
    status: number;
    /** performance.now() when the request began. */
    started: number;
  },
): void {
  const { started, ...fields } = request;
  const line = { ...fields, duration_ms: Math.round((performance.now() - started) * 100) / 100 };
  if (line.status >= 500) log.error(line, "request");
  else log.info(line, "request");
}
