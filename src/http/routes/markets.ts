import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import { HOUR_MS } from "../../analytics/fill";
import type { App } from "../../app";
import { WHALE_VOLUME_TEXT } from "../../domain";
import { badRequest } from "../../errors";
import type { Cursors } from "../../paging/cursor";
import { toPage } from "../../paging/pages";
import type { MarketRank, Ranked, RankKey } from "../../read/market-rankings";
import { pageAfter } from "../../read/market-rankings";
import { marketNotFound } from "../../read/markets";
import {
  MarketDetailSchema,
  MarketFlowSchema,
  MarketRankPageSchema,
  MarketSentimentSchema,
} from "../../schemas/markets";
import { createAnswerCache, databaseVersion } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { boolean, cursorParam, integer, invalidParams } from "../params";

const MAX_SLUG = 300;

export const SlugParam = v.object({
  slug: v.pipe(
    v.string("slug is required"),
    v.minLength(1, "slug must not be empty"),
    v.maxLength(MAX_SLUG, `slug must be at most ${MAX_SLUG} characters`),
  ),
});

/** An optional free-text filter: given, it must say something. */
export function text(name: string, maxLength: number) {
  return v.optional(
    v.pipe(
      v.string(),
      v.minLength(1, `${name} must not be empty`),
      v.maxLength(maxLength, `${name} must be at most ${maxLength} characters`),
    ),
  );
}

export const periodHours = integer("period_hours", 1, 168, 24);

const RankQuery = v.object({
  period_hours: periodHours,
  limit: integer("limit", 1, 100, 20),
  cursor: cursorParam,
  category: text("category", 64),
  search: text("search", 200),
});

const FlowQuery = v.object({
  minutes: integer("minutes", 5, 1440, 60),
  whales_only: boolean("whales_only", true),
});

/** The keyset in a ranking cursor: [number, number, slug]; anything else was not ours. */
function rankKeyOf(cursors: Cursors, endpoint: string, cursor: string): RankKey {
  const [a, b, slug] = cursors.decode(endpoint, cursor, 3);
  if (typeof a !== "number" || typeof b !== "number" || typeof slug !== "string") {
    throw badRequest(
      "cursor is invalid: pass next_cursor from this endpoint's previous page unchanged",
    );
  }
  return [a, b, slug];
}

const WINDOW_NOTE =
  "The window is the period_hours whole clock hours before the current hour plus the current hour so far, aggregated from hourly buckets; rankings are recomputed at most once per hour and read-model refresh.";

