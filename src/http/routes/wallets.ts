import { Hono } from "hono";
import { describeRoute, validator } from "hono-openapi";
import * as v from "valibot";
import type { App } from "../../app";
import { tierAllows } from "../../auth/tiers";
import { FILL_RETENTION_NOTE } from "../../domain";
import { notFound } from "../../errors";
import { toPage } from "../../paging/pages";
import { ANCHOR_MARKETS, BETS_PER_ANCHOR_SIDE, CORRELATION_WINDOW_MS } from "../../read/correlated";
import type { TradeKey } from "../../read/trades";
import { DOSSIER_ALERTS, DOSSIER_TRADES } from "../../read/wallets";
import { PageOf, TradeSchema } from "../../schemas/shared";
import {
  CorrelatedWalletsSchema,
  WalletCategoriesSchema,
  WalletProfileSchema,
  WalletSearchSchema,
  WalletTimingSchema,
} from "../../schemas/wallets";
import { createAnswerCache, databaseVersion } from "../answer-cache";
import type { HttpEnv } from "../env";
import { access } from "../middleware/auth";
import { errorResponses, okResponse } from "../openapi";
import { integer, invalidParams } from "../params";
import { AddressParam, WalletTradesQuery } from "./trades";

const SearchQuery = v.object({
  q: v.pipe(
    v.string(),
    v.minLength(3, "q must be at least 3 characters"),
    v.maxLength(100, "q must be at most 100 characters"),
  ),
  limit: integer("limit", 1, 25, 10),
});

const CorrelatedQuery = v.object({ limit: integer("limit", 1, 20, 5) });

const DAYS = CORRELATION_WINDOW_MS / 86_400_000;

export function walletRoutes(app: App) {
  const { limiter, cursors, read } = app;
  const wallets = read.wallets;
  // The profile and the dossier read the read models and the wallet's fills, alerts and funding
  // cluster: kept until a refresh lands or anything commits (answer-cache.ts). The dossier's
  // recent trades sort every fill of the wallet by time (from fills_by_wallet's entries alone,
  // src/read/trades.ts), most of its cost for an active wallet.
  const version = databaseVersion(app.deps.db);
  const profiles = createAnswerCache(app.lane, () => `${app.generation} ${version()}`);
  // /wallets/search is registered before /wallets/:address, which would otherwise claim it.
  return new Hono<HttpEnv>()
    .get(
      "/wallets/search",
      describeRoute({
        tags: ["Wallets"],
        summary: "Find wallets by address prefix or platform name",
        description:
          "q (3 to 100 characters) matches an address prefix (hex digits, with or without 0x) or a case-insensitive substring of the platform name. Address matches come first in address order, then name matches by total volume, largest first (then address).",
        responses: {
          ...okResponse("Matching wallets", WalletSearchSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("query", SearchQuery, invalidParams),
      (c) => {
        const { q, limit } = c.req.valid("query");
        return c.json(wallets.search(q, limit!));
      },
    )
    .get(
      "/wallets/:address",
      describeRoute({
        tags: ["Wallets"],
        summary: "A wallet's profile",
        description: `Free keys get the lite profile (address, platform_name, wallet_type, stats); terminal keys and above get the full dossier, which adds the ${DOSSIER_TRADES} latest trades, the ${DOSSIER_ALERTS} latest whale and insider alerts, and the wallet's sybil cluster membership (or null).`,
        responses: {
          ...okResponse("The profile or the full dossier", WalletProfileSchema),
          ...errorResponses(400, 401, 404, 429),
        },
      }),
      access(limiter, "free"),
      validator("param", AddressParam, invalidParams),
      (c) => {
        const { address } = c.req.valid("param");
        const full = tierAllows(c.get("caller")!.account.tier, "terminal");
        const key = `${full ? "dossier" : "profile"} ${address}`;
        return profiles.jsonAsync(c, key, async () => {
          const profile = full ? await wallets.dossier(address) : wallets.profile(address);
          if (!profile) throw notFound(`wallet ${address} has never traded`);
          return profile;
        });
      },
    )
    .get(
      "/wallets/:address/trades",
      describeRoute({
        tags: ["Wallets"],
        summary: "A wallet's fills, newest first",
        description: `Keyset-paginated on (trade_timestamp, id). ${FILL_RETENTION_NOTE}`,
        responses: {
          ...okResponse("A page of trades", PageOf(TradeSchema)),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", AddressParam, invalidParams),
      validator("query", WalletTradesQuery, invalidParams),
      (c) => {
        const { address } = c.req.valid("param");
        const q = c.req.valid("query");
        const endpoint = "wallet-trades";
        // Fills and markets only: kept until anything commits, as the dossier's recent trades.
        return profiles.jsonAsync(c, `trades ${address} ${q.limit} ${q.cursor ?? ""}`, async () => {
          const after = q.cursor ? (cursors.decode(endpoint, q.cursor, 2) as TradeKey) : undefined;
          const { rows, more } = await read.trades.page({ wallet: address }, q.limit!, after);
          return toPage(cursors, endpoint, rows, more, (t) => [
            Date.parse(t.trade_timestamp),
            t.id,
          ]);
        });
      },
    )
    .get(
      "/wallets/:address/categories",
      describeRoute({
        tags: ["Wallets"],
        summary: "A wallet's record per market category",
        description:
          "Most bets first. bets counts every bet (market) in the category, wins and win_rate its resolved ones. pnl is the on-chain ledger's, withheld (null) for market makers and whales, whose fills miss their splits and merges. Empty for a wallet not refreshed yet.",
        responses: {
          ...okResponse("The wallet's categories", WalletCategoriesSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", AddressParam, invalidParams),
      (c) => c.json(wallets.categories(c.req.valid("param").address)),
    )
    .get(
      "/wallets/:address/timing",
      describeRoute({
        tags: ["Wallets"],
        summary: "A wallet's win rate by time before resolution",
        description:
          "Over the wallet's last 500 trades in resolved markets, bucketed by hours between the trade and the resolution. Every bucket is present; counts are 0 for a wallet not refreshed yet.",
        responses: {
          ...okResponse("The wallet's timing", WalletTimingSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", AddressParam, invalidParams),
      (c) => c.json(wallets.timing(c.req.valid("param").address)),
    )
    .get(
      "/wallets/:address/correlated",
      describeRoute({
        tags: ["Wallets"],
        summary: "Wallets betting the same markets on the same side",
        description: `Anchors: the wallet's ${ANCHOR_MARKETS} largest bets by volume active in the last ${DAYS} days. In each anchor, the ${BETS_PER_ANCHOR_SIDE} largest bets on each side, of wallets also active in the window. shared_markets counts the anchors another wallet bet; same_side_ratio the share of those on the wallet's side. Wallets that only took the other side are left out; ranked by shared_markets, then same_side_ratio, then address. Recomputed after each refresh.`,
        responses: {
          ...okResponse("Correlated wallets", CorrelatedWalletsSchema),
          ...errorResponses(400, 401, 403, 429),
        },
      }),
      access(limiter, "terminal"),
      validator("param", AddressParam, invalidParams),
      validator("query", CorrelatedQuery, invalidParams),
      async (c) => {
        const { address } = c.req.valid("param");
        const { limit } = c.req.valid("query");
        return c.json(
          await wallets.correlated(address, limit!, app.deps.clock.now(), app.generation),
        );
      },
    );
}
