import type { Clock } from "../clock";
import type { Db } from "../db/open";
import type { SignalType } from "./payload";

/** A signal as detection fires it on ingest; the trade and market rows already exist. */
export interface NewSignal {
  type: SignalType;
  wallet: string;
  /** The wallet's type at the moment (docs/methodology.md, "Wallet types"), null when not yet known. */
  walletType?: string | null;
  marketId: number;
  tradeId: number;
  score: number;
  /** USD value of the trade. */
  betValue: number;
  side: "BUY" | "SELL";
  outcome: string;
  price: number;
  explanation: string;
  /** The trade's time, epoch milliseconds. */
  createdAt: number;
}

export interface Enqueued {
  /** The signal's integer id (the payload's alert id). */
  signalId: number;
  /** False when this (type, trade) had fired before; nothing new was written for the signal. */
  created: boolean;
  /** Deliveries written by this call (0 for endpoints that already had this signal). */
  deliveries: number;
}

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * The transactional outbox. `enqueueSignal` writes the signal and one pending delivery per
 * interested endpoint in the caller's transaction (a nested savepoint when the caller has one
 * open), so a signal is never committed without its deliveries, nor the reverse. The unique
 * (signal, endpoint) key makes a repeated call, or a signal replayed by a re-import, harmless.
 *
 * Alerts are for news: a signal whose trade is older than `alertMaxAgeMs` when it is stored (a
 * backfill, an import of history) is recorded, so the signal endpoints list it, but queues no
 * delivery (docs/webhooks.md, "Old trades alert nobody").
 */
export function createOutbox(deps: {
  db: Db;
  clock: Clock;
  alertMaxAgeMs: number;
  onEnqueued?: () => void;
}) {
  const { db, clock } = deps;
  const w = db.writer;
  const insertSignal = w.prepare<
    Omit<NewSignal, "walletType" | "wallet"> & { wallet: string; walletType: string | null }
  >(
    `INSERT INTO signals (type, wallet, wallet_type, market_id, trade_id, score, bet_value, side,
                          outcome, price, explanation, created_at)
     VALUES (@type, @wallet, @walletType, @marketId, @tradeId, @score, @betValue, @side,
             @outcome, @price, @explanation, @createdAt)
     ON CONFLICT (type, trade_id) DO NOTHING`,
  );
  const existingSignal = w.prepare<[string, number], { id: number }>(
    "SELECT id FROM signals WHERE type = ? AND trade_id = ?",
  );
  const newDeliveryId = "'dlv_' || lower(hex(randomblob(12)))";
  // API channel: every live endpoint whose filters the signal passes (an absent filter passes).
  const toApiEndpoints = w.prepare<{ signal: number; now: number }>(
    `INSERT INTO deliveries (id, signal_id, endpoint_id, event, status, attempts, next_attempt_at,
                             created_at)
     SELECT ${newDeliveryId}, s.id, e.id, 'signal.' || s.type, 'pending', 0, @now, @now
       FROM signals s
       JOIN markets m ON m.id = s.market_id
       JOIN webhook_endpoints e ON e.channel = 'api' AND e.deleted_at IS NULL
      WHERE s.id = +@signal
        AND (e.min_score IS NULL OR e.min_score <= s.score)
        AND (e.score_type IS NULL OR e.score_type = s.type)
        AND (e.category IS NULL OR e.category = m.category COLLATE NOCASE)
     ON CONFLICT (signal_id, endpoint_id) DO NOTHING`,
  );
  // Dashboard channel: endpoints of accounts following the wallet. An account following it
  // both directly and through lists gets one alert, attributed to the direct follow, else to
  // the first list by slug; the sort key's first character ranks the two kinds.
  const toFollowers = w.prepare<{ signal: number; now: number }>(
    `WITH s AS (
       SELECT s.id, s.wallet, s.type, s.score, m.category
         FROM signals s JOIN markets m ON m.id = s.market_id WHERE s.id = +@signal
     ), via AS (
       SELECT account_id, substr(min(rank_via), 2) AS followed_via FROM (
         SELECT f.account_id, '0wallet' AS rank_via
           FROM follows f JOIN s ON f.wallet = s.wallet
         UNION ALL
         SELECT lf.account_id, '1list:' || l.slug
           FROM list_members lm
           JOIN s ON lm.wallet = s.wallet
           JOIN lists l ON l.id = lm.list_id
           JOIN list_follows lf ON lf.list_id = l.id
       ) GROUP BY account_id
     )
     INSERT INTO deliveries (id, signal_id, endpoint_id, event, followed_via, status, attempts,
                             next_attempt_at, created_at)
     SELECT ${newDeliveryId}, s.id, e.id, 'alert.followed_wallet', via.followed_via, 'pending', 0,
            @now, @now
       FROM via
       JOIN s
       JOIN webhook_endpoints e
         ON e.account_id = via.account_id AND e.channel = 'dashboard' AND e.deleted_at IS NULL
      WHERE (e.min_score IS NULL OR e.min_score <= s.score)
        AND (e.score_type IS NULL OR e.score_type = s.type)
        AND (e.category IS NULL OR e.category = s.category COLLATE NOCASE)
     ON CONFLICT (signal_id, endpoint_id) DO NOTHING`,
  );

  const enqueue = w.transaction((signal: NewSignal): Enqueued => {
    const inserted = insertSignal.run({
      ...signal,
      wallet: signal.wallet.toLowerCase(),
      walletType: signal.walletType ?? null,
    });
    const created = inserted.changes > 0;
    const signalId = created
      ? Number(inserted.lastInsertRowid)
      : existingSignal.get(signal.type, signal.tradeId)!.id;
    const now = clock.now();
    if (now - signal.createdAt > deps.alertMaxAgeMs) return { signalId, created, deliveries: 0 };
    const deliveries =
      toApiEndpoints.run({ signal: signalId, now }).changes +
      toFollowers.run({ signal: signalId, now }).changes;
    return { signalId, created, deliveries };
  });

  return {
    /**
     * Records a fired signal and its deliveries. Call it inside the ingest transaction; the
     * drainer is nudged only after the outermost transaction has ended (committed or not), so
     * it never looks for rows that are not visible yet.
     */
    enqueueSignal(signal: NewSignal): Enqueued {
      const result = enqueue(signal);
      if (result.deliveries > 0 && deps.onEnqueued) {
        const nudge = deps.onEnqueued;
        setImmediate(nudge);
      }
      return result;
    },
  };
}
