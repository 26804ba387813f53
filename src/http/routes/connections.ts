import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { WalletConnectionsSchema } from "../../schemas/funding";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { address, integer, invalidParams } from "../params";

const ConnectionsParam = v.object({ address: address("address") });
const ConnectionsQuery = v.object({ limit: integer("limit", 1, 500, 100) });

export function connectionRoutes(app: App) {
  const { limiter, funding } = app;
  return new Hono<HttpEnv>().get(
    "/wallets/:address/connections",
    describeRoute({
      tags: ["Wallets"],
      summary: "A wallet's typed funding-graph connections and its sybil cluster",
      description:
        "Typed links, each normalised to the counterparty: funded_by, funded, exchange_withdrawal, " +
        "gas_provider (confidence 1, raw transfers), shared_deposit (0.8), pass_through (0.7) and " +
        "coordinated_timing (0.3-0.49: heuristic leads). Raw money-flow edges are never served. " +
        "Most confident first, then most recent.",
      responses: {
        ...okResponse("The wallet's connections", WalletConnectionsSchema),
        ...errorResponses(400, 401, 403, 429),
      },
    }),
    access(limiter, "terminal"),
    validator("param", ConnectionsParam, invalidParams),
    validator("query", ConnectionsQuery, invalidParams),
    (c) => {
      const { address } = c.req.valid("param");
      const { limit } = c.req.valid("query");
      return c.json(funding.connections(address, limit!));
    },
  );
}
