import type * as v from "valibot";
import { DAY_MS } from "../analytics/fill";
import type { Db } from "../db/open";
import type { Outcome } from "../domain";
import { SIDE_CODE_OF_OUTCOME } from "../refresh/pass";
import type { CorrelatedWalletsSchema } from "../schemas/wallets";
import { createSteppedReads } from "./stepped";

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

/**
 * A side's largest bets, in wallet_bets_by_market's order (sql/0027), and the bets of one size on
 * a side, by address (createCorrelatedQueries says why the two). Exported for the test that holds
 * them to that index.
 */
export const SIDE_BETS_BY_SIZE_SQL = `SELECT wallet_id, last_ts, buy_usd
  FROM wallet_bets INDEXED BY wallet_bets_by_market
 WHERE market_id = +? AND side_code = ${SIDE_CODE_OF_OUTCOME} ORDER BY buy_usd DESC LIMIT +?`;
export const SIDE_BETS_OF_SIZE_SQL = `SELECT b.wallet_id, b.last_ts
  FROM wallet_bets b INDEXED BY wallet_bets_by_market
 CROSS JOIN wallet_ids w ON w.id = b.wallet_id
 WHERE b.market_id = +? AND b.side_code = ${SIDE_CODE_OF_OUTCOME} AND b.buy_usd = +?
 ORDER BY w.address LIMIT +?`;

export type CorrelatedWallet = v.InferOutput<typeof CorrelatedWalletsSchema>["correlated"][number];

type Side = Outcome;

export type CorrelatedQueries = ReturnType<typeof createCorrelatedQueries>;

export function createCorrelatedQueries(
  db: Db,
  options: {
    /** BETS_PER_ANCHOR_SIDE but in tests, which pick a few to meet ties at the cut. */
    betsPerAnchorSide?: number;
  } = {},
) {
  const perSide = options.betsPerAnchorSide ?? BETS_PER_ANCHOR_SIDE;
  const r = db.reader;
  // The wallet's bets are one range of wallet_bets' primary key (sql/0012), filtered on last_ts.
  const anchors = r.prepare<
    [string, number, number],
    { wallet_id: number; market_id: number; side: Side }
  >(
    `SELECT w.id AS wallet_id, b.market_id, b.side FROM wallet_ids w
       CROSS JOIN wallet_bets b ON b.wallet_id = w.id
      WHERE w.address = +? AND b.last_ts >= +? ORDER BY b.volume DESC, b.market_id LIMIT +?`,
  );
  // A side's largest bets in the index's order, one more than asked. Ordering by address as well,
  // as the definition does, made SQLite read, join and sort every bet on the side (a busy
  // market's tens of thousands, 40 sides for a wallet: 1–2 s on the large world, with every
  // request waiting). By size alone the set is the same unless the cut falls between bets of
  // one size; then those are read apart, by address (betsOfSize). Wallets are counted by id and
  // named only at the end, so no bet is joined to its address.
  const betsBySize = r.prepare<
    [number, Side, number],
    { wallet_id: number; last_ts: number; buy_usd: number }
  >(SIDE_BETS_BY_SIZE_SQL);
  const betsOfSize = r.prepare<
    [number, Side, number, number],
    { wallet_id: number; last_ts: number }
  >(SIDE_BETS_OF_SIZE_SQL);
  const walletOf = r.prepare<[number], { address: string; platform_name: string | null }>(
    `SELECT w.address, s.platform_name FROM wallet_ids w
       LEFT JOIN wallet_stats s ON s.address = w.address WHERE w.id = +?`,
  );

  /**
   * The wallets (ids) among the side's `limit` largest bets, ties in size by address, that
   * were active since `since`.
   */
  function activeAmongLargest(marketId: number, side: Side, limit: number, since: number) {
    const bySize = betsBySize.all(marketId, side, limit + 1);
    let rows: { wallet_id: number; last_ts: number }[] = bySize;
    if (bySize.length > limit && bySize[limit - 1]!.buy_usd === bySize[limit]!.buy_usd) {
      const size = bySize[limit - 1]!.buy_usd;
      const larger = bySize.filter((b) => b.buy_usd > size);
      rows = [...larger, ...betsOfSize.all(marketId, side, size, limit - larger.length)];
    }
    const out: number[] = [];
    for (let i = 0; i < Math.min(rows.length, limit); i++) {
      if (rows[i]!.last_ts >= since) out.push(rows[i]!.wallet_id);
    }
    return out;
  }
  let cachedGeneration = -1;
  const cache = new Map<string, Promise<CorrelatedWallet[]>>();
  const steppedRead = createSteppedReads(db);

  /** The wallet's correlated wallets, a side of an anchor market per step (stepped.ts). */
  function* computeSteps(address: string, now: number): Generator<void, CorrelatedWallet[]> {
    const since = now - CORRELATION_WINDOW_MS;
    const tally = new Map<number, { shared: number; same: number }>();
    for (const anchor of anchors.all(address, since, ANCHOR_MARKETS)) {
      for (const side of ["YES", "NO"] as const) {
        yield;
        for (const wallet of activeAmongLargest(anchor.market_id, side, perSide, since)) {
          if (wallet === anchor.wallet_id) continue;
          const t = tally.get(wallet) ?? { shared: 0, same: 0 };
          t.shared += 1;
          if (side === anchor.side) t.same += 1;
          tally.set(wallet, t);
        }
      }
    }
    const ranked = [...tally]
      .filter(([, t]) => t.same > 0)
      .map(([id, t]) => ({ id, shared: t.shared, ratio: t.same / t.shared }))
      .sort((a, b) => b.shared - a.shared || b.ratio - a.ratio);
    // Addresses break ties, so every wallet tied with the last one kept is named before the cut.
    const last = ranked[MAX_CORRELATED - 1];
    const named = (
      last === undefined
        ? ranked
        : ranked.filter(
            (c) => c.shared > last.shared || (c.shared === last.shared && c.ratio >= last.ratio),
          )
    ).map((c) => ({ ...c, wallet: walletOf.get(c.id)! }));
    return named
      .sort(
        (a, b) =>
          b.shared - a.shared ||
          b.ratio - a.ratio ||
          (a.wallet.address < b.wallet.address ? -1 : 1),
      )
      .slice(0, MAX_CORRELATED)
      .map((c) => ({
        address: c.wallet.address,
        platform_name: c.wallet.platform_name,
        shared_markets: c.shared,
        same_side_ratio: c.ratio,
      }));
  }

  return {
    /**
     * The top `limit` (at most 20) correlated wallets as of `now`, cached per generation. Read
     * a side of an anchor market at a time, with other requests answered in between (a busy
     * wallet's 40 sides are about 0.1 s on the large world); a read under way is shared.
     */
    async correlated(address: string, limit: number, now: number, generation: number) {
      if (generation !== cachedGeneration) {
        cache.clear();
        cachedGeneration = generation;
      }
      let list = cache.get(address);
      if (!list) {
        const reading = steppedRead(() => computeSteps(address, now));
        if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
        cache.set(address, reading);
        // A read that failed is not kept: the next request reads again.
        reading.catch(() => {
          if (cache.get(address) === reading) cache.delete(address);
        });
        list = reading;
      }
      return { address, correlated: (await list).slice(0, limit) };
    },
  };
}
