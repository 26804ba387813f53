import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { notFound } from "../../errors";
import { INVESTIGATION_TYPES, type InvestigationKey } from "../../funding/investigation-queries";
import { InvestigationSchema, InvestigationSummarySchema } from "../../schemas/funding";
import { PageOf } from "../../schemas/shared";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { cursorParam, integer, invalidParams, oneOf } from "../params";

const ENDPOINT = "investigations";

const ListQuery = v.object({
  cursor: cursorParam,
  limit: integer("limit", 1, 100, 20),
  category: v.optional(v.pipe(v.string(), v.minLength(1, "category must not be empty"))),
  type: oneOf("type", INVESTIGATION_TYPES),
});
const IdParam = v.object({
  id: v.pipe(
    v.string(),
    v.regex(/^[1-9]\d{0,14}$/, "id must be an integer of at least 1"),
    v.transform(Number),
  ),
});

export function investigationRoutes(app: App) {
  const { limiter, cursors, funding } = app;
  return new Hono<HttpEnv>()
    .get(
      "/investigations",
      describeRoute({
        tags: ["Investigations"],
        summary: "Open investigations",
        description:
          "Wallets and sybil clusters whose wins in a category beat their entry prices. Ordered by p-value ascending, then newest first; keyset-paginated.",
        responses: {
          ...okResponse("A page of investigations", PageOf(InvestigationSummarySchema)),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal_pro"),
      validator("query", ListQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        const after = q.cursor
          ? (cursors.decode(ENDPOINT, q.cursor, 3) as InvestigationKey)
          : undefined;
        const { rows, more, keys } = funding.investigations.page(
          { category: q.category, type: q.type },
          q.limit!,
          after,
        );
        const last = keys.at(-1);
        return c.json({
          data: rows,
          next_cursor: more && last ? cursors.encode(ENDPOINT, last) : null,
        });
      },
    )
    .get(
      "/investigations/:id",
      describeRoute({
        tags: ["Investigations"],
        summary: "One open investigation",
        description:
          "Its wallets, the evidence bets (largest first, at most 50) and the wins-versus-prices test.",
        responses: {
          ...okResponse("The investigation", InvestigationSchema),
          ...errorResponses(400, 401, 403, 404, 429),
        },
      }),
      access(limiter, "terminal_pro"),
      validator("param", IdParam, invalidParams),
      (c) => {
        const { id } = c.req.valid("param");
        const found = funding.investigations.served(id);
        if (!found) throw notFound(`no open investigation with id ${id}`);
        return c.json(found);
      },
    );
}
