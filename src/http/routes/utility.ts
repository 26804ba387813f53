import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { TIERS } from "../../auth/tiers";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";

const Ping = v.object({ ok: v.literal(true), tier: v.picklist(TIERS) });

export function utilityRoutes(app: App) {
  return new Hono<HttpEnv>().get(
    "/_ping",
    describeRoute({
      tags: ["Utility"],
      summary: "Check a key and see its tier",
      description: "Counted like any call: the rate-limit headers show the key's quota.",
      responses: {
        ...okResponse("The key works", Ping, { fromReadModels: false }),
        ...errorResponses(401, 429),
      },
    }),
    access(app.limiter, "free"),
    (c) => c.json({ ok: true as const, tier: c.get("caller")!.account.tier }),
  );
}
