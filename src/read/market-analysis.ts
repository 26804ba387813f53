import type * as v from "valibot";
import { divergence, smartMoneyProbability } from "../analytics/sentiment";
import type { MarketAnalysisSchema } from "../schemas/markets";
import { type createFlowReads, flowOut } from "./market-flow";
import { type createHolderReads, positionOf } from "./market-positions";
import { type createMarketRows, type MarketRow, sentimentOf } from "./market-rows";

/** MarketAnalysis (/v1/analyze): the smart-money probability beside the price, computed live. */

export type MarketAnalysis = v.InferOutput<typeof MarketAnalysisSchema>;

/** MarketAnalysis is recomputed at most this often per market (about 30 seconds). */
export const ANALYSIS_TTL_MS = 30_000;
export const TOP_POSITIONS = 10;
/** Positions MarketAnalysis weighs: the largest holders of each side by BUY USD (index order). */
export const ANALYSIS_POSITIONS_PER_SIDE = 100;
export const ANALYSIS_FLOW_MINUTES = 1440;
const MAX_CACHED_ANALYSES = 1_000;

export function createMarketAnalysis(deps: {
  rows: ReturnType<typeof createMarketRows>;
  holders: ReturnType<typeof createHolderReads>;
  flow: ReturnType<typeof createFlowReads>;
}) {
  const { statsOf } = deps.rows;
  const analyses = new Map<string, { at: number; value: MarketAnalysis }>();

  function analyse(market: MarketRow, now: number): MarketAnalysis {
    const stats = statsOf.get(market.id);
    const rows = [
      ...deps.holders.largest(market.id, "YES", ANALYSIS_POSITIONS_PER_SIDE),
      ...deps.holders.largest(market.id, "NO", ANALYSIS_POSITIONS_PER_SIDE),
    ];
    const byWallet = new Map(rows.map((p) => [p.wallet, p]));
    const smart = smartMoneyProbability(rows.map(positionOf), (wallet) => {
      const p = byWallet.get(wallet);
      return p?.smart_money_score == null || p.confidence == null
        ? null
        : { score: p.smart_money_score, confidence: p.confidence };
    });
    const marketPrice = stats?.last_yes_price ?? null;
    const top = [...rows]
      .sort((a, b) => b.volume - a.volume || (a.wallet < b.wallet ? -1 : 1))
      .slice(0, TOP_POSITIONS);
    // Whale-only flow over a quiet day says nothing; fall back to every wallet and say so.
    let whalesOnly = true;
    let figures = deps.flow.flowOf(market.id, ANALYSIS_FLOW_MINUTES, true, now);
    if (figures.totalVolume <= 0) {
      whalesOnly = false;
      figures = deps.flow.flowOf(market.id, ANALYSIS_FLOW_MINUTES, false, now);
    }
    return {
      market_slug: market.slug,
      market_title: market.title,
      market_category: market.category,
      condition_id: market.condition_id,
      smart_money_prob: smart.probability,
      market_price: marketPrice,
      divergence: divergence(smart.probability, marketPrice),
      sample_wallets: smart.sampleWallets,
      top_positions: top.map((p) => ({
        address: p.wallet,
        market_side: p.side,
        volume: p.volume,
        trade_count: p.trade_count,
        wallet_type: p.wallet_type,
        win_rate: p.win_rate,
        total_pnl: p.total_pnl,
        platform_name: p.platform_name,
      })),
      sentiment: sentimentOf(stats),
      flow_24h: { ...flowOut(market.slug, whalesOnly, figures), relaxed: !whalesOnly },
    };
  }

  return {
    /**
     * MarketAnalysis, computed live and reused for ANALYSIS_TTL_MS per market whatever
     * refreshes in between, so a burst of calls costs one computation.
     */
    analysis(slug: string, now: number): MarketAnalysis | undefined {
      const hit = analyses.get(slug);
      if (hit && now >= hit.at && now - hit.at < ANALYSIS_TTL_MS) return hit.value;
      const market = deps.rows.bySlug.get(slug);
      if (!market) return undefined;
      const value = analyse(market, now);
      analyses.delete(slug);
      if (analyses.size >= MAX_CACHED_ANALYSES) {
        for (const [key, entry] of analyses) {
          if (now - entry.at >= ANALYSIS_TTL_MS || analyses.size >= MAX_CACHED_ANALYSES) {
            analyses.delete(key);
          }
        }
      }
      analyses.set(slug, { at: now, value });
      return value;
    },
  };
}
