import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import type { App } from "../../app";
import type { TradeKey } from "../../read/trades";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { toPage } from "../page";
import { invalidParams } from "../params";
import { PageOf, TradeSchema } from "../schemas";
import { AddressParam, WalletTradesQuery } from "./trades";

export function walletRoutes(app: App) {
  const { limiter, cursors, read } = app;
  return new Hono<HttpEnv>().get(
    "/wallets/:address/trades",
    describeRoute({
      tags: ["Wallets"],
      summary: "A wallet's fills, newest first",
      description: "Keyset-paginated on (trade_timestamp, id).",
      responses: {
        ...okResponse("A page of trades", PageOf(TradeSchema)),
        ...errorResponses(400, 401, 403, 429),
      },
    }),
    access(limiter, "terminal"),
    validator("param", AddressParam, invalidParams),
    validator("query", WalletTradesQuery, invalidParams),
    (c) => {
      const { address } = c.req.valid("param");
      const q = c.req.valid("query");
      const endpoint = "wallet-trades";
      const after = q.cursor ? (cursors.decode(endpoint, q.cursor, 2) as TradeKey) : undefined;
      const { rows, more } = read.trades.page({ wallet: address }, q.limit!, after);
      return c.json(
        toPage(cursors, endpoint, rows, more, (t) => [Date.parse(t.trade_timestamp), t.id]),
      );
    },
  );
}
