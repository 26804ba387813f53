import type { Statement } from "../../db/open";
import { fail, type RoundContext } from "./context";
import { type GammaMarket, mapGammaMarket, marketsOfEvent } from "./gamma";
import type { MarketBook } from "./markets";
import {
  loadState,
  type MarketsState,
  type NewMarketsState,
  type ResolutionsState,
  STATE_KEYS,
  saveState,
} from "./state";

/**
 * Every round, first: the markets created since the last round (Gamma's keyset list newest
 * first, down to the newest event seen before), then those fills waited for that Gamma did not
 * know yet, then the next pages of the full listing (below).
 */
export async function discoverMarkets(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { options } = ctx;
  if (options.listMarkets) await listNewMarkets(ctx, book);
  if (options.signal?.aborted) return;
  const awaited = await book.awaited();
  if (awaited.length > 0) ctx.transaction(() => book.store(awaited));
  if (options.listMarkets && !options.signal?.aborted) await listMarkets(ctx, book);
}

/**
 * New markets: Gamma's ids only grow, so the keyset event list ordered by id descending starts
 * with the newest events. A walk reads from that head down to the first event at or below the
 * highest id the previous walk saw (`newest_event`), whatever the size of the full listing; a
 * walk longer than a round's pages resumes from its cursor next round, then the next walk
 * starts from the head again. The very first walk reads one page, to set the mark: the full
 * listing covers everything older.
 */
export async function listNewMarkets(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options } = ctx;
  const state: NewMarketsState = loadState<NewMarketsState>(ingest, STATE_KEYS.newMarkets) ?? {
    newest_event: null,
    walk: null,
  };
  let walk = state.walk ?? { after_cursor: null, stop_at: state.newest_event, top: null };
  state.walk = walk;
  // A walk resumed from an earlier round ends below markets created since: one more from the head.
  let fromHead = walk.after_cursor === null;
  let page = 0;
  while (page < options.marketsPagesPerRound && !options.signal?.aborted) {
    const where = `Gamma /events/keyset newest first ${walk.after_cursor ? `after ${walk.after_cursor.slice(0, 24)}` : "first page"}`;
    const answer = await api.eventsKeysetPage(
      walk.after_cursor,
      GAMMA_PAGE,
      { endDateMin: null, newestFirst: true },
      options.signal,
    );
    if (!answer.ok) fail(answer.reason);
    const events = answer.value.items;
    const idOf = (event: unknown) => Number((event as { id?: unknown } | null)?.id);
    const ids = events.map(idOf).filter(Number.isFinite);
    const stopAt = walk.stop_at;
    // Events at or below the mark were listed before: the walk has reached them.
    const fresh = stopAt === null ? events : events.filter((e) => !(idOf(e) <= stopAt));
    const reached = stopAt === null || ids.some((id) => id <= stopAt);
    const next = answer.value.next;
    const repeated = next !== null && next === walk.after_cursor;
    if (repeated) {
      ctx.log.warn(
        { cursor: next.slice(0, 40) },
        "Gamma keyset cursor came back again: ending this walk for new markets",
      );
    }
    // A server that ignored the order would show its oldest events: new ones would go unseen
    // until the full listing's next pass. Say so rather than fail.
    if (ids.length > 1 && ids[0]! < ids[ids.length - 1]!) {
      ctx.log.warn(
        { first: ids[0], last: ids[ids.length - 1] },
        "Gamma keyset list ignored order=id descending: new markets wait for the full listing",
      );
    }
    const { markets, bad } = mapEach(fresh.flatMap(marketsOfEvent));
    const done = reached || next === null || repeated;
    ctx.transaction(() => {
      for (const b of bad) ctx.quarantine("markets", where, b.reason, b.raw);
      book.store(markets);
      if (ids.length > 0) walk.top = Math.max(walk.top ?? ids[0]!, ...ids);
      if (done) {
        state.newest_event = Math.max(state.newest_event ?? 0, walk.top ?? 0) || null;
        state.walk = null;
      } else {
        walk.after_cursor = next;
      }
      saveState(ingest, STATE_KEYS.newMarkets, state);
    });
    ctx.summary.markets_pages++;
    ctx.pageDone("markets", ++page, fresh.length, markets.length);
    if (done && fromHead) break;
    if (done) {
      walk = { after_cursor: null, stop_at: state.newest_event, top: null };
      state.walk = walk;
      fromHead = true;
    }
  }
}

/**
 * Gamma's keyset event list (events embed their markets and carry the tags a category comes
 * from), from markets ending after `since` the first time and open markets on every later pass.
 * Each page commits with its cursor. A round reads at most `marketsPagesPerRound` pages and
 * resumes there next round; a cursor that comes back again (a server that ignored it) ends the
 * pass instead of reading page 1 forever. A finished pass starts over after `marketsEveryMs`;
 * in between, markets seen in fills are looked up one by one.
 */
