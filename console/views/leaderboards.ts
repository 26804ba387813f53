import { type Column, format, h, link, replace, table, walletLink } from "../dom";
import { failure, heading, type View } from "../view";

interface Entry {
  address: string;
  platform_name: string | null;
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  z_score: number | null;
  total_bets: number | null;
}

interface Edge {
  address: string;
  platform_name: string | null;
  category: string | null;
  category_win_rate: number | null;
  global_win_rate: number | null;
  edge: number | null;
  bets: number | null;
  total_pnl: number | null;
}

interface Board {
  label: string;
  path: string;
  /** The API's own orders for the whole board: the query parameter and its values. */
  orders: { param: string; values: [string, string][] } | null;
  columns: Column<Entry & Edge>[];
}

const CATEGORIES = ["politics", "crypto", "sports", "culture", "economics", "breaking-news"];
const PAGE = 25;

const wallet: Column<Entry & Edge> = {
  label: "Wallet",
  cell: (e) => walletLink(e.address, e.platform_name),
  sort: (e) => e.platform_name ?? e.address,
};
/** Columns of one kind of figure (money, rate, count), each shown through its format. */
const figures =
  (show: (value: number | null) => string) =>
  (label: string, figure: (e: Entry & Edge) => number | null): Column<Entry & Edge> => ({
    label,
    figure,
    show,
  });
const money = figures(format.usd);
const rate = figures(format.percent);
const count = figures(format.number);

const ranked = [
  wallet,
  money("Volume", (e) => e.total_volume),
  money("PnL", (e) => e.total_pnl),
  rate("Win rate", (e) => e.win_rate),
  count("z-score", (e) => e.z_score),
  count("Bets", (e) => e.total_bets),
];

function board(name: string): Board | null {
  if (name === "whales")
    return {
      label: "Whales",
      path: "/v1/leaderboards/whales",
      orders: {
        param: "sort",
        values: [
          ["volume", "volume"],
          ["winRate", "win rate"],
          ["zScore", "z-score"],
          ["totalBets", "bets"],
        ],
      },
      columns: ranked,
    };
  if (name === "pnl")
    return {
      label: "PnL",
      path: "/v1/leaderboards/pnl",
      orders: {
        param: "sort_dir",
        values: [
          ["desc", "largest first"],
          ["asc", "smallest first"],
        ],
      },
      columns: ranked,
    };
  if (name === "screen") {
    return {
      label: "Edge screener",
      path: "/v1/signals/screen",
      orders: null,
      columns: [
        wallet,
        { label: "Category", cell: (e) => e.category ?? "–", sort: (e) => e.category },
        rate("Category win rate", (e) => e.category_win_rate),
        rate("Overall win rate", (e) => e.global_win_rate),
        { label: "Edge", figure: (e) => e.edge, show: format.percent },
        count("Bets", (e) => e.bets),
        money("PnL", (e) => e.total_pnl),
      ],
    };
  }
  if (CATEGORIES.includes(name)) {
    return {
      label: `Category: ${name}`,
      path: `/v1/leaderboards/category/${name}`,
      orders: {
        param: "sort",
        values: [
          ["pnl", "PnL"],
          ["win_rate", "win rate"],
          ["counter_consensus_wins", "counter-consensus wins"],
          ["volume", "volume"],
        ],
      },
      columns: ranked,
    };
  }
  return null;
}

/**
 * The leaderboards and the edge screener, a page of 25 at a time through the API's cursors
 * (Next, Previous), in any of the API's own orders for the whole board (the "Order" select), and
 * sortable by any column within the page; every wallet links to its dossier.
 */
export const leaderboardsView: View = async (ctx) => {
  const name = ctx.args[0] ?? "whales";
  const chosen = board(name) ?? board("whales");
  if (!chosen) return undefined;
  const tabs = h(
    "nav",
    { className: "tabs", attrs: { "aria-label": "Leaderboards" } },
    ...["whales", "pnl", "screen", ...CATEGORIES].map((tab) => {
      const a = link(`leaderboards/${tab}`, board(tab)?.label ?? tab);
      if (tab === name) a.setAttribute("aria-current", "page");
      return a;
    }),
  );
  const host = h("div");
  const pager = h("div", { className: "pager" });
  const order = chosen.orders
    ? h(
        "select",
        { id: "board-order", name: chosen.orders.param },
        ...chosen.orders.values.map(([value, label]) => h("option", { value }, label)),
      )
    : null;
  ctx.main.append(
    heading(chosen.label),
    tabs,
    ...(order
      ? [h("div", { className: "filters" }, h("label", { htmlFor: "board-order" }, "Order"), order)]
      : []),
    host,
    pager,
  );

  let cursors: (string | null)[] = [null];
  order?.addEventListener("change", () => {
    cursors = [null];
    void show(0);
  });
  async function show(page: number): Promise<void> {
    const answer = await ctx.api.get<{ data: (Entry & Edge)[]; next_cursor: string | null }>(
      chosen!.path,
      {
        ...(order && chosen!.orders ? { [chosen!.orders.param]: order.value } : {}),
        limit: PAGE,
        cursor: cursors[page],
      },
    );
    if (!ctx.alive()) return;
    if (!answer.ok) {
      replace(host, failure(answer));
      pager.replaceChildren();
      return;
    }
    cursors[page + 1] = answer.body.next_cursor;
    replace(host, table(`${chosen!.label}, page ${page + 1}`, chosen!.columns, answer.body.data));
    host.dataset.rows = String(answer.body.data.length);
    host.dataset.page = String(page + 1);
    const previous = h("button", { type: "button", disabled: page === 0 }, "Previous page");
    const next = h(
      "button",
      { type: "button", disabled: answer.body.next_cursor === null },
      "Next page",
    );
    previous.addEventListener("click", () => void show(page - 1));
    next.addEventListener("click", () => void show(page + 1));
    replace(pager, previous, h("span", {}, `Page ${page + 1}`), next);
  }
  await show(0);
  return undefined;
};