export function marketRoutes(app: App) {
  const { limiter, cursors, read } = app;

  function rankingPage(
    endpoint: string,
    list: readonly Ranked<MarketRank>[],
    q: v.InferOutput<typeof RankQuery>,
  ) {
    const after = q.cursor ? rankKeyOf(cursors, endpoint, q.cursor) : undefined;
    const { rows, more } = pageAfter(list, after, q.limit!);
    const page = toPage(cursors, endpoint, rows, more, (last) => last.key);
    return { data: page.data.map((r) => r.row), next_cursor: page.next_cursor };
  }

  const filterOf = (q: v.InferOutput<typeof RankQuery>) => ({
    periodHours: q.period_hours!,
    category: q.category,
    search: q.search,
  });
  const context = () => ({ generation: app.generation, now: app.deps.clock.now() });
  // A market's detail reads the read models, its live hours and fills, and sums its last 24
  // clock hours: kept until a refresh lands, anything commits, or the hour turns.
  const version = databaseVersion(app.deps.db);
  const details = createAnswerCache(
    app.lane,
    () => `${app.generation} ${version()} ${Math.floor(app.deps.clock.now() / HOUR_MS)}`,
    // Up to 70 KB each (the price history): a bounded few megabytes.
    128,
  );

  return (
    new Hono<HttpEnv>()
      // The two fixed paths come before /markets/{slug}, which would otherwise take them.
      .get(
        "/markets/trending",
        describeRoute({
          tags: ["Markets"],
          summary: "Markets ranked by whale volume",
          description: `Markets that traded in the window, by whale volume (wallets over ${WHALE_VOLUME_TEXT}), then all volume, then slug. ${WINDOW_NOTE} price_change is the YES price at the window's last trade minus the price in force when it opened.`,
          responses: {
            ...okResponse("A page of ranked markets", MarketRankPageSchema),
            ...errorResponses(400, 401, 403, 429),
          },
        }),
        access(limiter, "terminal"),
        validator("query", RankQuery, invalidParams),
        async (c) => {
          const q = c.req.valid("query");
          const list = await read.markets.trending(filterOf(q), context());
          return c.json(rankingPage("markets-trending", list, q));
        },
      )
      .get(
        "/markets/moving",
        describeRoute({
          tags: ["Markets"],
          summary: "Markets ranked by absolute price change",
          description: `Markets with at least 3 trades in the window, by |price_change| (the YES price at the window's last trade minus the price in force when it opened), then whale volume, then slug. ${WINDOW_NOTE}`,
          responses: {
            ...okResponse("A page of ranked markets", MarketRankPageSchema),
            ...errorResponses(400, 401, 403, 429),
          },
        }),
        access(limiter, "terminal"),
        validator("query", RankQuery, invalidParams),
        async (c) => {
          const q = c.req.valid("query");
          const list = await read.markets.moving(filterOf(q), context());
          return c.json(rankingPage("markets-moving", list, q));
        },
      )
      .get(
        "/markets/:slug",
        describeRoute({
          tags: ["Markets"],
          summary: "A market's detail",
          description:
            "Totals, the 10 largest YES and NO holders (by BUY USD on their side) and the hourly YES close of the market's last 720 trading hours.",
          responses: {
            ...okResponse("The market", MarketDetailSchema),
            ...errorResponses(400, 401, 403, 404, 429),
          },
        }),
        access(limiter, "terminal"),
        validator("param", SlugParam, invalidParams),
        (c) => {
          const { slug } = c.req.valid("param");
          return details.text(c, slug, () => {
            const detail = read.markets.detailJson(slug, app.deps.clock.now());
            if (detail === undefined) throw marketNotFound(slug);
            return detail;
          });
        },
      )
      .get(
        "/markets/:slug/sentiment",
        describeRoute({
          tags: ["Markets"],
          summary: "Whale sentiment and whale-implied probability",
          // An unknown slug answers 404, like
          // /markets/{slug}, rather than a 200 of nulls that would look like a quiet market.
          description:
            "30-day window, whale and insider wallets only, each weighted by its Bayesian win rate. implied_probability is null until the market has traded. An unknown slug is 404.",
          responses: {
            ...okResponse("The sentiment", MarketSentimentSchema),
            ...errorResponses(400, 401, 403, 404, 429),
          },
        }),
        access(limiter, "terminal"),
        validator("param", SlugParam, invalidParams),
        (c) => {
          const { slug } = c.req.valid("param");
          const sentiment = read.markets.sentiment(slug);
          if (!sentiment) throw marketNotFound(slug);
          return c.json(sentiment);
        },
      )
      .get(
        "/markets/:slug/flow",
        describeRoute({
          tags: ["Markets"],
          summary: "Time-bucketed money flow",
          description: `The fills of [now − minutes, now] in 12 equal buckets (empty ones kept). whales_only (default true) keeps wallets with more than ${WHALE_VOLUME_TEXT} of total volume. An unknown slug is 404.`,
          responses: {
            ...okResponse("The flow", MarketFlowSchema),
            ...errorResponses(400, 401, 403, 404, 429),
          },
        }),
        access(limiter, "terminal"),
        validator("param", SlugParam, invalidParams),
        validator("query", FlowQuery, invalidParams),
        (c) => {
          const { slug } = c.req.valid("param");
          const q = c.req.valid("query");
          const flow = read.markets.flow(slug, {
            minutes: q.minutes!,
            whalesOnly: q.whales_only,
            now: app.deps.clock.now(),
          });
          if (!flow) throw marketNotFound(slug);
          return c.json(flow);
        },
      )
  );
}
