import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import type { App } from "../../app";
import { PingSchema } from "../../schemas/shared";
import { createAnswerCache } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";

export function utilityRoutes(app: App) {
  // The answer depends on the caller's tier alone, so it is kept (and sent by the answer lane).
  const pings = createAnswerCache(app.lane, () => 0);
  return new Hono<HttpEnv>().get(
    "/_ping",
    describeRoute({
      tags: ["Utility"],
      summary: "Check a key and see its tier",
      description: "Counted like any call: the rate-limit headers show the key's quota.",
      responses: {
        ...okResponse("The key works", PingSchema, { fromReadModels: false }),
        ...errorResponses(401, 429),
      },
    }),
    access(app.limiter, "free"),
    (c) => {
      const { tier } = c.get("caller")!.account;
      return pings.json(c, tier, () => ({ ok: true as const, tier }));
    },
  );
}
