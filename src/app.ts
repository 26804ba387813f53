import { type AppDeps, type Core, createCore } from "./core";
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
}

export function createApp(deps: AppDeps): App {
  const app = createCore(deps) as App;
  // The routes read only the core; http is set before any request can reach them.
  app.http = createRouter(app);
  return app;
}
