import { type AppDeps, type Core, createCore } from "./core";
import { type AnswerLane, createAnswerLane } from "./http/answer-lane";
import { createRouter } from "./http/router";

export type { AppDeps } from "./core";

/**
 * The one app object: the core (src/core.ts) with its HTTP surface, REST under /v1 and MCP at
 * /mcp. Handed alike to the router, the CLI commands and the scheduled jobs, so each works on
 * the same services with the same clock. The only module outside http/ and mcp/ that knows them.
 */
export interface App extends Core {
  /** The REST and MCP routes (a Hono app: only http/ and mcp/ name the framework). */
  http: ReturnType<typeof createRouter>;
  /** Kept answers sent before the router (src/http/listener.ts serves both). */
  lane: AnswerLane;
}

export function createApp(deps: AppDeps): App {
  const app = createCore(deps) as App;
  app.lane = createAnswerLane({
    accounts: app.accounts,
    limiter: app.limiter,
    freshness: app.freshness,
    clock: deps.clock,
    log: deps.log,
  });
  // The routes read only the core; http is set before any request can reach them.
  app.http = createRouter(app);
  return app;
}
