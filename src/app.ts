import type { Hono } from "hono";
import { type AppDeps, type Core, createCore } from "./core";
import type { HttpEnv } from "./http/env";
import { createRouter } from "./http/router";

export type { AppDeps } from "./core";

/**
 * The one app object: the core (src/core.ts) with its HTTP surface, REST under /v1 and MCP at
 * /mcp. Handed alike to the router, the CLI commands and the scheduled jobs, so each works on
 * the same services with the same clock. The only module outside http/ and mcp/ that knows them.
 */
export interface App extends Core {
  http: Hono<HttpEnv>;
}

export function createApp(deps: AppDeps): App {
  const app = createCore(deps) as App;
  // The routes read only the core; http is set before any request can reach them.
  app.http = createRouter(app);
  return app;
}
