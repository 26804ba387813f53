import type * as v from "valibot";
import { type Fill, WHALE_VOLUME_USD } from "../analytics/fill";
import { marketFlow } from "../analytics/flow";
import type { Connection } from "../db/open";
import type { MarketFlowSchema } from "../schemas/markets";

/** A market's flow over the last minutes: its fills, all or only whales', bucketed. */

export type MarketFlow = v.InferOutput<typeof MarketFlowSchema>;
export type FlowFigures = ReturnType<typeof marketFlow>;

export function flowOut(slug: string, whalesOnly: boolean, figures: FlowFigures): MarketFlow {
  return {
    slug,
    window_minutes: figures.windowMinutes,
    whales_only: whalesOnly,
    total_volume: figures.totalVolume,
    net_yes: figures.netYes,
    net_no: figures.netNo,
    buckets: figures.buckets.map((b) => ({
      start: new Date(b.start).toISOString(),
      end: new Date(b.end).toISOString(),
      yes_buy_usd: b.yesBuyUsd,
      yes_sell_usd: b.yesSellUsd,
      no_buy_usd: b.noBuyUsd,
      no_sell_usd: b.noSellUsd,
      net_flow: b.netFlow,
      unique_wallets: b.uniqueWallets,
      avg_price: b.avgPrice,
      trades: b.trades,
    })),
  };
}

export function createFlowReads(r: Connection) {
  const FILL = "wallet, market_id AS marketId, outcome, side, price, size, usd_value AS usd, ts";
  const fillsIn = r.prepare<[number, number, number], Fill>(
    `SELECT ${FILL} FROM trades WHERE market_id = +? AND ts >= +? AND ts <= +? ORDER BY ts, id`,
  );
  const whaleFillsIn = r.prepare<[number, number, number, number], Fill>(
    `SELECT ${FILL} FROM trades t
      WHERE t.market_id = +? AND t.ts >= +? AND t.ts <= +?
        AND EXISTS (SELECT 1 FROM wallet_stats s WHERE s.address = t.wallet AND s.total_volume > +?)
      ORDER BY t.ts, t.id`,
  );

  function flowOf(marketId: number, minutes: number, whalesOnly: boolean, now: number) {
    const from = now - minutes * 60_000;
    const fills = whalesOnly
      ? whaleFillsIn.iterate(marketId, from, now, WHALE_VOLUME_USD)
      : fillsIn.iterate(marketId, from, now);
    return marketFlow(fills, { to: now, minutes });
  }

  return { flowOf };
}
