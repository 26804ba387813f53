import type * as v from "valibot";
import { DAY_MS } from "../analytics/fill";
import type { Db } from "../db/open";
import type { Outcome } from "../domain";
import type { CorrelatedWalletsSchema } from "../schemas/wallets";

/**
 * Correlated wallets (GET /v1/wallets/{address}/correlated): who bet the same markets on the
 * same side as this wallet lately. Definition, with every bound that keeps it cheap:
 * - anchors: the wallet's 20 largest bets by volume (wallet_bets) active in the last 30 days
 *   (last fill within the window);
 * - in each anchor market, the other wallets among the 500 largest bets (by BUY USD on their
 *   side) on each side, themselves active in the last 30 days;
 * - shared_markets: how many anchors such a wallet also bet; same_side_ratio: the share of those
 *   where its side is the wallet's side. Wallets that only ever took the other side are left
 *   out; the rest rank by shared_markets, then same_side_ratio, then address.
 * The answer is cached per (address, read-model generation): it only changes with a refresh.
 */
export const CORRELATION_WINDOW_MS = 30 * DAY_MS;
export const ANCHOR_MARKETS = 20;
export const BETS_PER_ANCHOR_SIDE = 500;
export const MAX_CORRELATED = 20;
const CACHE_ENTRIES = 1_000;

export type CorrelatedWallet = v.InferOutput<typeof CorrelatedWalletsSchema>["correlated"][number];

type Side = Outcome;

export type CorrelatedQueries = ReturnType<typeof createCorrelatedQueries>;

export function createCorrelatedQueries(db: Db) {
  const r = db.reader;
  // The wallet's bets are one range of wallet_bets' primary key (sql/0012), filtered on last_ts.
  const anchors = r.prepare<[string, number, number], { market_id: number; side: Side }>(
    `SELECT b.market_id, b.side FROM wallet_ids w CROSS JOIN wallet_bets b ON b.wallet_id = w.id
      WHERE w.address = ? AND b.last_ts >= ? ORDER BY b.volume DESC, b.market_id LIMIT +?`,
  );
  // The 500 largest first (an index range, ties by address), then the window: a market's old
  // bets are never read.
  const betsOnSide = r.prepare<[number, Side, number, number], { wallet: string }>(
    `SELECT wallet FROM (
       SELECT w.address AS wallet, b.last_ts FROM wallet_bets b INDEXED BY wallet_bets_by_market
         CROSS JOIN wallet_ids w ON w.id = b.wallet_id
        WHERE b.market_id = ? AND b.side = ? ORDER BY b.buy_usd DESC, w.address LIMIT +?)
      WHERE last_ts >= ?`,
  );
  const nameOf = r.prepare<[string], { platform_name: string | null }>(
    "SELECT platform_name FROM wallet_stats WHERE address = ?",
  );
  let cachedGeneration = -1;
  const cache = new Map<string, CorrelatedWallet[]>();

  function compute(address: string, now: number): CorrelatedWallet[] {
    const since = now - CORRELATION_WINDOW_MS;
    const tally = new Map<string, { shared: number; same: number }>();
    for (const anchor of anchors.all(address, since, ANCHOR_MARKETS)) {
      for (const side of ["YES", "NO"] as const) {
        for (const { wallet } of betsOnSide.all(
          anchor.market_id,
          side,
          BETS_PER_ANCHOR_SIDE,
          since,
        )) {
          if (wallet === address) continue;
          const t = tally.get(wallet) ?? { shared: 0, same: 0 };
          t.shared += 1;
          if (side === anchor.side) t.same += 1;
          tally.set(wallet, t);
        }
      }
    }
    return [...tally]
      .filter(([, t]) => t.same > 0)
      .map(([wallet, t]) => ({ wallet, shared: t.shared, ratio: t.same / t.shared }))
      .sort((a, b) => b.shared - a.shared || b.ratio - a.ratio || (a.wallet < b.wallet ? -1 : 1))
      .slice(0, MAX_CORRELATED)
      .map((c) => ({
        address: c.wallet,
        platform_name: nameOf.get(c.wallet)?.platform_name ?? null,
        shared_markets: c.shared,
        same_side_ratio: c.ratio,
      }));
  }

  return {
    /** The top `limit` (at most 20) correlated wallets as of `now`, cached per generation. */
    correlated(address: string, limit: number, now: number, generation: number) {
      if (generation !== cachedGeneration) {
        cache.clear();
        cachedGeneration = generation;
      }
      let list = cache.get(address);
      if (!list) {
        list = compute(address, now);
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
        cache.set(address, list);
      }
      return { address, correlated: list.slice(0, limit) };
    },
  };
}
