import type { Db } from "../db/open";

export interface ClusterFacts {
  size: number;
  resolvedBets: number;
  wins: number;
  underInvestigation: boolean;
}

/** A transfer as the facts need it: who sent what to whom. */
export interface FundingTransfer {
  from_address: string;
  to_address: string;
  token: string;
}

/**
 * First fundings one scope remembers (about 100 bytes of heap each): every wallet of a 1M-fill
 * import into the large world (400,000); each one forgotten is asked of the database again.
 */
export const MAX_CACHED_WALLETS = 500_000;

export type FundingFacts = ReturnType<ReturnType<typeof createFundingFacts>>;

/**
 * Funding facts for signal detection, read from raw transfers rather than the funding read
 * model: an import or a live ingest fires signals before the next refresh has run, and a fresh
 * insider wallet is exactly one the read model has not seen yet.
 *
 * Answers are cached for one scope (`scope()`): a detection batch, or a whole import file. In
 * a scope nothing but the ingest path writes, and it reports the writes that can change an
 * answer (`transfersStored`, `labelChanged`), so an answer is read once per scope rather than
 * once per batch: an import of 1M fills asked the same wallets' first funding again in every
 * batch of 2,048, and that was a third of its time. The refresh's tables (wallet_stats,
 * investigations) only change between scopes.
 *
 * A scope remembers at most MAX_CACHED_WALLETS first fundings, then starts again: an import
 * meets every wallet it names, and a cache of all of them grew with the world (a third of an
 * import's live heap on the large world).
 */
export function createFundingFacts(db: Db, maxCachedWallets = MAX_CACHED_WALLETS) {
  const w = db.writer;
  // `+?`, not `?`: bound to a plain parameter, this statement (ORDER BY on an index that
  // already gives the order) cost 8.8 µs of CPU a call against 3.9 µs; with a literal in its
  // place, 3.0. The `+` leaves the value, the index and the plan as they were (same SEARCH on
  // transfers_by_to, same rows on every address of the medium world). An import asks it once
  // per new wallet of the file.
  const firstInbound = w.prepare<[string], { sender: string; ts: number }>(
    `SELECT from_address AS sender, ts FROM transfers WHERE to_address = +? AND token = 'USDC'
      ORDER BY ts, id LIMIT 1`,
  );
  const labelled = w.prepare<[string], { kind: string }>(
    "SELECT kind FROM labels WHERE address = ?",
  );
  const fundedBy = w.prepare<[string], { wallet: string }>(
    "SELECT DISTINCT to_address AS wallet FROM transfers WHERE from_address = +? AND token = 'USDC'",
  );
  const record = w.prepare<[string], { resolved: number; wins: number }>(
    "SELECT resolved_bets AS resolved, wins FROM wallet_stats WHERE address = ?",
  );
  const investigationsExist =
    w
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'investigations'")
      .get() !== undefined;
  const memberInvestigated = investigationsExist
    ? w.prepare<[string], { one: number }>(
        `SELECT 1 AS one FROM investigation_wallets iw JOIN investigations i ON i.id = iw.investigation_id
          WHERE iw.address = +? AND i.status = 'open' AND i.active = 1 LIMIT 1`,
      )
    : undefined;
  const clusterInvestigated = investigationsExist
    ? w.prepare<[string], { one: number }>(
        `SELECT 1 AS one FROM investigations WHERE type = 'cluster' AND subject = ? AND status = 'open'
          AND active = 1 LIMIT 1`,
      )
    : undefined;
  const NO_CLUSTER: ClusterFacts = { size: 0, resolvedBets: 0, wins: 0, underInvestigation: false };

  return function scope() {
    const firsts = new Map<string, { sender: string; ts: number } | null>();
    const labels = new Map<string, boolean>();
    const clusters = new Map<string, ClusterFacts>();
    /** Times the caches were cleared: a cluster read across a clearing is not cached. */
    let cleared = 0;
    const first = (wallet: string) => {
      let found = firsts.get(wallet);
      if (found === undefined) {
        // The clusters go with the first fundings: a cached cluster's members must all be in
        // `firsts` for transfersStored to find it.
        if (firsts.size >= maxCachedWallets) {
          firsts.clear();
          clusters.clear();
          labels.clear();
          cleared++;
        }
        found = firstInbound.get(wallet) ?? null;
        firsts.set(wallet, found);
      }
      return found;
    };
    const isLabelled = (address: string) => {
      let found = labels.get(address);
      if (found === undefined) {
        found = labelled.get(address) !== undefined;
        labels.set(address, found);
      }
      return found;
    };
    const funderOf = (wallet: string): string | null => {
      const inbound = first(wallet);
      if (!inbound) return null;
      return isLabelled(inbound.sender) ? null : inbound.sender;
    };
    return {
      firstFundedAt: (wallet: string) => first(wallet)?.ts ?? null,
      cluster(wallet: string): ClusterFacts {
        const funder = funderOf(wallet);
        if (funder === null) return NO_CLUSTER;
        let facts = clusters.get(funder);
        if (!facts) {
          const clearedBefore = cleared;
          const members = fundedBy
            .all(funder)
            .map((r) => r.wallet)
            .filter((m) => first(m)?.sender === funder);
          let resolvedBets = 0;
          let wins = 0;
          let underInvestigation = clusterInvestigated?.get(funder) !== undefined;
          for (const member of members) {
            const r = record.get(member);
            resolvedBets += r?.resolved ?? 0;
            wins += r?.wins ?? 0;
            if (!underInvestigation && memberInvestigated?.get(member)) underInvestigation = true;
          }
          facts = {
            size: members.length >= 2 ? members.length : 0,
            resolvedBets,
            wins,
            underInvestigation,
          };
          if (cleared === clearedBefore) clusters.set(funder, facts);
        }
        return facts;
      },
      /**
       * Transfers stored in this scope. A transfer can change its recipient's first funding,
       * and so the membership of the recipient's old funder's cluster and of its sender's.
       * A cluster is cached only with every candidate member's first funding, so a recipient
       * not in `firsts` is in no cached cluster.
       */
      transfersStored(transfers: readonly FundingTransfer[]) {
        for (const t of transfers) {
          if (t.token !== "USDC") continue;
          const known = firsts.get(t.to_address);
          if (known) clusters.delete(known.sender);
          firsts.delete(t.to_address);
          clusters.delete(t.from_address);
        }
      },
      /** A label stored or changed in this scope: whether a first sender counts as a funder. */
      labelChanged(address: string) {
        labels.delete(address);
      },
    };
  };
}
