import cytoscape from "cytoscape";
import { facts, format, h, link, section, table, walletLink } from "../dom";
import { failure, heading, type View } from "../view";

interface Cluster {
  id: string;
  funder: string;
  member_count: number;
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  markets_traded: number | null;
  last_active_at: string | null;
}

interface GraphNode {
  address: string;
  role: string;
  total_volume: number | null;
  total_pnl: number | null;
  win_rate: number | null;
  funded_amount: number | null;
}

interface Graph {
  funder: string;
  node_count: number;
  truncated: boolean;
  nodes: GraphNode[];
  edges: { from: string; to: string; amount: number | null }[];
}

interface ById {
  id: string;
  cluster_stats: Omit<Cluster, "id">;
  members: { wallet: string; role: string }[];
}

/**
 * Sybil clusters: the list (GET /v1/clusters/sybil), and one cluster drawn as its funding graph
 * by Cytoscape (pan with a drag, zoom with the wheel or a pinch; a node opens its wallet). The
 * graph's wallets are listed as links too, for the keyboard and screen readers.
 */
export const clustersView: View = async (ctx) => {
  const [first, second] = ctx.args;
  if (first === "by-id" && second) return clusterById(ctx, second);
  if (first) return funderGraph(ctx, first.toLowerCase());
  const answer = await ctx.api.get<{ clusters: Cluster[] }>("/v1/clusters/sybil", { limit: 100 });
  if (!ctx.alive()) return undefined;
  ctx.main.append(heading("Sybil clusters"));
  if (!answer.ok) {
    ctx.main.append(failure(answer));
    return undefined;
  }
  ctx.main.append(
    table(
      "Clusters of wallets sharing a funder",
      [
        { label: "Cluster", cell: (c) => link(`clusters/by-id/${c.id}`, c.id), sort: (c) => c.id },
        { label: "Wallets", figure: (c) => c.member_count, show: format.number },
        { label: "Volume", figure: (c) => c.total_volume, show: format.usd },
        { label: "PnL", figure: (c) => c.total_pnl, show: format.usd },
        { label: "Win rate", figure: (c) => c.win_rate, show: format.percent },
        {
          label: "Last active",
          cell: (c) => format.time(c.last_active_at),
          sort: (c) => c.last_active_at,
        },
      ],
      answer.body.clusters,
    ),
  );
  return undefined;
};

/**
 * The funder's graph where the API serves it; otherwise (a tier below terminal_pro, or a funder
 * of so many wallets that the API calls it a distributor) the members around their funder, with
 * the API's reason.
 */
async function clusterById(ctx: Parameters<View>[0], id: string) {
  const answer = await ctx.api.get<ById>(`/v1/clusters/by-id/${encodeURIComponent(id)}`);
  if (!ctx.alive()) return undefined;
  if (!answer.ok) {
    ctx.main.append(heading("Cluster"), failure(answer));
    return undefined;
  }
  const { cluster_stats: stats, members } = answer.body;
  const graph = await ctx.api.get<Graph>(`/v1/clusters/${stats.funder}/graph`);
  if (!ctx.alive()) return undefined;
  if (graph.ok) return drawGraph(ctx, null, graph.body);
  const funder = stats.funder;
  const why =
    graph.status === 403 && graph.tierNeeded
      ? `The funding graph itself needs the ${graph.tierNeeded} tier: drawn here from the cluster's members, each linked to its funder.`
      : `The funding graph is not served for this funder (${graph.message}): drawn here from the cluster's members, each linked to its funder.`;
  return drawGraph(ctx, why, {
    funder,
    node_count: members.length,
    truncated: false,
    nodes: members.map((m) => ({
      address: m.wallet,
      role: m.role,
      total_volume: null,
      total_pnl: null,
      win_rate: null,
      funded_amount: null,
    })),
    edges: members
      .filter((m) => m.wallet !== funder)
      .map((m) => ({ from: funder, to: m.wallet, amount: null })),
  });
}

async function funderGraph(ctx: Parameters<View>[0], funder: string) {
  const answer = await ctx.api.get<Graph>(`/v1/clusters/${funder}/graph`);
  if (!ctx.alive()) return undefined;
  if (!answer.ok) {
    ctx.main.append(heading("Cluster"), failure(answer));
    return undefined;
  }
  return drawGraph(ctx, null, answer.body);
}

const LABELLED_NODES = 150;
/** Room each node gets on its ring, in graph units. */
const NODE_SPACING = 28;
const RING_GAP = 120;

/**
 * The funder in the middle and each wallet on a ring by its hops from the funder, spread evenly,
 * so a tree through intermediaries reads as one (a concentric layout keyed on the funder put
 * every other wallet on one ring). One pass, no iterations: the same picture on every load.
 */
