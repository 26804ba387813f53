import type { Ingest, MarketFacts } from "../../src/ingest/ingest";

/**
 * Stores a market through the ingest path and returns its id: titled by its slug, with no end
 * date, created at 0 and unresolved unless given otherwise.
 */
export function addMarket(
  ingest: Ingest,
  market: Pick<MarketFacts, "slug" | "category" | "condition_id"> & Partial<MarketFacts>,
): number {
  const r = ingest.upsertMarket({
    title: market.slug,
    end_date: null,
    created_at: 0,
    resolved_outcome: null,
    resolved_at: null,
    ...market,
  });
  if (!r.ok) throw new Error(r.reason);
  return r.id;
}
