import type { Statement } from "../../db/open";
import type { Result } from "../../result";
import type { MarketFacts, Outcome } from "../ingest";
import { fail, type RoundContext } from "./context";
import type { TokenMarket } from "./fills";
import { type GammaMarket, mapGammaMarket } from "./gamma";
import { tokenKey } from "./state";

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
      const wanted = [...new Set(conditionIds)].filter((c) => marketId(c) === undefined);
      if (wanted.length === 0) return Promise.resolve([]);
      return lookup(
        wanted,
        (batch, closed) => api.marketsByCondition(batch, closed, options.signal),
        (m) => [m.market.condition_id],
      );
    },

    missingByToken(tokenIds) {
      const wanted = [...new Set(tokenIds)].filter((t) => tokenMarket(t) === undefined);
      if (wanted.length === 0) return Promise.resolve([]);
      return lookup(
        wanted,
        (batch, closed) => api.marketsByToken(batch, closed, options.signal),
        (m) => m.tokens ?? [],
      );
    },

    store(markets) {
      for (const bad of unmapped.splice(0)) {
        ctx.quarantine("markets", "Gamma /markets lookup", bad.reason, bad.raw);
      }
      for (const m of markets) {
        const before = resolutionOf.get(m.market.condition_id);
        const result = ingest.upsertMarket(m.market);
        if (!result.ok) {
          ctx.quarantine("markets", "storing a Gamma market", result.reason, m.market);
          continue;
        }
        if (result.status === "new") summary.markets_new++;
        else if (result.status === "updated") summary.markets_updated++;
        if (m.market.resolved_outcome !== null && before !== m.market.resolved_outcome) {
          summary.markets_resolved++;
        }
        ids.set(m.market.condition_id, result.id);
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
    },

    forget() {
      ids.clear();
      tokens.clear();
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
