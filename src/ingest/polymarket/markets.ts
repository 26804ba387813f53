import type { Statement } from "../../db/open";
import type { Result } from "../../result";
import type { MarketFacts, Outcome } from "../ingest";
import { fail, type RoundContext } from "./context";
import type { TokenMarket } from "./fills";
import { type GammaMarket, mapGammaMarket } from "./gamma";
import {
  loadState,
  type MarketWaitsState,
  type NewestMarketState,
  STATE_KEYS,
  saveState,
  tokenKey,
} from "./state";

/**
 * The markets a round needs: looked up in the database, else fetched from Gamma (in batches,
 * first with Gamma's default filter, then among closed markets), then stored inside the page's
 * transaction. Fetching happens before the transaction (it awaits); storing inside it.
 */
export interface MarketBook {
  /** Gamma markets for the condition ids not stored yet (fetched, not stored). */
  missingByCondition(conditionIds: Iterable<string>): Promise<GammaMarket[]>;
  /** Gamma markets for the outcome tokens not mapped yet (fetched, not stored). */
  missingByToken(tokenIds: Iterable<string>): Promise<GammaMarket[]>;
  /** Inside the caller's transaction. */
  store(markets: readonly GammaMarket[]): void;
  /** Inside the caller's transaction: a market known only from a trade record's own fields. */
  storeFacts(facts: MarketFacts): number;
  marketId(conditionId: string): number | undefined;
  tokenMarket(tokenId: string): TokenMarket | undefined;
  /**
   * Gamma markets for the markets fills waited for and Gamma did not know yet (fetched, not
   * stored): asked again every round until they come.
   */
  awaited(): Promise<GammaMarket[]>;
  /**
   * After the caller's transaction rolled back (a full disk, say): the ids and tokens it learnt
   * in it may name rows that were never stored, so they are read from the database again.
   */
  forget(): void;
}

