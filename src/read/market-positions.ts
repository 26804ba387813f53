import type * as v from "valibot";
import type { Outcome } from "../analytics/fill";
import { heldPosition, type MarketPosition } from "../analytics/sentiment";
import type { Connection } from "../db/open";
import { SIDE_CODE_OF_OUTCOME } from "../refresh/pass";
import type { MarketDetailSchema } from "../schemas/markets";

/** A market's holders (wallet_bets_by_market): its detail's top holders, MarketAnalysis's positions. */

type MarketDetail = v.InferOutput<typeof MarketDetailSchema>;
type Holder = MarketDetail["top_yes_holders"][number];

export const TOP_HOLDERS = 10;

export interface PositionRow {
  wallet: string;
  side: Outcome;
  entry_price: number | null;
  buy_usd: number;
  volume: number;
  yes_shares: number;
  no_shares: number;
  trade_count: number;
  pnl: number;
  smart_money_score: number | null;
  confidence: number | null;
  wallet_type: string | null;
  win_rate: number | null;
  total_pnl: number | null;
  pnl_source: string | null;
  platform_name: string | null;
}

export function holderOf(p: PositionRow): Holder {
  return {
    address: p.wallet,
    shares: p.side === "YES" ? p.yes_shares : p.no_shares,
    entry_price: p.entry_price,
    position_usd: p.buy_usd,
    volume: p.volume,
    trade_count: p.trade_count,
    // Per-market ledger PnL is shown only where the ledger is the wallet's trusted figure
    // (docs/methodology.md, pnl_source): for market makers and whales it misses splits and merges.
    pnl: p.pnl_source === "ledger" ? p.pnl : null,
    wallet_type: p.wallet_type,
    platform_name: p.platform_name,
    smart_money_score: p.smart_money_score,
  };
}

/** A holder row as the smart-money share weighs it (heldPosition, src/analytics/sentiment.ts). */
export function positionOf(p: PositionRow): MarketPosition {
  return heldPosition({
    wallet: p.wallet,
    side: p.side,
    entryPrice: p.entry_price,
    yesShares: p.yes_shares,
    noShares: p.no_shares,
    volume: p.volume,
    trades: p.trade_count,
  });
}

/**
 * A market side's holders in `order`, walking wallet_bets_by_market (sql/0027) for the side: each
 * position's ledger PnL marked at the market's last trade prices as of the latest refresh, or
 * settled at its outcome (betPnl in src/refresh/wallet-model.ts, in SQL). Exported for the test
 * that holds it to that index.
 */
export function marketHoldersSql(order: string): string {
  return `SELECT w.address AS wallet, b.side, b.entry_price, b.buy_usd, b.volume, b.yes_shares, b.no_shares,
            b.trade_count,
            b.pnl_base
              + b.yes_shares * CASE WHEN m.resolved_outcome IS NULL
                  THEN coalesce(ms.last_yes_trade, 0) ELSE m.resolved_outcome = 'YES' END
              + b.no_shares * CASE WHEN m.resolved_outcome IS NULL
                  THEN coalesce(ms.last_no_trade, 0) ELSE m.resolved_outcome = 'NO' END AS pnl,
            s.smart_money_score, s.confidence, s.wallet_type, s.win_rate,
            s.total_pnl, s.pnl_source, s.platform_name
       FROM wallet_bets b INDEXED BY wallet_bets_by_market
       CROSS JOIN wallet_ids w ON w.id = b.wallet_id
       LEFT JOIN wallet_stats s ON s.address = w.address
       JOIN markets m ON m.id = b.market_id
       LEFT JOIN market_stats ms ON ms.market_id = b.market_id
      WHERE b.market_id = +? AND b.side_code = ${SIDE_CODE_OF_OUTCOME}
      ORDER BY ${order} LIMIT +?`;
}

export function createHolderReads(r: Connection) {
  const holders = r.prepare<[number, Outcome, number], PositionRow>(
    marketHoldersSql("b.buy_usd DESC, w.address"),
  );
  /** The same rows in index order alone: equal sizes come in no particular order. */
  const holdersBySize = r.prepare<[number, Outcome, number], PositionRow>(
    marketHoldersSql("b.buy_usd DESC"),
  );

  /**
   * The TOP_HOLDERS largest holders of a side, by BUY USD, then address. Ordering by address too
   * makes SQLite sort every row it reads (about 45 µs a side on the medium world's busiest market);
   * unless the last holder's size ties with the next one's, the index's order picks the same
   * holders, and only they need sorting.
   */
  function topHolders(marketId: number, side: Outcome): PositionRow[] {
    const rows = holdersBySize.all(marketId, side, TOP_HOLDERS + 1);
    if (rows.length > TOP_HOLDERS) {
      if (rows[TOP_HOLDERS - 1]!.buy_usd === rows[TOP_HOLDERS]!.buy_usd) {
        return holders.all(marketId, side, TOP_HOLDERS);
      }
      rows.length = TOP_HOLDERS;
    }
    // Addresses are lowercase hex, so < orders them as SQLite's binary collation does.
    return rows.sort((a, b) => b.buy_usd - a.buy_usd || (a.wallet < b.wallet ? -1 : 1));
  }

  return {
    /** The `limit` largest holders of a side, by BUY USD, then address. */
    largest: (marketId: number, side: Outcome, limit: number) => holders.all(marketId, side, limit),
    top: topHolders,
  };
}
