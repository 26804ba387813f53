import { iso } from "../../domain";
import type { NewTrade } from "../ingest";
import type { FeedCursor } from "./api";
import { fail, type RoundContext } from "./context";
import { type DataTrade, mapDataTrade } from "./data-api";
import type { MarketBook } from "./markets";
import { loadState, STATE_KEYS, saveState, type TradesState } from "./state";

/**
 * The data API's global trades feed (newest first, each match once on its taker side).
 *
 * A feed that grows at its head is read in walks: each walk pages from the head back to where
 * the previous one started (`covered_to`, or `since` the first time), then `covered_to` moves up
 * to the newest fill the walk saw. The walk's position is stored with every page, so a restart
 * continues the walk where it stopped. Fills arriving meanwhile push older ones to higher
 * offsets; an offset walk then reads some fills twice (stored once: keys are stable) and never
 * skips one. Fills at exactly `covered_to` are read again for the same reason.
 */
export async function ingestTradesFeed(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options, summary } = ctx;
  const stored = loadState<TradesState>(ingest, STATE_KEYS.trades);
  if (stored && ctx.sinceGiven) summary.since_ignored = true;
  const state: TradesState = stored ?? { covered_to: null, floor: options.since, walk: null };
  const walk = state.walk ?? {
    next: null,
    stop_at: state.covered_to ?? state.floor,
    newest: null,
    oldest: null,
  };
  state.walk = walk;
  let page = 0;

  while (!options.signal?.aborted) {
    const answer = await api.tradesPage(walk.next, options.tradesPageSize, options.signal);
    // An offset feed refuses to page deeper than it keeps: the walk ends there, with a gap.
    const outOfReach =
      !answer.ok && walk.next !== null && "offset" in walk.next && isRefusal(answer.reason);
    if (!answer.ok && !outOfReach) fail(answer.reason);
    const items = answer.ok ? answer.value.items : [];
    const where = `data API ${options.tradesPath} ${positionOf(walk.next)}`;
    const fills: DataTrade[] = [];
    const bad: { raw: unknown; reason: string }[] = [];
    items.forEach((raw, index) => {
      const mapped = mapDataTrade(raw);
      if (mapped.ok) fills.push(mapped.value);
      else bad.push({ raw, reason: `record ${index + 1}: ${mapped.reason}` });
    });

    const wanted = fills.filter((f) => f.ts >= walk.stop_at);
    const reachedStop = wanted.length < fills.length;
    let gap: { from: number; to: number } | null = null;
    const next = answer.ok ? answer.value.next : null;
    const done = reachedStop || next === null;
    for (const f of fills) {
      walk.newest = Math.max(walk.newest ?? f.ts, f.ts);
      walk.oldest = Math.min(walk.oldest ?? f.ts, f.ts);
    }
    if (done && !reachedStop && walk.oldest !== null && walk.oldest > walk.stop_at) {
      // The feed keeps a limited history (v1: an offset cap; v2: about two months).
      summary.gap = outOfReach
        ? `the trades feed refused to page past ${iso(walk.oldest)}: fills from ${iso(walk.stop_at)} to then were not read`
        : `the trades feed holds nothing older than ${iso(walk.oldest)}: nothing was read from ${iso(walk.stop_at)} to then`;
      ctx.log.warn(
        { gap: summary.gap },
        "polymarket trades feed does not reach back as far as asked",
      );
      // A refusal is a definite gap; a feed that simply holds nothing older may have had none.
      if (outOfReach) gap = { from: walk.stop_at, to: walk.oldest };
    }

    const markets = await book.missingByCondition(wanted.map((f) => f.condition_id));
    let refused = 0;
    const inserted = ctx.transaction(() => {
      for (const b of bad) ctx.quarantine("tail", where, b.reason, b.raw);
      if (gap) ctx.ledger.recordGap("tail", gap.from, gap.to, summary.gap!, ctx.clock.now());
      book.store(markets);
      const rows = wanted.map((f) => toRow(f, book));
      const refusedBefore = summary.trades_refused;
      const newRows = ingest.insertTrades(rows);
      refused = summary.trades_refused - refusedBefore;
      if (done) {
        state.covered_to = Math.max(state.covered_to ?? state.floor, walk.newest ?? state.floor);
        state.walk = null;
      } else {
        walk.next = next;
      }
      saveState(ingest, STATE_KEYS.trades, state);
      return newRows.length;
    });
    summary.trades_pages++;
    summary.trades_new += inserted;
    summary.trades_present += wanted.length - inserted - refused;
    ctx.pageDone("trades", ++page, items.length, inserted);
    if (done) break;
  }
  summary.covered_to = state.covered_to === null ? null : iso(state.covered_to);
  if (state.covered_to !== null) {
    summary.lag_seconds = Math.max(0, Math.round((ctx.clock.now() - state.covered_to) / 1000));
  }
}

/** A fill whose market Gamma does not know is stored under a market made from its own fields. */
export function toRow(f: DataTrade, book: MarketBook): NewTrade {
  const marketId =
    book.marketId(f.condition_id) ??
    book.storeFacts({
      slug: f.slug ?? f.condition_id,
      title: f.title,
      category: null,
      condition_id: f.condition_id,
      end_date: null,
      created_at: null,
      resolved_outcome: null,
      resolved_at: null,
    });
  return {
    tx_hash: f.tx_hash,
    log_index: f.log_index,
    wallet: f.wallet,
    market_id: marketId,
    outcome: f.outcome,
    side: f.side,
    price: f.price,
    size: f.size,
    usd_value: f.usd_value,
    ts: f.ts,
  };
}

const isRefusal = (reason: string) => /HTTP (400|404|422)\b/.test(reason);

const positionOf = (at: FeedCursor | null) =>
  at === null
    ? "first page"
    : "offset" in at
      ? `offset ${at.offset}`
      : `cursor ${at.cursor.slice(0, 24)}`;
