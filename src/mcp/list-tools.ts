import * as v from "valibot";
import type { App } from "../app";
import { WHALE_VOLUME_TEXT } from "../domain";
import { notFound } from "../errors";
import { INVESTIGATION_TYPES, type InvestigationKey } from "../funding/investigation-queries";
import type { CursorValue } from "../paging/cursor";
import { depthCappedPage, LEADERBOARD_DEPTH, SCREEN_DEPTH, toPage } from "../paging/pages";
import type { EdgeKey } from "../read/edge-screen";
import {
  CATEGORY_SORTS,
  LEADERBOARD_CATEGORIES,
  type RankKey,
  WHALE_SORTS,
} from "../read/leaderboards";
import { type TradeKey, tradeFilterOf } from "../read/trades";
import { InvestigationSchema, InvestigationSummarySchema } from "../schemas/funding";
import { PageOf, TradeSchema } from "../schemas/shared";
import { LeaderboardPageSchema, WalletEdgePageSchema } from "../schemas/wallets";
import { address, cursor, decimal, instant, integer, oneOf, text } from "./inputs";
import { eitherOutput, outputOf } from "./outputs";
import { defineTool, figure, type McpTool, morePages } from "./tool";

const MAX_COUNT = 1_000_000;
const SORTS = [...new Set([...WHALE_SORTS, ...CATEGORY_SORTS])] as [string, ...string[]];

const LeaderboardInput = v.pipe(
  v.strictObject({
    kind: oneOf(
      "kind",
      ["whales", "pnl", "category"],
      `whales: wallets over ${WHALE_VOLUME_TEXT} of volume; pnl: wallets by profit; category: wallets ranked within one market category.`,
    ),
    category: v.optional(
      oneOf(
        "category",
        LEADERBOARD_CATEGORIES,
        "Required with kind category, not allowed otherwise.",
      ),
    ),
    sort: v.optional(
      oneOf(
        "sort",
        SORTS,
        `kind whales: ${WHALE_SORTS.join(", ")} (default volume). kind category: ${CATEGORY_SORTS.join(", ")} (default pnl). Not for kind pnl.`,
      ),
    ),
    sort_dir: v.optional(
      oneOf(
        "sort_dir",
        ["asc", "desc"],
        "kind pnl only: desc (default, biggest winners first) or asc (biggest losers first).",
      ),
    ),
    limit: v.optional(integer("limit", 1, 100, "Wallets per page (1 to 100)."), 50),
    min_volume: v.optional(
      decimal(
        "min_volume",
        0,
        Number.POSITIVE_INFINITY,
        "kind whales only: minimum total volume, USD.",
      ),
    ),
    min_resolved_bets: v.optional(
      integer(
        "min_resolved_bets",
        0,
        MAX_COUNT,
        "kind whales or pnl: minimum resolved bets (pnl defaults to 5).",
      ),
    ),
    min_bets: v.optional(
      integer(
        "min_bets",
        1,
        MAX_COUNT,
        "kind category only: minimum resolved bets in the category (default 20).",
      ),
    ),
    cursor: v.optional(cursor),
  }),
  // Which filters go with which kind: checked once every argument is valid on its own.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const q = dataset.value;
    const problem = (message: string) => addIssue({ message });
    if (q.kind === "category" && q.category === undefined) {
      problem(
        `category is required with kind category: one of ${LEADERBOARD_CATEGORIES.join(", ")}`,
      );
    }
    if (q.kind !== "category" && q.category !== undefined) {
      problem("category goes only with kind category");
    }
    const sorts: readonly string[] =
      q.kind === "whales" ? WHALE_SORTS : q.kind === "category" ? CATEGORY_SORTS : [];
    if (q.sort !== undefined && !sorts.includes(q.sort)) {
      problem(
        q.kind === "pnl"
          ? "sort does not apply to kind pnl: use sort_dir"
          : `sort for kind ${q.kind} must be one of ${sorts.join(", ")}`,
      );
    }
    if (q.sort_dir !== undefined && q.kind !== "pnl") problem("sort_dir goes only with kind pnl");
    if (q.min_volume !== undefined && q.kind !== "whales") {
      problem("min_volume goes only with kind whales");
    }
    if (q.min_resolved_bets !== undefined && q.kind === "category") {
      problem("min_resolved_bets does not apply to kind category: use min_bets");
    }
    if (q.min_bets !== undefined && q.kind !== "category") {
      problem("min_bets goes only with kind category: use min_resolved_bets");
    }
  }),
);

