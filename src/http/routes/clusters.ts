import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { badRequest, notFound } from "../../errors";
import { CLUSTER_SORTS } from "../../funding/queries";
import {
  ClusterDetailSchema,
  ClusterGraphSchema,
  SybilClustersSchema,
} from "../../schemas/funding";
import { createAnswerCache } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { address, integer, invalidParams, oneOf } from "../params";

const SybilQuery = v.object({
  limit: integer("limit", 1, 200, 100),
  sort: oneOf("sort", CLUSTER_SORTS, "members"),
});
const ClusterIdParam = v.object({
  id: v.pipe(
    v.string(),
    v.regex(
      /^clu_0x[0-9a-f]{40}$/,
      "id must be a cluster id: clu_0x followed by 40 lowercase hex characters",
    ),
  ),
});
const FunderParam = v.object({ funder: address("funder") });

export function clusterRoutes(app: App) {
  const { limiter, funding } = app;
  // The sybil list reads sybil_clusters only, which changes only in a refresh (the funding
  // graph's step), so its answers last one read-model generation.
  const sybilLists = createAnswerCache(app.lane, () => app.generation);
  return new Hono<HttpEnv>()
    .get(
      "/clusters/sybil",
      describeRoute({
        tags: ["Clusters"],
        summary: "Sybil clusters: wallets sharing a funder",
        description:
          "A pre-computed rollup. sort=members (default), volume or pnl, largest first; nulls last.",
        responses: {
          ...okResponse("The clusters", SybilClustersSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal_pro"),
      validator("query", SybilQuery, invalidParams),
      (c) => {
        const q = c.req.valid("query");
        return sybilLists.json(c, `${q.sort} ${q.limit}`, () => ({
          clusters: funding.sybilClusters(q.sort, q.limit!),
        }));
      },
    )
    .get(
      "/clusters/by-id/:id",
      describeRoute({
        tags: ["Clusters"],
        summary: "One sybil cluster: its stats and members",
        description:
          "members lists the funder first, then the funded wallets in funding order, 500 entries at most; members_total is the full length of that list (member_count + 1).",
        responses: {
          ...okResponse("The cluster", ClusterDetailSchema),
          ...errorResponses(400, 401, 403, 404, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", ClusterIdParam, invalidParams),
      (c) => {
        const { id } = c.req.valid("param");
        const cluster = funding.cluster(id);
        if (!cluster) throw notFound(`no sybil cluster with id ${id}`);
        return c.json(cluster);
      },
    )
    .get(
      "/clusters/:funder/graph",
      describeRoute({
        tags: ["Clusters"],
        summary: "A funder's funding tree",
        description:
          "The wallets the funder funded, then the wallets those funded, breadth first, at most 500 nodes (truncated says more exist). The proxy wallet factory and any funder of 500 or more wallets are refused with 400.",
        responses: {
          ...okResponse("The graph", ClusterGraphSchema),
          ...errorResponses(400, 401, 403, 404, 429),
        },
      }),
      access(limiter, "terminal_pro"),
      validator("param", FunderParam, invalidParams),
      (c) => {
        const { funder } = c.req.valid("param");
        const outcome = funding.graph(funder);
        if (outcome.kind === "refused") throw badRequest(outcome.message);
        if (outcome.kind === "not_found") throw notFound(outcome.message);
        return c.json(outcome.graph);
      },
    );
}
