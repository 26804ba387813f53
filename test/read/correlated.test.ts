import { describe, expect, it } from "vitest";
import {
  ANCHOR_MARKETS,
  CORRELATION_WINDOW_MS,
  createCorrelatedQueries,
} from "../../src/read/correlated";
import { seededTestAppPerFile } from "../helpers/app";

// Correlated wallets (src/read/correlated.ts) read each anchor market's largest bets in the
// index's order and fall back to the order with addresses only when the cut falls on a tie. The
// answers must be those of the definition: the largest bets ordered by size, then address.

const NOW = Date.parse("2026-11-01T00:00:00.000Z");
const world = seededTestAppPerFile({ now: NOW });

/** The definition, read straight: every bet of the side in (size, address) order. */
function expected(address: string, perSide: number) {
  const r = world.t.db.reader;
  const since = NOW - CORRELATION_WINDOW_MS;
  const anchors = r
    .prepare(
      `SELECT b.market_id, b.side FROM wallet_bets b JOIN wallet_ids w ON w.id = b.wallet_id
        WHERE w.address = ? AND b.last_ts >= ? ORDER BY b.volume DESC, b.market_id LIMIT ?`,
    )
    .all(address, since, ANCHOR_MARKETS) as { market_id: number; side: string }[];
  const tally = new Map<string, { shared: number; same: number }>();
  for (const anchor of anchors) {
    for (const side of ["YES", "NO"]) {
      const largest = r
        .prepare(
          `SELECT w.address AS wallet, b.last_ts FROM wallet_bets b JOIN wallet_ids w ON w.id = b.wallet_id
            WHERE b.market_id = ? AND b.side = ? ORDER BY b.buy_usd DESC, w.address LIMIT ?`,
        )
        .all(anchor.market_id, side, perSide) as { wallet: string; last_ts: number }[];
      for (const { wallet, last_ts } of largest) {
        if (last_ts < since || wallet === address) continue;
        const entry = tally.get(wallet) ?? { shared: 0, same: 0 };
        entry.shared += 1;
        if (side === anchor.side) entry.same += 1;
        tally.set(wallet, entry);
      }
    }
  }
  return [...tally]
    .filter(([, e]) => e.same > 0)
    .map(([wallet, e]) => ({ wallet, shared: e.shared, ratio: e.same / e.shared }))
    .sort((a, b) => b.shared - a.shared || b.ratio - a.ratio || (a.wallet < b.wallet ? -1 : 1))
    .slice(0, 20)
    .map((c) => [c.wallet, c.shared, c.ratio]);
}

describe("correlated wallets", () => {
  it("are the definition's for the busiest wallets, at cuts of 1 to 500 bets a side", async () => {
    const wallets = (
      world.t.db.reader
        .prepare(
          "SELECT address FROM wallet_stats WHERE last_trade_at >= ? ORDER BY trade_count DESC LIMIT 40",
        )
        .all(NOW - CORRELATION_WINDOW_MS) as { address: string }[]
    ).map((w) => w.address);
    let compared = 0;
    for (const perSide of [1, 2, 3, 5, 500]) {
      const queries = createCorrelatedQueries(world.t.db, { betsPerAnchorSide: perSide });
      for (const address of wallets) {
        const got = (await queries.correlated(address, 20, NOW, perSide)).correlated.map((c) => [
          c.address,
          c.shared_markets,
          c.same_side_ratio,
        ]);
        expect(got, `${address} ${perSide}`).toEqual(expected(address, perSide));
        compared += got.length;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });

  it("take the smallest addresses where the cut falls among bets of one size", async () => {
    // Every bet on the busiest side of a market made one size and recent, and one of its wallets
    // made to bet there most: the cut among the largest then falls on a tie, and the index's order
    // of equal sizes (by wallet id) is not the addresses' order.
    const w = world.t.db.writer;
    const busiest = w
      .prepare(
        `SELECT market_id, side FROM wallet_bets GROUP BY market_id, side HAVING count(*) >= 8
          ORDER BY count(*) DESC LIMIT 1`,
      )
      .get() as { market_id: number; side: string };
    w.prepare(
      // The stored columns (sql/0021): 100 USD in millionths, and the bet's times all a day ago.
      `UPDATE wallet_bets SET buy_usd_units = 100000000, first_ts = ?, entry_offset = 0,
         last_offset = 0
        WHERE market_id = ? AND side = ?`,
    ).run(NOW - 86_400_000, busiest.market_id, busiest.side);
    const anchor = w
      .prepare(
        `SELECT w.address, b.wallet_id FROM wallet_bets b JOIN wallet_ids w ON w.id = b.wallet_id
          WHERE b.market_id = ? AND b.side = ? ORDER BY w.address DESC LIMIT 1`,
      )
      .get(busiest.market_id, busiest.side) as { address: string; wallet_id: number };
    w.prepare(
      "UPDATE wallet_bets SET volume_units = 1e12 WHERE wallet_id = ? AND market_id = ?",
    ).run(anchor.wallet_id, busiest.market_id);
    for (const perSide of [2, 3, 4]) {
      const queries = createCorrelatedQueries(world.t.db, { betsPerAnchorSide: perSide });
      const got = (await queries.correlated(anchor.address, 20, NOW, 0)).correlated.map((c) => [
        c.address,
        c.shared_markets,
        c.same_side_ratio,
      ]);
      expect(got, String(perSide)).toEqual(expected(anchor.address, perSide));
    }
  });
});
