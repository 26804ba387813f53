import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { WHALE_VOLUME_TEXT } from "../../domain";
import { notFound } from "../../errors";
import { depthCappedPage, LEADERBOARD_DEPTH } from "../../paging/pages";
import {
  CATEGORY_SORTS,
  LEADERBOARD_CATEGORIES,
  type LeaderboardCategory,
  type RankKey,
  WHALE_SORTS,
} from "../../read/leaderboards";
import { LeaderboardPageSchema } from "../../schemas/wallets";
import { createAnswerCache } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { cursorParam, decimal, integer, invalidParams, oneOf } from "../params";

const MAX_COUNT = 1_000_000;

const WhalesQuery = v.object({
  sort: oneOf("sort", WHALE_SORTS, "volume"),
  limit: integer("limit", 1, 100, 50),
  min_volume: decimal("min_volume", { min: 0 }),
  min_resolved_bets: integer("min_resolved_bets", 0, MAX_COUNT),
  cursor: cursorParam,
});

const PnlQuery = v.object({
  sort_dir: oneOf("sort_dir", ["asc", "desc"], "desc"),
  limit: integer("limit", 1, 100, 50),
  min_resolved_bets: integer("min_resolved_bets", 0, MAX_COUNT, 5),
  cursor: cursorParam,
});

const CategoryQuery = v.object({
  sort: oneOf("sort", CATEGORY_SORTS, "pnl"),
  limit: integer("limit", 1, 100, 50),
  min_bets: integer("min_bets", 1, MAX_COUNT, 20),
  cursor: cursorParam,
});

/**
 * An unknown category is a leaderboard that does not exist (404), whatever the query says. The
 * message does not repeat the path segment: it is the caller's text, of any length.
 */
const knownCategory = createMiddleware<HttpEnv>(async (c, next) => {
  const cat = c.req.param("cat") ?? "";
  if (!(LEADERBOARD_CATEGORIES as readonly string[]).includes(cat)) {
    throw notFound(
      `no leaderboard for that category: use one of ${LEADERBOARD_CATEGORIES.join(", ")}`,
    );
  }
  await next();
});

const DEPTH_NOTE = `Pages to a depth of ${LEADERBOARD_DEPTH} rows: the page that reaches row ${LEADERBOARD_DEPTH} has next_cursor null.`;

export function leaderboardRoutes(app: App) {
  const { limiter, cursors, read } = app;
  const boards = read.leaderboards;
  // Leaderboards read wallet_stats and wallet_category_stats only, which change with a refresh.
  const answers = createAnswerCache(app.lane, () => app.generation);
  return new Hono<HttpEnv>()
    .get(
      "/leaderboards/whales",
      describeRoute({
        tags: ["Leaderboards"],
        summary: `Whales: wallets with more than ${WHALE_VOLUME_TEXT} total volume`,
        description: `Ranked by the sort, largest first, ties by address. Wallets without a win rate (or z-score) yet are not ranked by it. min_volume and min_resolved_bets narrow the list. ${DEPTH_NOTE}`,
        responses: {
          ...okResponse("A page of whales", LeaderboardPageSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", WhalesQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        const sort = q.sort!;
        const filter = { sort, minVolume: q.min_volume, minResolvedBets: q.min_resolved_bets };
        return answers.json(c, `whales ${JSON.stringify(q)}`, () =>
          depthCappedPage<unknown, RankKey>(
            cursors,
            `leaderboard-whales:${sort}`,
            q.cursor,
            2,
            q.limit!,
            LEADERBOARD_DEPTH,
            (limit, after) => boards.whales(filter, limit, after),
          ),
        );
      },
    )
    .get(
      "/leaderboards/pnl",
      describeRoute({
        tags: ["Leaderboards"],
        summary: "Wallets ranked by PnL",
        description: `Ranks the PnL figure routed per wallet class (pnl_source): wallets whose source is none (market makers and whales without a platform figure) are not ranked. Ties by address. ${DEPTH_NOTE}`,
        responses: {
          ...okResponse("A page of wallets", LeaderboardPageSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", PnlQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        const direction = q.sort_dir!;
        const filter = { direction, minResolvedBets: q.min_resolved_bets! };
        return answers.json(c, `pnl ${JSON.stringify(q)}`, () =>
          depthCappedPage<unknown, RankKey>(
            cursors,
            `leaderboard-pnl:${direction}`,
            q.cursor,
            2,
            q.limit!,
            LEADERBOARD_DEPTH,
            (limit, after) => boards.pnl(filter, limit, after),
          ),
        );
      },
    )
    .get(
      "/leaderboards/category/:cat",
      describeRoute({
        tags: ["Leaderboards"],
        summary: "Wallets ranked within one category",
        description: `cat is one of ${LEADERBOARD_CATEGORIES.join(", ")} (another value is 404). total_volume, total_pnl, win_rate and total_bets are the wallet's figures in the category; z_score is its overall one. Category PnL comes from the on-chain ledger and is withheld (pnl_source none) for market makers and whales, who are not ranked by it. min_bets counts resolved bets in the category. ${DEPTH_NOTE}`,
        parameters: [
          {
            in: "path",
            name: "cat",
            required: true,
            schema: { type: "string", enum: [...LEADERBOARD_CATEGORIES] },
          },
        ],
        responses: {
          ...okResponse("A page of wallets", LeaderboardPageSchema),
          ...errorResponses(400, 401, 403, 404, 429),
        },
      }),
      access(limiter, "terminal"),
      knownCategory,
      validator("query", CategoryQuery, invalidParams),
      (c) => {
        const category = c.req.param("cat") as LeaderboardCategory;
        const q = c.req.valid("query");
        const sort = q.sort!;
        const filter = { sort, minBets: q.min_bets! };
        return answers.json(c, `${category} ${JSON.stringify(q)}`, () =>
          depthCappedPage<unknown, RankKey>(
            cursors,
            `leaderboard-category:${category}:${sort}`,
            q.cursor,
            2,
            q.limit!,
            LEADERBOARD_DEPTH,
            (limit, after) => boards.category(category, filter, limit, after),
          ),
        );
      },
    );
}
