import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { FILL_RETENTION_NOTE } from "../../domain";
import { notFound } from "../../errors";
import { INSTANT_FORMS, parseInstant } from "../../instant";
import { toPage } from "../../paging/pages";
import { type TradeKey, tradeFilterOf } from "../../read/trades";
import { PageOf, TradeSchema } from "../../schemas/shared";
import { createAnswerCache, databaseVersion } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { address, cursorParam, decimal, integer, invalidParams } from "../params";

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/** An RFC 3339 date-time or date, or Unix milliseconds (up to 15 digits). */
function instant(name: string) {
  return v.optional(
    v.pipe(
      v.string(),
      v.metadata({
        anyOf: [
          { type: "string", format: "date-time" },
          { type: "string", format: "date" },
          { type: "string", pattern: "^\\d{1,15}$", description: "Unix milliseconds" },
        ],
      }),
      v.transform(parseInstant),
      v.check((ms) => Number.isFinite(ms), `${name} must be ${INSTANT_FORMS}`),
    ),
  );
}

const TradesQuery = v.object({
  wallet: v.optional(address("wallet")),
  market: v.optional(
    v.pipe(
      v.string(),
      v.regex(TX_HASH, "market must be a condition id: 0x followed by 64 hex characters"),
      v.transform((s) => s.toLowerCase()),
    ),
  ),
  side: v.optional(v.picklist(["BUY", "SELL"], "side must be BUY or SELL")),
  min_bet: decimal("min_bet", { min: 0 }),
  start: instant("start"),
  end: instant("end"),
  limit: integer("limit", 1, 100, 25),
  cursor: cursorParam,
});

const TxParam = v.object({
  txHash: v.pipe(
    v.string(),
    v.regex(TX_HASH, "txHash must be a transaction hash: 0x followed by 64 hex characters"),
  ),
});

export function tradeRoutes(app: App) {
  const { limiter, cursors, read } = app;
  // Pages of fills read fills and markets alone, in explicit windows (no clock): kept until
  // anything commits (answer-cache.ts).
  const version = databaseVersion(app.deps.db);
  const pages = createAnswerCache(app.lane, version);
  return new Hono<HttpEnv>()
    .get(
      "/trades",
      describeRoute({
        tags: ["Trades"],
        summary: "Query trade fills",
        description: `Newest first, keyset-paginated on (trade_timestamp, id). Needs wallet, market, or a start+end window of at most 90 days. ${FILL_RETENTION_NOTE}`,
        responses: {
          ...okResponse("A page of trades", PageOf(TradeSchema)),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", TradesQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        return pages.jsonAsync(c, JSON.stringify(q), async () => {
          const filter = tradeFilterOf(q);
          const after = q.cursor ? (cursors.decode("trades", q.cursor, 2) as TradeKey) : undefined;
          const { rows, more } = await read.trades.page(filter, q.limit!, after);
          return toPage(cursors, "trades", rows, more, (t) => [
            Date.parse(t.trade_timestamp),
            t.id,
          ]);
        });
      },
    )
    .get(
      "/trades/:txHash",
      describeRoute({
        tags: ["Trades"],
        summary: "One fill by transaction hash",
        description: `Where a transaction carries several fills, the one with the lowest log index. ${FILL_RETENTION_NOTE} (404)`,
        responses: {
          ...okResponse("The trade", TradeSchema),
          ...errorResponses(400, 401, 403, 404, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", TxParam, invalidParams),
      async (c) => {
        const { txHash } = c.req.valid("param");
        const trade = await read.trades.byTxHash(txHash);
        if (!trade) throw notFound(`no trade with transaction hash ${txHash.toLowerCase()}`);
        return c.json(trade);
      },
    );
}

export const WalletTradesQuery = v.object({
  limit: integer("limit", 1, 100, 20),
  cursor: cursorParam,
});
export const AddressParam = v.object({ address: address("address") });
