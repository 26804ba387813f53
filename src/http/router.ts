import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { generateSpecs } from "hono-openapi";
import type { App } from "../app";
import { ApiError } from "../errors";
import { mcpRoutes } from "../mcp/http";
import {
  CONSOLE_CSP,
  CONSOLE_PATH,
  type ConsoleFile,
  type ConsoleFiles,
  consoleFiles,
} from "./console-page";
import { docsPage, scalarViewer } from "./docs-page";
import type { HttpEnv } from "./env";
import { metricsHandler } from "./metrics";
import { authenticate, minTierOf, showQuota } from "./middleware/auth";
import { errorHandler, notFoundHandler } from "./middleware/errors";
import { readModelAge } from "./middleware/read-model-age";
import { assignRequestId } from "./middleware/request-id";
import { requestLog } from "./middleware/request-log";
import { TAGS } from "./openapi";
import { analyzeRoutes } from "./routes/analyze";
import { clusterRoutes } from "./routes/clusters";
import { connectionRoutes } from "./routes/connections";
import { investigationRoutes } from "./routes/investigations";
import { leaderboardRoutes } from "./routes/leaderboards";
import { marketSignalRoutes } from "./routes/market-signals";
import { marketRoutes } from "./routes/markets";
import { tradeRoutes } from "./routes/trades";
import { utilityRoutes } from "./routes/utility";
import { walletSignalRoutes } from "./routes/wallet-signals";
import { walletRoutes } from "./routes/wallets";
import { webhookRoutes } from "./routes/webhooks";

export const API_VERSION = "1.0.0";
const BODY_LIMIT = 64 * 1024;

/**
 * The HTTP surface. Middleware is bound in one visible order: request id, request log, body
 * limit, then per area authentication (and, on /v1, the read models' age), and per route the
 * tier gate and rate limit (`access`).
 */
