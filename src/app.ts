import type { Hono } from "hono";
import { type Accounts, createAccounts } from "./auth/accounts";
import { createRateLimiter, type RateLimiter } from "./auth/rate-limit";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/open";
import type { HttpEnv } from "./http/env";
import { createRouter } from "./http/router";
import type { Log } from "./log";

/** Everything the app needs from outside. Only the entry points (cli/) create these. */
export interface AppDeps {
  db: Db;
  config: Config;
  clock: Clock;
  log: Log;
  fetch: typeof fetch;
}

/**
 * The one app object: handed alike to the HTTP router, the CLI commands and the scheduled jobs,
 * so each of them works on the same services with the same clock.
 */
export interface App {
  deps: AppDeps;
  accounts: Accounts;
  limiter: RateLimiter;
  http: Hono<HttpEnv>;
  /** Flushes pending state; the caller closes the database. */
  close(): void;
}

export function createApp(deps: AppDeps): App {
  const accounts = createAccounts(deps.db, deps.clock);
  const limiter = createRateLimiter({ db: deps.db, clock: deps.clock, log: deps.log });
  const app = { deps, accounts, limiter } as App;
  app.http = createRouter(app);
  app.close = () => limiter.close();
  return app;
}