export function createMarketBook(ctx: RoundContext, keepTokens: boolean): MarketBook {
  const { ingest, api, options, summary } = ctx;
  const ids = new Map<string, number>();
  // Read on the writer, inside the page's transaction, to count resolutions as they land.
  const resolutionOf = ctx.db.writer
    .prepare("SELECT resolved_outcome FROM markets WHERE condition_id = ?")
    .pluck() as Statement<[string], Outcome | null>;
  const tokens = new Map<string, TokenMarket>();
  // Records a lookup could not map: quarantined by the next store, inside its transaction.
  const unmapped: { raw: unknown; reason: string }[] = [];
  // Fills that arrived for a market not stored yet, by the key they named (condition id or
  // token): settled by the next store, inside its transaction, into the persistent waits.
  const arrived = new Map<string, { since: number; fills: number }>();

  /** Notes the fills whose key is among the markets about to be looked up. */
  const noteArrivals = (keys: readonly string[], wanted: ReadonlySet<string>) => {
    const at = ctx.clock.now();
    for (const key of keys) {
      if (!wanted.has(key)) continue;
      const entry = arrived.get(key) ?? { since: at, fills: 0 };
      entry.fills++;
      arrived.set(key, entry);
    }
  };

  /** Inside the store's transaction: the newest market Gamma created that we stored. */
  const noteNewest = (m: GammaMarket["market"]) => {
    const known = loadState<NewestMarketState>(ingest, STATE_KEYS.newestMarket);
    if (m.created_at === null || (known && known.created_at >= m.created_at)) return;
    saveState(ingest, STATE_KEYS.newestMarket, {
      slug: m.slug,
      created_at: m.created_at,
      discovered_at: ctx.clock.now(),
    } satisfies NewestMarketState);
  };

  /**
   * Inside the store's transaction: the waits its markets end (fills of this batch and earlier
   * ones still awaited), and the rest carried over as awaited. Read and written in the one
   * transaction, so the stream and the rounds (two writers) never lose each other's counts.
   */
  const settleWaits = (stored: readonly GammaMarket[]) => {
    const waits = loadState<MarketWaitsState>(ingest, STATE_KEYS.marketWaits);
    if (arrived.size === 0 && (!waits || Object.keys(waits.pending).length === 0)) return;
    const state: MarketWaitsState = waits ?? { fills: 0, longest_ms: 0, pending: {} };
    const now = ctx.clock.now();
    for (const [key, entry] of arrived) {
      // A market already awaited keeps its first count: the chain reads its last blocks again
      // each round, and the same fills must not count twice.
      if (state.pending[key]) continue;
      state.fills += entry.fills;
      state.pending[key] = entry;
    }
    arrived.clear();
    for (const m of stored) {
      for (const key of [m.market.condition_id, ...(m.tokens ?? [])]) {
        const entry = state.pending[key];
        if (!entry) continue;
        state.longest_ms = Math.max(state.longest_ms, now - entry.since);
        delete state.pending[key];
      }
    }
    // Keys Gamma never answers for are given up after a day, or the oldest beyond the cap.
    const newestFirst = Object.entries(state.pending).sort(([, a], [, b]) => b.since - a.since);
    newestFirst.forEach(([key, entry], rank) => {
      if (now - entry.since > AWAIT_GIVE_UP_MS || rank >= AWAITED_MAX) {
        state.longest_ms = Math.max(state.longest_ms, now - entry.since);
        delete state.pending[key];
      }
    });
    saveState(ingest, STATE_KEYS.marketWaits, state);
  };

  const marketId = (conditionId: string) => {
    let id = ids.get(conditionId);
    if (id === undefined) {
      id = ingest.marketIdOf(conditionId);
      if (id !== undefined) ids.set(conditionId, id);
    }
    return id;
  };

  const tokenMarket = (tokenId: string): TokenMarket | undefined => {
    const cached = tokens.get(tokenId);
    if (cached) return cached;
    const stored = ingest.getState(tokenKey(tokenId));
    if (stored === undefined) return undefined;
    const [conditionId = "", index] = stored.split(":");
    const id = marketId(conditionId);
    if (id === undefined) return undefined;
    const found: TokenMarket = { market_id: id, outcome: index === "0" ? "YES" : "NO" };
    tokens.set(tokenId, found);
    return found;
  };

  /** Batched lookups of the wanted keys; `keysOf` says which keys a fetched market answers. */
  async function lookup(
    wanted: string[],
    fetch: (batch: string[], closed: boolean | null) => Promise<Result<unknown[]>>,
    keysOf: (m: GammaMarket) => string[],
  ): Promise<GammaMarket[]> {
    const found = new Map<string, GammaMarket>();
    for (const closed of [null, true]) {
      const missing = wanted.filter((key) => !found.has(key));
      for (let i = 0; i < missing.length; i += options.lookupBatch) {
        const batch = missing.slice(i, i + options.lookupBatch);
        const answer = await fetch(batch, closed);
        if (!answer.ok) fail(answer.reason);
        const asked = new Set(batch);
        for (const raw of answer.value) {
          const mapped = mapGammaMarket(raw);
          if (!mapped.ok) {
            unmapped.push({ raw, reason: mapped.reason });
            continue;
          }
          // A server that ignored the filter must not make us store unrelated markets.
          for (const key of keysOf(mapped.value)) if (asked.has(key)) found.set(key, mapped.value);
        }
      }
    }
    return [...new Set(found.values())];
  }

  return {
    marketId,
    tokenMarket,

    missingByCondition(conditionIds) {
      const keys = [...conditionIds];
      const wanted = [...new Set(keys)].filter((c) => marketId(c) === undefined);
      if (wanted.length === 0) return Promise.resolve([]);
      noteArrivals(keys, new Set(wanted));
      return lookup(
        wanted,
        (batch, closed) => api.marketsByCondition(batch, closed, options.signal),
        (m) => [m.market.condition_id],
      );
    },

    missingByToken(tokenIds) {
      const keys = [...tokenIds];
      const wanted = [...new Set(keys)].filter((t) => tokenMarket(t) === undefined);
      if (wanted.length === 0) return Promise.resolve([]);
      noteArrivals(keys, new Set(wanted));
      return lookup(
        wanted,
        (batch, closed) => api.marketsByToken(batch, closed, options.signal),
        (m) => m.tokens ?? [],
      );
    },

    async awaited() {
      const waits = loadState<MarketWaitsState>(ingest, STATE_KEYS.marketWaits);
      const keys = Object.keys(waits?.pending ?? {});
      if (keys.length === 0) return [];
      // Condition ids are 0x-prefixed hashes; outcome token ids are decimal.
      const conditions = keys.filter((k) => k.startsWith("0x"));
      const tokenIds = keys.filter((k) => !k.startsWith("0x"));
      const byCondition = await lookup(
        conditions,
        (batch, closed) => api.marketsByCondition(batch, closed, options.signal),
        (m) => [m.market.condition_id],
      );
      const byToken = await lookup(
        tokenIds,
        (batch, closed) => api.marketsByToken(batch, closed, options.signal),
        (m) => m.tokens ?? [],
      );
      return [...byCondition, ...byToken];
    },

    store(markets) {
      for (const bad of unmapped.splice(0)) {
        ctx.quarantine("markets", "Gamma /markets lookup", bad.reason, bad.raw);
      }
      const stored: GammaMarket[] = [];
      let newest: GammaMarket["market"] | null = null;
      for (const m of markets) {
        const before = resolutionOf.get(m.market.condition_id);
        const result = ingest.upsertMarket(m.market);
        if (!result.ok) {
          ctx.quarantine("markets", "storing a Gamma market", result.reason, m.market);
          continue;
        }
        if (result.status === "new") {
          summary.markets_new++;
          if (m.market.created_at !== null && m.market.created_at > (newest?.created_at ?? -1)) {
            newest = m.market;
          }
        } else if (result.status === "updated") summary.markets_updated++;
        if (m.market.resolved_outcome !== null && before !== m.market.resolved_outcome) {
          summary.markets_resolved++;
        }
        ids.set(m.market.condition_id, result.id);
        stored.push(m);
        ctx.ledger.setOutcomeNames(result.id, m.outcomeNames[0], m.outcomeNames[1]);
        if (m.voided && ctx.ledger.setVoid(result.id, m.voided.reason, m.voided.at)) {
          summary.markets_voided++;
        }
        if (m.tokens) {
          m.tokens.forEach((token, index) => {
            const outcome: Outcome = index === 0 ? "YES" : "NO";
            tokens.set(token, { market_id: result.id, outcome });
            if (keepTokens) ingest.setState(tokenKey(token), `${m.market.condition_id}:${index}`);
          });
        }
      }
      settleWaits(stored);
      if (newest) noteNewest(newest);
    },

    forget() {
      ids.clear();
      tokens.clear();
      arrived.clear();
    },

    storeFacts(facts) {
      const result = ingest.upsertMarket(facts);
      if (!result.ok) fail(`market ${facts.condition_id}: ${result.reason}`);
      if (result.status === "new") summary.markets_new++;
      ids.set(facts.condition_id, result.id);
      return result.id;
    },
  };
}

/** An awaited market Gamma has not answered for in a day is given up (its fills stay). */
const AWAIT_GIVE_UP_MS = 24 * 3_600_000;
/** At most this many markets are awaited at once: beyond it, the wait is not worth the lookups. */
const AWAITED_MAX = 1_000;