export function createRouter(app: App): Hono<HttpEnv> {
  const { log } = app.deps;
  const http = new Hono<HttpEnv>();
  const logRequest = requestLog(log);
  // Request id and request log as one middleware: each middleware is a step of hono's dispatch
  // (an async call and its promise) on every request.
  http.use((c, next) => {
    assignRequestId(c);
    return logRequest(c, next);
  });
  const limitBody = bodyLimit({
    maxSize: BODY_LIMIT,
    onError: () => {
      throw new ApiError("bad_request", "request body exceeds 64 KiB", 413);
    },
  });
  // GET and HEAD carry no body; skipping the check spares the Node adapter from building a full
  // Request for every read, which was a large share of a cheap request's cost.
  http.use((c, next) =>
    c.req.method === "GET" || c.req.method === "HEAD" ? next() : limitBody(c, next),
  );
  http.onError(errorHandler(log));
  http.notFound((c) => {
    // An unknown route is not counted, but an authenticated caller still sees its quota.
    showQuota(c, app.limiter);
    return notFoundHandler(c);
  });

  // Public, unauthenticated: for supervisors and for API clients' code generators. A full disk
  // stops writes, not reads: the server stays healthy (a restart would not free space), and
  // says so for the operator (docs/operations.md, When the disk fills up).
  http.get("/healthz", (c) => c.json({ ok: true, storage: app.deps.db.storage.status() }));
  // Operators' ingest figures, behind their own token (off without one).
  http.get("/metrics", metricsHandler(app));
  const documentOptions = {
    documentation: {
      openapi: "3.1.0",
      info: {
        title: "smartmoney API",
        version: API_VERSION,
        description:
          "Read-only smart-money intelligence over Polymarket data. Authenticate with 'Authorization: Bearer svc_api_…'.",
      },
      // A getter: `serve --port 0` learns its public URL only once it listens.
      servers: [
        {
          get url() {
            return app.deps.config.publicUrl;
          },
        },
      ],
      tags: TAGS,
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      },
      security: [{ bearer: [] }],
    },
    exclude: [
      "/healthz",
      "/metrics",
      "/v1/openapi.json",
      "/docs",
      "/docs/scalar.js",
      CONSOLE_PATH,
      `${CONSOLE_PATH}/app.js`,
      `${CONSOLE_PATH}/app.css`,
    ],
  } satisfies Parameters<typeof generateSpecs>[1];
  let document: Promise<unknown> | undefined;
  http.get("/v1/openapi.json", async (c) => {
    document ??= generateSpecs(http, documentOptions, c).then((doc) => withMinTiers(doc, http));
    return c.json(await document);
  });

  // The API reference, rendered by Scalar's viewer served from this binary: works offline.
  http.get("/docs", (c) => c.html(docsPage()));
  http.get("/docs/scalar.js", (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=86400");
    return c.body(scalarViewer());
  });

  // The web console (docs/console.md): static files, no key; the page asks the user for one and
  // calls /v1 with it like any client.
  const consoleFile =
    (pick: (files: ConsoleFiles) => ConsoleFile) => async (c: Context<HttpEnv>) => {
      const served = pick(await consoleFiles());
      c.header("Content-Security-Policy", CONSOLE_CSP);
      c.header("X-Content-Type-Options", "nosniff");
      c.header("Referrer-Policy", "no-referrer");
      c.header("Cache-Control", "no-cache");
      c.header("ETag", served.etag);
      c.header("Vary", "Accept-Encoding");
      if (c.req.header("if-none-match") === served.etag) return c.body(null, 304);
      c.header("Content-Type", served.type);
      if (/\bgzip\b/.test(c.req.header("accept-encoding") ?? "")) {
        c.header("Content-Encoding", "gzip");
        return c.body(served.gzip);
      }
      return c.body(served.body);
    };
  http.get(
    CONSOLE_PATH,
    consoleFile((files) => files.page),
  );
  http.get(`${CONSOLE_PATH}/`, (c) => c.redirect(CONSOLE_PATH, 301));
  http.get(
    `${CONSOLE_PATH}/app.js`,
    consoleFile((files) => files.script),
  );
  http.get(
    `${CONSOLE_PATH}/app.css`,
    consoleFile((files) => files.style),
  );

  // Authentication, then the read models' age headers, as one middleware (one dispatch step).
  const authenticateApi = authenticate(app.accounts, "api");
  const ageHeaders = readModelAge(app.freshness, app.deps.clock);
  http.use("/v1/*", (c, next) => authenticateApi(c, () => ageHeaders(c, next)));
  http.route("/v1", utilityRoutes(app));
  http.route("/v1", webhookRoutes(app));
  http.route("/v1", tradeRoutes(app));
  http.route("/v1", walletRoutes(app));
  http.route("/v1", walletSignalRoutes(app));
  http.route("/v1", leaderboardRoutes(app));
  http.route("/v1", connectionRoutes(app));
  http.route("/v1", clusterRoutes(app));
  http.route("/v1", investigationRoutes(app));
  http.route("/v1", marketSignalRoutes(app));
  http.route("/v1", marketRoutes(app));
  http.route("/v1", analyzeRoutes(app));

  // The MCP endpoint: svc_mcp_ keys only (an svc_api_ key is 401 here, as an MCP key is on /v1).
  http.use("/mcp", authenticate(app.accounts, "mcp"));
  http.route("/mcp", mcpRoutes(app));
  return http;
}

/**
 * Publishes each operation's minimum tier as `x-min-tier`, read from the access() middleware in
 * its handler chain: the tier stated where it is enforced, and nowhere else.
 */
function withMinTiers<T>(doc: T, http: Hono<HttpEnv>): T {
  const paths = (doc as { paths?: Record<string, Record<string, Record<string, unknown>>> }).paths;
  for (const route of http.routes) {
    const tier = minTierOf(route.handler);
    if (!tier) continue;
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const operation = paths?.[path]?.[route.method.toLowerCase()];
    if (operation) operation["x-min-tier"] = tier;
  }
  return doc;
}
