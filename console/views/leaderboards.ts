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
  query: Record<string, string>;
  columns: Column<Entry & Edge>[];
}

const CATEGORIES = ["politics", "crypto", "sports", "culture", "economics", "breaking-news"];
const PAGE = 25;

const wallet: Column<Entry & Edge> = {
  label: "Wallet",
  cell: (e) => walletLink(e.address, e.platform_name),
  sort: (e) => e.platform_name ?? e.address,
};
const money = (label: string, pick: (e: Entry & Edge) => number | null): Column<Entry & Edge> => ({
  label,
  cell: (e) => format.usd(pick(e)),
  sort: pick,
  numeric: true,
});
const rate = (label: string, pick: (e: Entry & Edge) => number | null): Column<Entry & Edge> => ({
  label,
  cell: (e) => format.percent(pick(e)),
  sort: pick,
  numeric: true,
});
const count = (label: string, pick: (e: Entry & Edge) => number | null): Column<Entry & Edge> => ({
  label,
  cell: (e) => format.number(pick(e)),
  sort: pick,
  numeric: true,
});

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
    return { label: "Whales", path: "/v1/leaderboards/whales", query: {}, columns: ranked };
  if (name === "pnl")
    return { label: "PnL", path: "/v1/leaderboards/pnl", query: {}, columns: ranked };
  if (name === "screen") {
    return {
      label: "Edge screener",
      path: "/v1/signals/screen",
      query: {},
      columns: [
        wallet,
        { label: "Category", cell: (e) => e.category ?? "–", sort: (e) => e.category },
        rate("Category win rate", (e) => e.category_win_rate),
        rate("Overall win rate", (e) => e.global_win_rate),
        { label: "Edge", cell: (e) => format.percent(e.edge), sort: (e) => e.edge, numeric: true },
        count("Bets", (e) => e.bets),
        money("PnL", (e) => e.total_pnl),
      ],
    };
  }
  if (CATEGORIES.includes(name)) {
    return {
      label: `Category: ${name}`,
      path: `/v1/leaderboards/category/${name}`,
      query: {},
      columns: ranked,
    };
  }
  return null;
}

/**
 * The leaderboards and the edge screener, a page of 25 at a time through the API's cursors
 * (Next, Previous), sortable by any column within the page; every wallet links to its dossier.
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
  ctx.main.append(heading(chosen.label), tabs, host, pager);

  const cursors: (string | null)[] = [null];
  async function show(page: number): Promise<void> {
    const answer = await ctx.api.get<{ data: (Entry & Edge)[]; next_cursor: string | null }>(
      chosen!.path,
      {
        ...chosen!.query,
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
