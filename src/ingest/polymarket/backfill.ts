import {
  emptySummary,
  fail,
  IngestFailure,
  type PolymarketDeps,
  type PolymarketOptions,
  type RoundSummary,
} from "./context";
import { POLYMARKET_LABELS } from "./contracts";
import { createMarketBook } from "./markets";
import { createContext } from "./round";
import { need, readFillRanges, startAt } from "./stage-chain";
import { loadState, saveState } from "./state";

/**
 * `smartmoney ingest polymarket backfill --from DATE [--to DATE]`: fills of a past period from
 * the exchanges' OrderFilled logs (both eras), in adaptive block ranges, each committed with
 * the backfill's own cursor, so an interrupted backfill resumes where it stopped. It stores
 * through the one ingest path with the key every source shares, so it never duplicates what the
 * stream, the tail or the chain stage stored. It needs a Polygon RPC URL: Polymarket's public
 * orderbook subgraph stopped following the exchanges at the V2 migration (2026-04-28) and is not
 * a source here (docs/ingest.md, "Deep history").
 */

export const BACKFILL_KEY = "polymarket:backfill";

interface BackfillState {
  from_ms: number;
  to_ms: number | null;
  from_block: number;
  to_block: number;
  next_block: number;
}

export interface BackfillOptions extends PolymarketOptions {
  from: number;
  /** Default: the newest confirmed block. */
  to: number | null;
  /** After each committed range. */
  onProgress?(progress: BackfillProgress): void;
}

export interface BackfillProgress {
  from_block: number;
  to_block: number;
  next_block: number;
  trades_new: number;
}

export type BackfillResult =
  | { ok: true; summary: RoundSummary; state: BackfillState; resumed: boolean }
  | { ok: false; reason: string; summary: RoundSummary };

export async function runBackfill(
  deps: PolymarketDeps,
  options: BackfillOptions,
): Promise<BackfillResult> {
  const summary = emptySummary("chain");
  const ctx = createContext(deps, { ...options, listMarkets: false }, summary);
  if (!ctx.rpc) {
    return {
      ok: false,
      reason:
        "backfill reads chain logs: give --rpc-url or set SMARTMONEY_POLYGON_RPC_URL (the public orderbook subgraph stopped at the V2 migration)",
      summary,
    };
  }
  const rpc = ctx.rpc;
  const book = createMarketBook(ctx, true);
  try {
    ctx.transaction(() => {
      for (const label of POLYMARKET_LABELS) ctx.ingest.upsertLabel(label);
    });
    const head = need(await rpc.blockNumber(options.signal));
    const safe = head - ctx.options.confirmations;
    const stored = loadState<BackfillState>(ctx.ingest, BACKFILL_KEY);
    const resumed =
      stored !== null && stored.from_ms === options.from && stored.to_ms === options.to;
    let state: BackfillState;
    if (resumed && stored) {
      state = stored;
    } else {
      const fromBlock = (await startAt(rpc, options.from, safe, ctx)).start_block;
      const toBlock =
        options.to === null ? safe : (await startAt(rpc, options.to, safe, ctx)).start_block - 1;
      if (toBlock < fromBlock)
        fail(`nothing to read: --from is at block ${fromBlock}, --to before it`);
      state = {
        from_ms: options.from,
        to_ms: options.to,
        from_block: fromBlock,
        to_block: toBlock,
        next_block: fromBlock,
      };
      ctx.transaction(() => saveState(ctx.ingest, BACKFILL_KEY, state));
    }
    await readFillRanges(ctx, book, state.next_block, state.to_block, "backfill", (to) => {
      state.next_block = to + 1;
      saveState(ctx.ingest, BACKFILL_KEY, state);
      options.onProgress?.({
        from_block: state.from_block,
        to_block: state.to_block,
        next_block: state.next_block,
        trades_new: summary.trades_new,
      });
    });
    summary.next_block = state.next_block;
    summary.head_block = head;
    summary.stopped = options.signal?.aborted ?? false;
    summary.requests = ctx.http.stats.requests;
    summary.retries = ctx.http.stats.retries;
    return { ok: true, summary, state, resumed };
  } catch (error) {
    if (!(error instanceof IngestFailure)) throw error;
    if (options.signal?.aborted) {
      summary.stopped = true;
      return {
        ok: true,
        summary,
        state: loadState<BackfillState>(ctx.ingest, BACKFILL_KEY)!,
        resumed: false,
      };
    }
    return { ok: false, reason: error.message, summary };
  }
}
