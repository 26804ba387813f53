import type { Tier } from "../../src/auth/tiers";
import { openConnection } from "../../src/db/open";

/**
 * What `npm run bench` loads: one representative request per GET endpoint of the API, with
 * addresses, slugs and ids picked from the benchmark's database (pickFromWorld) before the server
 * starts. Every row is measured against the same ceiling (a bare node:http server answering a
 * constant JSON) in the same run. To cover another endpoint, add a row to benchEndpoints: the app
 * server mints one key per tier named here, on an account whose rate limits are raised.
 */
export interface BenchEndpoint {
  /** Short name for the table and `--only`. */
  name: string;
  method: "GET" | "POST" | "DELETE";
  /** Path and query, e.g. "/v1/_ping"; must answer `status` on the benchmark's database. */
  path: string;
  /** The key sent as `Authorization: Bearer …`; null sends none. */
  tier: Tier | null;
  body?: unknown;
  /** The status every response must have; anything else makes the run invalid. */
  status: number;
  /** Least acceptable requests/s as a share of the ceiling's, when there is a target. */
  target?: number;
  /** Greatest acceptable median p99 latency in milliseconds, when there is a target. */
  maxP99Ms?: number;
}

/** The ceiling's answer: the same body /v1/_ping gives a terminal_pro key. */
export const CEILING_BODY = JSON.stringify({ ok: true, tier: "terminal_pro" });

/** The latency target for every endpoint at 50 connections. */
export const MAX_P99_MS = 20;

/** The ids a seeded database offers the endpoint table. */
export interface WorldPicks {
  /** The whale with the most trades: the heaviest ordinary wallet page. */
  wallet: string;
  /** A wallet with typed connections (an insider when there is one). */
  connected: string;
  /** A platform-name fragment shared by many wallets. */
  searchQuery: string;
  /** The unresolved market with the most trades. */
  market: { slug: string; conditionId: string; category: string };
  /** Other busy markets, for analyze requests that find nothing cached. */
  coldSlugs: string[];
  /** The largest sybil cluster whose funder the graph endpoint accepts (< 500 wallets). */
  cluster: { id: string; funder: string } | null;
  /** The first investigation the list serves. */
  investigationId: number | null;
  /** The wallet's latest trade. */
  txHash: string;
  /** The latest trade time: the end of the trade-window query. */
  lastTradeAt: number;
}

const GRAPH_MAX_WALLETS = 500;
const DAY_MS = 86_400_000;

/** Wallets a search must match for its page to be full (the bench asks for 10). */
const SEARCH_PAGE = 10;

/**
 * A platform-name fragment (a word of four letters or more) that at least a page of wallets
 * share, so every world answers a full page and --compare-scales compares the same answer. Taken
 * from the names of the biggest wallets, the picked whale's first; else its address's prefix.
 */
function searchFragment(
  db: ReturnType<typeof openConnection>,
  wallet: { address: string; platform_name: string | null },
): string {
  const names = db
    .prepare(
      `SELECT platform_name FROM wallet_stats WHERE platform_name IS NOT NULL
        ORDER BY total_volume DESC LIMIT 50`,
    )
    .pluck()
    .all() as string[];
  const words = [
    ...new Set([wallet.platform_name ?? "", ...names].flatMap((n) => n.match(/[a-z]{4,}/gi) ?? [])),
  ];
  const sharing = db
    .prepare<[string, number], number>(
      "SELECT count(*) FROM (SELECT 1 FROM wallet_stats WHERE platform_name LIKE ? LIMIT ?)",
    )
    .pluck();
  return (
    // All-hex words ("face") would be searched as address prefixes.
    words.find(
      (word) => !/^[0-9a-f]+$/i.test(word) && sharing.get(`%${word}%`, SEARCH_PAGE)! >= SEARCH_PAGE,
    ) ??
    words[0] ??
    wallet.address.slice(0, 6)
  );
}

/**
 * Picks the table's ids from a seeded database, read-only. Throws when the database holds no
 * whale or no traded market: then there is nothing representative to load.
 */
export function pickFromWorld(dbPath: string, coldCount: number): WorldPicks {
  const db = openConnection(dbPath, { readonly: true });
  try {
    const one = <T>(sql: string, ...params: unknown[]) =>
      db.prepare(sql).get(...params) as T | undefined;
    const wallet = one<{ address: string; platform_name: string | null }>(
      `SELECT address, platform_name FROM wallet_stats WHERE wallet_type = 'whale'
        ORDER BY trade_count DESC, address LIMIT 1`,
    );
    if (!wallet) throw new Error(`${dbPath}: no whale in wallet_stats; seed a world first`);
    const markets = db
      .prepare(
        `SELECT m.slug, m.condition_id AS conditionId, m.category FROM market_stats s
           JOIN markets m ON m.id = s.market_id
          WHERE m.resolved_outcome IS NULL
          ORDER BY s.trade_count DESC, m.id LIMIT ?`,
      )
      .all(coldCount + 1) as { slug: string; conditionId: string; category: string | null }[];
    const market = markets[0];
    if (!market) throw new Error(`${dbPath}: no unresolved market with trades`);
    const connected =
      one<{ address: string }>(
        `SELECT s.address FROM wallet_stats s WHERE s.wallet_type = 'insider'
            AND EXISTS (SELECT 1 FROM wallet_connections c WHERE c.address = s.address)
          ORDER BY s.address LIMIT 1`,
      ) ?? one<{ address: string }>("SELECT address FROM wallet_connections LIMIT 1");
    const searchQuery = searchFragment(db, wallet);
    const cluster = one<{ id: string; funder: string }>(
      `SELECT id, funder FROM sybil_clusters WHERE member_count < ?
        ORDER BY member_count DESC, id LIMIT 1`,
      GRAPH_MAX_WALLETS,
    );
    const investigation = one<{ id: number }>(
      `SELECT id FROM investigations WHERE status = 'open' AND active = 1
        ORDER BY p_value, created_at DESC, id DESC LIMIT 1`,
    );
    const trade = one<{ tx_hash: string; ts: number }>(
      "SELECT tx_hash, ts FROM trades WHERE wallet = ? ORDER BY ts DESC, id DESC LIMIT 1",
      wallet.address,
    )!;
    const last = one<{ ts: number }>("SELECT max(ts) AS ts FROM trades")!;
    return {
      wallet: wallet.address,
      connected: connected?.address ?? wallet.address,
      searchQuery,
      market: {
        slug: market.slug,
        conditionId: market.conditionId,
        category: market.category ?? "politics",
      },
      coldSlugs: markets.slice(1).map((m) => m.slug),
      cluster: cluster ?? null,
      investigationId: investigation?.id ?? null,
      txHash: trade.tx_hash,
      lastTradeAt: last.ts,
    };
  } finally {
    db.close();
  }
}