export async function listMarkets(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options, clock } = ctx;
  const stored = loadState<Partial<MarketsState>>(ingest, STATE_KEYS.markets);
  // A cursor of the old offset listing (no `after_cursor` key) is not resumable: start over.
  const state: MarketsState =
    stored && "after_cursor" in stored
      ? (stored as MarketsState)
      : { after_cursor: null, end_date_min: options.since, completed_at: null, seen: [] };
  if (state.after_cursor === null && state.completed_at !== null) {
    if (clock.now() - state.completed_at < options.marketsEveryMs) return;
    // A new pass: every market still open (ended ones are found by lookups and resolutions).
    state.end_date_min = clock.now();
    state.completed_at = null;
    state.seen = [];
  }
  let page = 0;
  while (page < options.marketsPagesPerRound && !options.signal?.aborted) {
    const where = `Gamma /events/keyset ${state.after_cursor ? `after ${state.after_cursor.slice(0, 24)}` : "first page"}`;
    const answer = await api.eventsKeysetPage(
      state.after_cursor,
      GAMMA_PAGE,
      { endDateMin: state.end_date_min },
      options.signal,
    );
    if (!answer.ok) fail(answer.reason);
    const raws = answer.value.items.flatMap(marketsOfEvent);
    const { markets, bad } = mapEach(raws);
    const next = answer.value.next;
    const repeated = next !== null && (next === state.after_cursor || state.seen.includes(next));
    if (repeated) {
      ctx.log.warn(
        { cursor: next.slice(0, 40) },
        "Gamma keyset cursor came back again: ending this listing pass",
      );
    }
    ctx.transaction(() => {
      for (const b of bad) ctx.quarantine("markets", where, b.reason, b.raw);
      book.store(markets);
      if (next === null || repeated) {
        state.after_cursor = null;
        state.completed_at = clock.now();
        state.seen = [];
      } else {
        state.after_cursor = next;
        // The last few cursors are enough to see one loop back.
        state.seen = [...state.seen.slice(-(SEEN_CURSORS - 1)), next];
      }
      saveState(ingest, STATE_KEYS.markets, state);
    });
    ctx.summary.markets_pages++;
    ctx.pageDone("markets", ++page, raws.length, markets.length);
    if (state.after_cursor === null) break;
  }
}

/** Gamma clamps `limit` to 100: asking for more only hides how many a page really holds. */
const GAMMA_PAGE = 100;
const SEEN_CURSORS = 8;

/**
 * Resolutions: Gamma is asked again about unresolved markets, a batch per round, round robin
 * by id, so every open market is revisited and a round stays bounded.
 */
export async function refreshResolutions(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { api, ingest, options, clock } = ctx;
  const pending = `resolved_outcome IS NULL AND id NOT IN (SELECT market_id FROM market_voids)`;
  // Past their end date first, the longest overdue first: those are the ones about to resolve.
  const overdue = ctx.db.reader.prepare(
    `SELECT id, condition_id FROM markets
     WHERE ${pending} AND end_date IS NOT NULL AND end_date <= ? ORDER BY end_date, id LIMIT ?`,
  ) as Statement<[number, number], { id: number; condition_id: string }>;
  const unresolved = ctx.db.reader.prepare(
    `SELECT id, condition_id FROM markets
     WHERE ${pending} AND id > ? ORDER BY id LIMIT ?`,
  ) as Statement<[number, number], { id: number; condition_id: string }>;
  const state = loadState<ResolutionsState>(ingest, STATE_KEYS.resolutions) ?? { after_id: 0 };
  // A quarter of the batch stays for the round robin, so overdue markets cannot starve it.
  const due = overdue.all(
    clock.now(),
    options.resolutionBatch - Math.floor(options.resolutionBatch / 4),
  );
  const taken = new Set(due.map((m) => m.id));
  // The rest of the batch goes round robin over every pending market, by id.
  const room = options.resolutionBatch - due.length;
  let lastRobin = state.after_id;
  if (room > 0) {
    let robin = unresolved.all(state.after_id, room).filter((m) => !taken.has(m.id));
    if (robin.length < room) {
      robin = robin.concat(
        unresolved
          .all(0, room - robin.length)
          .filter((m) => m.id <= state.after_id && !taken.has(m.id)),
      );
    }
    if (robin.length > 0) lastRobin = robin[robin.length - 1]!.id;
    due.push(...robin);
  }
  let page = 0;
  for (let i = 0; i < due.length && !options.signal?.aborted; i += options.lookupBatch) {
    const batch = due.slice(i, i + options.lookupBatch);
    const wanted = new Set(batch.map((m) => m.condition_id));
    // Only a closed market can have resolved, and a default listing may leave closed ones out.
    const answer = await api.marketsByCondition([...wanted], true, options.signal);
    if (!answer.ok) fail(answer.reason);
    const { markets, bad } = mapEach(answer.value);
    const last = i + options.lookupBatch >= due.length;
    ctx.transaction(() => {
      for (const b of bad) ctx.quarantine("resolutions", "Gamma /markets lookup", b.reason, b.raw);
      book.store(markets.filter((m) => wanted.has(m.market.condition_id)));
      if (last) saveState(ingest, STATE_KEYS.resolutions, { after_id: lastRobin });
    });
    ctx.summary.resolutions_checked += batch.length;
    ctx.pageDone("resolutions", ++page, batch.length, markets.length);
  }
}

/** Maps every record; the ones that do not validate come back apart, to be quarantined. */
export function mapEach(records: unknown[]): {
  markets: GammaMarket[];
  bad: { raw: unknown; reason: string }[];
} {
  const markets: GammaMarket[] = [];
  const bad: { raw: unknown; reason: string }[] = [];
  for (const raw of records) {
    const mapped = mapGammaMarket(raw);
    if (mapped.ok) markets.push(mapped.value);
    else bad.push({ raw, reason: mapped.reason });
  }
  return { markets, bad };
}
