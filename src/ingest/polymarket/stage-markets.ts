import type { Statement } from "../../db/open";
import { fail, type RoundContext } from "./context";
import { type GammaMarket, mapGammaMarket } from "./gamma";
import type { MarketBook } from "./markets";
import {
  loadState,
  type MarketsState,
  type ResolutionsState,
  STATE_KEYS,
  saveState,
} from "./state";

/**
 * Gamma's market list, paged in id order (new markets append at the end, so a stored offset
 * stays valid), from markets ending after `since`. Each page and its offset commit together.
 */
export async function listMarkets(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options } = ctx;
  const state = loadState<MarketsState>(ingest, STATE_KEYS.markets) ?? {
    offset: 0,
    end_date_min: options.since,
  };
  let page = 0;
  while (!options.signal?.aborted) {
    const answer = await api.marketsPage(
      state.offset,
      options.marketsPageSize,
      state.end_date_min,
      options.signal,
    );
    if (!answer.ok) fail(answer.reason);
    const markets = mapAll(answer.value, `Gamma /markets offset ${state.offset}`);
    ctx.transaction(() => {
      book.store(markets);
      state.offset += answer.value.length;
      saveState(ingest, STATE_KEYS.markets, state);
    });
    ctx.summary.markets_pages++;
    ctx.pageDone("markets", ++page, answer.value.length, markets.length);
    if (answer.value.length < options.marketsPageSize) break;
  }
}

/**
 * Resolutions: Gamma is asked again about unresolved markets, a batch per round, round robin
 * by id, so every open market is revisited and a round stays bounded.
 */
export async function refreshResolutions(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options } = ctx;
  const unresolved = ctx.db.reader.prepare(
    `SELECT id, condition_id FROM markets
     WHERE resolved_outcome IS NULL AND id > ? ORDER BY id LIMIT ?`,
  ) as Statement<[number, number], { id: number; condition_id: string }>;
  const state = loadState<ResolutionsState>(ingest, STATE_KEYS.resolutions) ?? { after_id: 0 };
  const due = unresolved.all(state.after_id, options.resolutionBatch);
  // Past the last unresolved market: start over from the lowest id next round.
  if (due.length < options.resolutionBatch) {
    due.push(
      ...unresolved
        .all(0, options.resolutionBatch - due.length)
        .filter((m) => m.id <= state.after_id),
    );
  }
  let page = 0;
  for (let i = 0; i < due.length && !options.signal?.aborted; i += options.lookupBatch) {
    const batch = due.slice(i, i + options.lookupBatch);
    const wanted = new Set(batch.map((m) => m.condition_id));
    // Only a closed market can have resolved, and a default listing may leave closed ones out.
    const answer = await api.marketsByCondition([...wanted], true, options.signal);
    if (!answer.ok) fail(answer.reason);
    const markets = mapAll(answer.value, "Gamma /markets lookup").filter((m) =>
      wanted.has(m.market.condition_id),
    );
    ctx.transaction(() => {
      book.store(markets);
      saveState(ingest, STATE_KEYS.resolutions, { after_id: batch[batch.length - 1]!.id });
    });
    ctx.summary.resolutions_checked += batch.length;
    ctx.pageDone("resolutions", ++page, batch.length, markets.length);
  }
}

/** Maps a whole page first: one bad record refuses the page before anything is written. */
function mapAll(records: unknown[], where: string): GammaMarket[] {
  return records.map((raw, index) => {
    const mapped = mapGammaMarket(raw);
    if (!mapped.ok) fail(`${where}, record ${index + 1}: ${mapped.reason}`);
    return mapped.value;
  });
}