const PING: BenchEndpoint = {
  name: "ping",
  method: "GET",
  path: "/v1/_ping",
  tier: "terminal_pro",
  status: 200,
  target: 0.8,
  maxP99Ms: MAX_P99_MS,
};

/**
 * The table. Without picks (a fresh, empty database) only the ping. Rows with a throughput
 * target come first: bench/http.ts measures the ceiling next to them in every round.
 */
export function benchEndpoints(picks: WorldPicks | null): BenchEndpoint[] {
  if (picks === null) return [PING];
  const { wallet, market } = picks;
  const get = (name: string, path: string, target?: number): BenchEndpoint => ({
    name,
    method: "GET",
    path,
    tier: "terminal_pro",
    status: 200,
    maxP99Ms: MAX_P99_MS,
    ...(target === undefined ? {} : { target }),
  });
  const windowEnd = picks.lastTradeAt;
  const rows: (BenchEndpoint | null | false)[] = [
    // The throughput targets, as shares of the ceiling: a wallet signal >= 0.6, the ping
    // >= 0.8, the full wallet dossier and the 50-row whale leaderboard >= 0.3.
    get("signals-wallet", `/v1/signals/wallet/${wallet}`, 0.6),
    PING,
    get("wallet-profile", `/v1/wallets/${wallet}`, 0.3),
    get("lb-whales", "/v1/leaderboards/whales?limit=50", 0.3),
    get("signals-market", `/v1/signals/market/${market.slug}`),
    get("signals-screen", "/v1/signals/screen?limit=25"),
    get("signals-movers", "/v1/signals/movers?period_hours=24&limit=20"),
    get("wallet-categories", `/v1/wallets/${wallet}/categories`),
    get("wallet-timing", `/v1/wallets/${wallet}/timing`),
    get("wallet-correlated", `/v1/wallets/${wallet}/correlated?limit=5`),
    get("wallet-connections", `/v1/wallets/${picks.connected}/connections?limit=100`),
    get("wallet-trades", `/v1/wallets/${wallet}/trades?limit=20`),
    get(
      "wallet-search",
      `/v1/wallets/search?q=${encodeURIComponent(picks.searchQuery)}&limit=${SEARCH_PAGE}`,
    ),
    get("lb-pnl", "/v1/leaderboards/pnl?limit=50"),
    get("lb-category", `/v1/leaderboards/category/${market.category}?limit=50`),
    get("market-detail", `/v1/markets/${market.slug}`),
    get("market-sentiment", `/v1/markets/${market.slug}/sentiment`),
    get("market-flow", `/v1/markets/${market.slug}/flow?minutes=60`),
    get("markets-trending", "/v1/markets/trending?period_hours=24&limit=20"),
    get("markets-moving", "/v1/markets/moving?period_hours=24&limit=20"),
    get("analyze-warm", `/v1/analyze/market/${market.slug}`),
    // Ten: a page every world fills (the small world has ten clusters, the large 415), so
    // --compare-scales compares the same answer (at 100 the large world's was ten times longer).
    picks.cluster && get("clusters-sybil", "/v1/clusters/sybil?limit=10"),
    picks.cluster && get("cluster-by-id", `/v1/clusters/by-id/${picks.cluster.id}`),
    picks.cluster && get("cluster-graph", `/v1/clusters/${picks.cluster.funder}/graph`),
    // Three: a page every world fills (the small world has four investigations), so
    // --compare-scales compares the same answer.
    get("investigations", "/v1/investigations?limit=3"),
    picks.investigationId !== null &&
      get("investigation", `/v1/investigations/${picks.investigationId}`),
    get("trades-market", `/v1/trades?market=${market.conditionId}&limit=25`),
    // A week: long enough for every world to fill the page (the small world has 5 fills of
    // 1,000 USD or more in its last day, 32 in its last week), so --compare-scales compares the
    // same answer, 25 fills and a cursor, on every world.
    get(
      "trades-window",
      `/v1/trades?start=${windowEnd - 7 * DAY_MS}&end=${windowEnd}&min_bet=1000&limit=25`,
    ),
    get("trade-by-tx", `/v1/trades/${picks.txHash}`),
  ];
  return rows.filter((row): row is BenchEndpoint => row !== null && row !== false);
}

/** The analyze request for a slug, as the cold measurement sends it. */
export function analyzePath(slug: string): string {
  return `/v1/analyze/market/${slug}`;
}
