import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import type { App } from "../../app";
import { marketNotFound } from "../../read/markets";
import { MarketAnalysisSchema } from "../../schemas/markets";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { invalidParams } from "../params";
import { SlugParam } from "./markets";

export function analyzeRoutes(app: App) {
  const { limiter, read } = app;
  return new Hono<HttpEnv>().get(
    "/analyze/market/:slug",
    describeRoute({
      tags: ["Analyze"],
      summary: "Live market analysis",
      description:
        "Computed on request, deterministic (no language model), and reused for 30 seconds per market. smart_money_prob weighs the 100 largest holders of each side (held shares at entry price) by smart_money_score × confidence; top_positions are the 10 of them with the most volume. flow_24h is the last 24 hours of whale flow; when whales did not trade in it, it falls back to every wallet with relaxed true and whales_only false.",
      responses: {
        ...okResponse("The analysis", MarketAnalysisSchema),
        ...errorResponses(400, 401, 403, 404, 429),
      },
    }),
    access(limiter, "terminal_pro"),
    validator("param", SlugParam, invalidParams),
    (c) => {
      const { slug } = c.req.valid("param");
      const analysis = read.markets.analysis(slug, app.deps.clock.now());
      if (!analysis) throw marketNotFound(slug);
      return c.json(analysis);
    },
  );
}
