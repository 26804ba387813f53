import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { marketNotFound } from "../../read/markets";
import { MarketSignalSchema, MoversSchema } from "../../schemas/markets";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { integer, invalidParams } from "../params";
import { periodHours, SlugParam, text } from "./markets";

const MoversQuery = v.object({
  period_hours: periodHours,
  category: text("category", 64),
  limit: integer("limit", 1, 100, 20),
});

export function marketSignalRoutes(app: App) {
  const { limiter, read } = app;
  return new Hono<HttpEnv>()
    .get(
      "/signals/market/:slug",
      describeRoute({
        tags: ["Signals"],
        summary: "Whale sentiment plus whale-implied probability",
        description:
          "Over the last 30 days of whale and insider fills. smart_money_probability is null until the market has traded.",
        responses: {
          ...okResponse("The market signal", MarketSignalSchema),
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      access(limiter, "free"),
      validator("param", SlugParam, invalidParams),
      (c) => {
        const { slug } = c.req.valid("param");
        const signal = read.markets.signal(slug);
        if (!signal) throw marketNotFound(slug);
        return c.json(signal);
      },
    )
    .get(
      "/signals/movers",
      describeRoute({
        tags: ["Signals"],
        summary: "Markets with the most volume in the window",
        description:
          "The top `limit` markets by USD volume (then whale volume, then slug), no pagination. The window is the period_hours whole clock hours before the current hour plus the current hour so far. net_flow is YES flow minus NO flow, USD.",
        responses: {
          ...okResponse("The movers", MoversSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", MoversQuery, invalidParams),
      async (c) => {
        const q = c.req.valid("query");
        const list = await read.markets.movers(
          { periodHours: q.period_hours!, category: q.category },
          { generation: app.generation, now: app.deps.clock.now() },
        );
        const movers = list.slice(0, q.limit!).map((r) => r.row);
        return c.json({ period_hours: q.period_hours!, count: movers.length, movers });
      },
    );
}