function radialPositions(
  funder: string,
  nodes: GraphNode[],
  edges: { from: string; to: string }[],
): Map<string, { x: number; y: number }> {
  const children = new Map<string, string[]>();
  for (const e of edges) children.set(e.from, [...(children.get(e.from) ?? []), e.to]);
  const depth = new Map<string, number>([[funder, 0]]);
  const queue = [funder];
  for (let i = 0; i < queue.length; i += 1) {
    const at = queue[i] as string;
    for (const next of children.get(at) ?? []) {
      if (depth.has(next)) continue;
      depth.set(next, (depth.get(at) ?? 0) + 1);
      queue.push(next);
    }
  }
  const rings = new Map<number, string[]>();
  for (const n of nodes) {
    // A wallet the edges do not reach from the funder goes on the outermost ring.
    const d = depth.get(n.address) ?? Math.max(1, ...depth.values()) + 1;
    rings.set(d, [...(rings.get(d) ?? []), n.address]);
  }
  const positions = new Map<string, { x: number; y: number }>();
  let radius = 0;
  for (const d of [...rings.keys()].sort((a, b) => a - b)) {
    const ring = rings.get(d) ?? [];
    if (d === 0) {
      for (const address of ring) positions.set(address, { x: 0, y: 0 });
      continue;
    }
    radius = Math.max(radius + RING_GAP, (ring.length * NODE_SPACING) / (2 * Math.PI));
    ring.forEach((address, i) => {
      const angle = (2 * Math.PI * i) / ring.length - Math.PI / 2;
      positions.set(address, { x: radius * Math.cos(angle), y: radius * Math.sin(angle) });
    });
  }
  return positions;
}
const COLORS: Record<string, string> = { funder: "#dc2626", intermediary: "#d97706" };

function drawGraph(ctx: Parameters<View>[0], note: string | null, graph: Graph) {
  const host = h("div", {
    className: "graph",
    attrs: {
      role: "img",
      "aria-label": `Funding graph of ${graph.funder}: ${graph.nodes.length} wallets, ${graph.edges.length} transfers`,
    },
  });
  const known = new Set(graph.nodes.map((n) => n.address));
  const edges = graph.edges.filter((e) => known.has(e.from) && known.has(e.to));
  ctx.main.append(
    heading(`Cluster of ${format.address(graph.funder)}`),
    facts([
      ["Funder", walletLink(graph.funder)],
      ["Wallets", format.number(graph.node_count)],
      ["Transfers drawn", format.number(edges.length)],
      ["Truncated", graph.truncated ? "yes" : "no"],
    ]),
    ...(note ? [h("p", { className: "notice", attrs: { role: "note" } }, note)] : []),
    h(
      "p",
      { className: "hint" },
      "Drag to pan, scroll or pinch to zoom; select a wallet to open it.",
    ),
    host,
  );
  const positions = radialPositions(graph.funder, graph.nodes, edges);
  const cy = cytoscape({
    container: host,
    elements: [
      ...graph.nodes.map((n) => ({
        position: positions.get(n.address) ?? { x: 0, y: 0 },
        data: {
          id: n.address,
          label:
            n.role === "funder" ? `funder ${format.address(n.address)}` : format.address(n.address),
          color: COLORS[n.role] ?? "#2563eb",
        },
      })),
      ...edges.map((e, i) => ({ data: { id: `e${i}`, source: e.from, target: e.to } })),
    ],
    style: [
      {
        selector: "node",
        style: {
          "background-color": "data(color)",
          // Hundreds of labels are unreadable and slow to draw: past LABELLED_NODES, the table
          // below names them.
          label: graph.nodes.length <= LABELLED_NODES ? "data(label)" : "",
          "font-size": 9,
          color: "#111827",
          width: 14,
          height: 14,
        },
      },
      { selector: "edge", style: { width: 1, "line-color": "#9ca3af", "curve-style": "haystack" } },
    ],
    layout: { name: "preset" },
    // Big graphs stay smooth while panning and zooming: edges come back when the motion stops.
    hideEdgesOnViewport: graph.nodes.length > LABELLED_NODES,
    minZoom: 0.1,
    maxZoom: 4,
  });
  // For the browser tests: what the renderer holds once it has drawn a frame.
  cy.one("render", () => {
    host.dataset.nodes = String(cy.nodes().length);
    host.dataset.edges = String(cy.edges().length);
  });
  cy.on("tap", "node", (event) => {
    location.hash = `#/wallet/${event.target.id()}`;
  });
  const list = section(
    "Wallets in the graph",
    table(
      "Wallets funded from this funder",
      [
        { label: "Wallet", cell: (n) => walletLink(n.address) },
        { label: "Role", cell: (n) => n.role, sort: (n) => n.role },
        { label: "Funded", figure: (n) => n.funded_amount, show: format.usd },
        { label: "Volume", figure: (n) => n.total_volume, show: format.usd },
        { label: "PnL", figure: (n) => n.total_pnl, show: format.usd },
      ],
      graph.nodes,
    ),
  );
  ctx.main.append(list);
  return () => cy.destroy();
}