const TradesInput = v.strictObject({
  wallet: v.optional(address("wallet", "Only this wallet's fills.")),
  market: v.optional(
    v.pipe(
      v.string("market must be a string"),
      v.regex(
        /^0x[0-9a-fA-F]{64}$/,
        "market must be a condition id: 0x followed by 64 hex characters",
      ),
      v.transform((s) => s.toLowerCase()),
      v.description(
        "Only this market's fills, by condition id (0x + 64 hex; get_market_signal gives it as market.condition_id).",
      ),
    ),
  ),
  side: v.optional(oneOf("side", ["BUY", "SELL"], "Only buys or only sells.")),
  min_bet: v.optional(
    decimal("min_bet", 0, Number.POSITIVE_INFINITY, "Only fills worth at least this many USD."),
  ),
  start: v.optional(
    instant(
      "start",
      "Window start: ISO-8601 date-time or Unix milliseconds. Needs end; at most 90 days.",
    ),
  ),
  end: v.optional(instant("end", "Window end, same formats as start.")),
  limit: v.optional(integer("limit", 1, 100, "Fills per page (1 to 100)."), 25),
  cursor: v.optional(cursor),
});

export function listTools(app: App): McpTool[] {
  const { cursors, read, funding } = app;
  const boards = read.leaderboards;

  function leaderboard(q: v.InferOutput<typeof LeaderboardInput>) {
    const page = <K extends CursorValue[]>(
      endpoint: string,
      fetch: (
        limit: number,
        after: K | undefined,
      ) => {
        rows: unknown[];
        keys: K[];
        more: boolean;
      },
    ) => depthCappedPage(cursors, endpoint, q.cursor, 2, q.limit, LEADERBOARD_DEPTH, fetch);
    if (q.kind === "whales") {
      const sort = (q.sort ?? "volume") as (typeof WHALE_SORTS)[number];
      const filter = { sort, minVolume: q.min_volume, minResolvedBets: q.min_resolved_bets };
      return page<RankKey>(`leaderboard-whales:${sort}`, (limit, after) =>
        boards.whales(filter, limit, after),
      );
    }
    if (q.kind === "pnl") {
      const direction = q.sort_dir ?? "desc";
      const filter = { direction, minResolvedBets: q.min_resolved_bets ?? 5 };
      return page<RankKey>(`leaderboard-pnl:${direction}`, (limit, after) =>
        boards.pnl(filter, limit, after),
      );
    }
    const category = q.category!;
    const sort = (q.sort ?? "pnl") as (typeof CATEGORY_SORTS)[number];
    const filter = { sort, minBets: q.min_bets ?? 20 };
    return page<RankKey>(`leaderboard-category:${category}:${sort}`, (limit, after) =>
      boards.category(category, filter, limit, after),
    );
  }

  return [
    defineTool({
      name: "get_leaderboard",
      title: "Wallet leaderboards",
      description: `Ranked wallets. kind whales: wallets over ${WHALE_VOLUME_TEXT} of volume, by volume, winRate, zScore or totalBets. kind pnl: by profit (the figure routed per wallet class; see pnl_source). kind category: within one market category, by win_rate, counter_consensus_wins, pnl or volume. Paginated to a depth of ${LEADERBOARD_DEPTH} rows. Same answers as GET /v1/leaderboards/whales, /pnl and /category/{cat}.`,
      rest: "GET /v1/leaderboards/{whales,pnl,category/{cat}}",
      minTier: "terminal",
      input: LeaderboardInput,
      output: outputOf(LeaderboardPageSchema),
      run: (q) => leaderboard(q),
      summarize: (p) =>
        `${p.data.length} wallets${p.data[0] ? `, led by ${(p.data[0] as { address: string }).address}` : ""}${morePages(p)}.`,
    }),
    defineTool({
      name: "screen_wallet_edges",
      title: "Edge screener",
      description: `Wallets that beat their own overall win rate in one category: (wallet, category) rows ranked by edge (category win rate minus overall win rate), largest first. Use it to find specialists, e.g. wallets unusually good at politics. Paginated to a depth of ${SCREEN_DEPTH} rows. Same answer as GET /v1/signals/screen.`,
      rest: "GET /v1/signals/screen",
      minTier: "terminal",
      input: v.strictObject({
        min_edge: v.optional(decimal("min_edge", -1, 1, "Minimum edge, -1 to 1 (e.g. 0.1).")),
        min_bets: v.optional(
          integer("min_bets", 0, MAX_COUNT, "Minimum resolved bets in the category."),
        ),
        category: v.optional(text("category", 100, "Only this market category.")),
        limit: v.optional(integer("limit", 1, 100, "Rows per page (1 to 100)."), 25),
        cursor: v.optional(cursor),
      }),
      output: outputOf(WalletEdgePageSchema),
      run: (q) => {
        const filter = { minEdge: q.min_edge, minBets: q.min_bets, category: q.category };
        return depthCappedPage<unknown, EdgeKey>(
          cursors,
          "signals-screen",
          q.cursor,
          3,
          q.limit,
          SCREEN_DEPTH,
          (limit, after) => read.leaderboards.edges(filter, limit, after),
        );
      },
      summarize: (p) => `${p.data.length} wallet-category edges${morePages(p)}.`,
    }),
    defineTool({
      name: "query_trades",
      title: "Query trades",
      description:
        "On-chain trade fills, newest first, paginated. Needs at least one selective filter: wallet, market (condition id), or a start+end window of at most 90 days; side and min_bet narrow further. Same answer as GET /v1/trades.",
      rest: "GET /v1/trades",
      minTier: "terminal",
      input: TradesInput,
      output: outputOf(PageOf(TradeSchema)),
      run: async (q) => {
        const filter = tradeFilterOf(q);
        const after =
          q.cursor === undefined ? undefined : (cursors.decode("trades", q.cursor, 2) as TradeKey);
        const { rows, more } = await read.trades.page(filter, q.limit, after);
        return toPage(cursors, "trades", rows, more, (t) => [Date.parse(t.trade_timestamp), t.id]);
      },
      summarize: (p) => `${p.data.length} trades, newest first${morePages(p)}.`,
    }),
    defineTool({
      name: "list_investigations",
      title: "Investigations",
      description:
        "Curated investigations: wallets and sybil clusters whose wins in a category beat the prices they paid by more than luck explains, ordered by p-value (strongest first). Without id: a page of summaries, filterable by category and type. With id: that one investigation with its wallets, evidence bets and statistical test (the list filters are then ignored). Needs the terminal_pro tier. Same answers as GET /v1/investigations and GET /v1/investigations/{id}.",
      rest: "GET /v1/investigations, GET /v1/investigations/{id}",
      minTier: "terminal_pro",
      input: v.strictObject({
        id: v.optional(
          integer("id", 1, 999_999_999_999_999, "An investigation's id, to get that one in full."),
        ),
        category: v.optional(
          v.pipe(
            v.string("category must be a string"),
            v.minLength(1, "category must not be empty"),
            v.description("Only investigations in this market category."),
          ),
        ),
        type: v.optional(oneOf("type", INVESTIGATION_TYPES, "wallet or cluster.")),
        limit: v.optional(integer("limit", 1, 100, "Investigations per page (1 to 100)."), 20),
        cursor: v.optional(cursor),
      }),
      output: eitherOutput(PageOf(InvestigationSummarySchema), InvestigationSchema),
      run: (q): object => {
        if (q.id !== undefined) {
          const found = funding.investigations.served(q.id);
          if (!found) throw notFound(`no open investigation with id ${q.id}`);
          return found;
        }
        const endpoint = "investigations";
        const after =
          q.cursor === undefined
            ? undefined
            : (cursors.decode(endpoint, q.cursor, 3) as InvestigationKey);
        const { rows, more, keys } = funding.investigations.page(
          { category: q.category, type: q.type },
          q.limit,
          after,
        );
        const last = keys.at(-1);
        return { data: rows, next_cursor: more && last ? cursors.encode(endpoint, last) : null };
      },
      summarize: (body) => {
        if ("data" in body) {
          const page = body as { data: unknown[]; next_cursor: string | null };
          return `${page.data.length} open investigations${morePages(page)}.`;
        }
        const one = body as { id: number; title: string; p_value: number };
        return `Investigation ${one.id}: ${one.title} (p-value ${figure(one.p_value, 4)}).`;
      },
    }),
  ];
}
