import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { notFound } from "../../errors";
import { depthCappedPage, SCREEN_DEPTH } from "../../paging/pages";
import type { EdgeKey } from "../../read/edge-screen";
import { WalletEdgePageSchema, WalletSignalSchema } from "../../schemas/wallets";
import { createAnswerCache, databaseVersion } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { cursorParam, decimal, integer, invalidParams } from "../params";
import { AddressParam } from "./trades";

const ScreenQuery = v.object({
  cursor: cursorParam,
  limit: integer("limit", 1, 100, 25),
  // An edge is a difference of two win rates.
  min_edge: decimal("min_edge", { min: -1, max: 1 }),
  min_bets: integer("min_bets", 0, 1_000_000),
  category: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1, "category must not be empty"),
      v.maxLength(100, "category must be at most 100 characters"),
    ),
  ),
});

export function walletSignalRoutes(app: App) {
  const { limiter, cursors, read } = app;
  // A wallet's signal reads wallet_stats and, for a wallet traded since the refresh, its fills:
  // kept until a refresh lands or anything commits (answer-cache.ts).
  const version = databaseVersion(app.deps.db);
  const signals = createAnswerCache(app.lane, () => `${app.generation} ${version()}`);
  return new Hono<HttpEnv>()
    .get(
      "/signals/wallet/:address",
      describeRoute({
        tags: ["Signals"],
        summary: "A wallet's smart-money score and stats",
        description:
          "The persisted 8-signal score from the latest refresh. A wallet that traded since then is scored by the Bayesian fallback (100 × Bayesian win rate over its own fills; breakdown.method is bayesian_fallback), with PnL pending the refresh.",
        responses: {
          ...okResponse("The wallet's signal", WalletSignalSchema),
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      access(limiter, "free"),
      validator("param", AddressParam, invalidParams),
      (c) => {
        const { address } = c.req.valid("param");
        return signals.json(c, address, () => {
          const signal = read.wallets.signal(address);
          if (!signal) throw notFound(`wallet ${address} has never traded`);
          return signal;
        });
      },
    )
    .get(
      "/signals/screen",
      describeRoute({
        tags: ["Signals"],
        summary: "Edge screener: wallets that beat their own win rate in a category",
        description: `(wallet, category) rows ranked by edge (category win rate minus the wallet's overall win rate), largest first, ties by address then category. bets is the wallet's resolved bets in the category (what min_bets filters); total_pnl is its overall routed PnL. Offset depth is capped at ${SCREEN_DEPTH} rows: the page that reaches row ${SCREEN_DEPTH} has next_cursor null.`,
        responses: {
          ...okResponse("A page of wallet edges", WalletEdgePageSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", ScreenQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        const filter = { minEdge: q.min_edge, minBets: q.min_bets, category: q.category };
        return c.json(
          depthCappedPage<unknown, EdgeKey>(
            cursors,
            "signals-screen",
            q.cursor,
            3,
            q.limit!,
            SCREEN_DEPTH,
            (limit, after) => read.leaderboards.edges(filter, limit, after),
          ),
        );
      },
    );
}
