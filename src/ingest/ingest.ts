import type { Clock } from "../clock";
import type { Db, Statement } from "../db/open";
import type { Outcome, TradeSide } from "../domain";
import type { DeferredFillIndexes } from "./deferred-fill-indexes";
import { hashBytes, kindOf, units } from "./fill-codec";

/** An amount as stored: millionths (INTEGER) or the value itself (REAL). */
type Num = bigint | number;

/**
 * The one write path for market data. Every source (the JSONL importer, the fixture seeder, the
 * live Polymarket ingester) stores rows through these functions, so new trades always mark what
 * they touch as dirty for the analytics refresh and always reach the `onNewTrades` hook (signal
 * detection and the webhook outbox), in the caller's transaction.
 */

export type { Outcome };

export interface NewTrade {
  tx_hash: string;
  log_index: number;
  wallet: string;
  market_id: number;
  outcome: Outcome;
  side: TradeSide;
  price: number;
  size: number;
  usd_value: number;
  /** Epoch milliseconds. */
  ts: number;
}

/** A stored trade: the row of `trades`. */
export interface Trade extends NewTrade {
  id: number;
}

export interface NewTransfer {
  tx_hash: string;
  log_index: number;
  from_address: string;
  to_address: string;
  token: "USDC" | "POL";
  amount: number;
  ts: number;
}

export interface Transfer extends NewTransfer {
  id: number;
}

export interface MarketFacts {
  slug: string;
  title: string | null;
  category: string | null;
  condition_id: string;
  end_date: number | null;
  created_at: number | null;
  resolved_outcome: Outcome | null;
  resolved_at: number | null;
}

export interface WalletFacts {
  address: string;
  platform_name: string | null;
  platform_pnl: number | null;
  platform_pnl_as_of: number | null;
  created_at: number | null;
}

export interface Label {
  address: string;
  kind: "exchange" | "platform" | "proxy_factory";
  name: string;
}

/** What storing a keyed row did: inserted it, changed it, or found it already as given. */
export type RowStatus = "new" | "updated" | "present";

export type MarketUpsert =
  | { ok: true; id: number; status: RowStatus }
  | { ok: false; reason: string };

export interface IngestHooks {
  /**
   * Called with the trades an `insertTrades` call actually inserted (never ones already
   * stored), inside the same transaction: whatever the hook writes commits or rolls back with
   * them. It must not have effects outside the database.
   */
  onNewTrades?(trades: readonly Trade[]): void;
  /**
   * Called with the fills an `insertTrades` call refused because their market was compacted
   * (fill retention, src/refresh/retention.ts), once per market, with the reason to report.
   */
  onRefusedTrades?(trades: readonly NewTrade[], reason: string): void;
  /** Called with the transfers an `insertTransfers` call stored, in the same transaction. */
  onNewTransfers?(transfers: readonly Transfer[]): void;
  /** Called when a label is stored or changed, in the same transaction. */
  onLabelChanged?(address: string): void;
  /**
   * Hooks for one transaction that makes many ingest calls (an import file). They may keep
   * what they read from one call to the next, because the ingest path reports each of its
   * writes that could change it (the three calls above). Use them only inside that transaction,
   * with nothing but the ingest path writing in it.
   */
  scope?(): IngestHooks;
}

export interface Ingest {
  /**
   * Stores the fills not stored yet (keyed by tx_hash + log_index) and returns those, with
   * their ids, in input order; marks their wallets and markets dirty; calls `onNewTrades`.
   * Fills of a compacted market are not stored: they go to `onRefusedTrades`.
   */
  insertTrades(rows: readonly NewTrade[]): Trade[];
  /** Why fills of this market are refused (it was compacted), or undefined when they are not. */
  compactedReason(marketId: number): string | undefined;
  /** Stores the transfers not stored yet and returns those, with ids; marks both ends dirty. */
  insertTransfers(rows: readonly NewTransfer[]): Transfer[];
  /**
   * Inserts or updates a market by condition_id. Given fields overwrite stored ones; null
   * fields keep what is stored. Fails when the slug belongs to another market.
   */
  upsertMarket(market: MarketFacts): MarketUpsert;
  /** Records a market's outcome; marks the market and everyone who traded it dirty. */
  resolveMarket(marketId: number, outcome: Outcome, resolvedAt: number): RowStatus;
  upsertWallet(wallet: WalletFacts): RowStatus;
  upsertLabel(label: Label): RowStatus;
  marketIdOf(conditionId: string): number | undefined;
  /** The id of an already stored fill, or undefined. */
  tradeIdOf(txHash: string, logIndex: number): number | undefined;
  transferIdOf(txHash: string, logIndex: number): number | undefined;
  /** Ingesters' cursors between runs. */
  getState(key: string): string | undefined;
  setState(key: string, value: string): void;
}

interface MarketRow extends MarketFacts {
  id: number;
}

/**
 * Statements are prepared once here. Every write method must run inside a transaction the
 * caller opened (one `db.writer.transaction`, or the importer's file transaction): that is what
 * makes a batch, its dirty marks and the hook's writes one unit.
 */
export interface IngestOptions {
  /**
   * The instance is used inside one transaction only (an import file): it may remember wallet
   * ids and the dirty marks it already wrote, which a rolled-back transaction would make wrong
   * for a longer-lived instance.
   */
  oneTransaction?: boolean;
  /**
   * `fills_by_tx` is not built yet (an import into an empty store): while `active`, the
   * duplicate check asks it, and each stored fill is added to it.
   */
  deferred?: DeferredFillIndexes | null;
}

/** The reason given for a fill of a compacted market (docs/operations.md, "Fill retention"). */
export function compactedMarketMessage(slug: string): string {
  return `market "${slug}" was compacted by SMARTMONEY_FILL_RETENTION: fills of markets resolved before the retention window are no longer stored`;
}

/** Remembered wallet ids and dirty marks, per one-transaction instance; dropped past this. */
const MAX_REMEMBERED = 500_000;

/**
 * Marks a market whose outcome or facts changed (bound to its id): the next refresh recomputes
 * every bet in it, not just the new fills' (the ingest path's, and the bulk path's frozen
 * markets, src/ingest/past-markets.ts).
 */
export const MARK_MARKET_CHANGED =
  "INSERT INTO dirty_markets (market_id, changed) VALUES (?, 1) ON CONFLICT DO UPDATE SET changed = 1";

/**
 * A stored fill by its key, (tx_hash, log_index) with the hash as its 32 bytes: through
 * fills_by_tx's key, the hash's first and last 4 bytes (sql/0030), then the whole hash. Exported
 * for the test that holds it to that index. Bound as (hash, hash, log_index, hash).
 */
export const FILL_ID_BY_KEY_SQL = `SELECT id FROM fills
  WHERE substr(tx_hash, 1, 4) = substr(?, 1, 4) AND substr(tx_hash, 29, 4) = substr(?, 29, 4)
    AND log_index = ? AND tx_hash = ?`;

export function createIngest(
  db: Db,
  clock: Clock,
  hooks: IngestHooks = {},
  options: IngestOptions = {},
): Ingest {
  const w = db.writer;
  // In one transaction: a bulk import meets the same wallets in batch after batch.
  const knownWalletIds = options.oneTransaction ? new Map<string, number>() : null;
  const markedWallets = options.oneTransaction ? new Set<string>() : null;
  const markedMarkets = options.oneTransaction ? new Set<number>() : null;
  // Whether a market is compacted changes only in a compaction's transaction, never inside this
  // one: a market's answer holds for the whole import (a query a fill, 7% of its time, before).
  const knownRefusals = options.oneTransaction ? new Map<number, string | null>() : null;
  /** The keys not marked dirty yet in this transaction (all of them without a memory). */
  const unmarked = <K>(keys: Iterable<K>, marked: Set<K> | null): K[] => {
    if (!marked) return [...keys];
    if (marked.size > MAX_REMEMBERED) marked.clear();
    const fresh: K[] = [];
    for (const key of keys) {
      if (marked.has(key)) continue;
      marked.add(key);
      fresh.push(key);
    }
    return fresh;
  };
  // Fills go straight into the compact table (sql/0010); the `trades` view is for readers.
  // (tx_hash, log_index) is unique by the lookup before the insert, not by a unique index:
  // fills_by_tx keys on the hash's first 4 bytes (sql/0026), not the whole hash. A
  // lookup and then a plain insert, not one `INSERT … SELECT … WHERE NOT EXISTS`: a SELECT that
  // reads the table it inserts into is first copied into a temporary table, on every call, and
  // that cost more than the second call (measured in docs/architecture.md, "The bulk path").
  // The id is null, which SQLite makes max(id) + 1, but for the first fill stored after a
  // compaction deleted the fills with the highest ids: no fill takes an id below fill_id_floor
  // (sql/0040), and SQLite's max(id) + 1 goes on from the floor's.
  const insertFill = w.prepare<
    [number | null, Buffer, number, number, number, number, Num, Num, Num, number]
  >(
    `INSERT INTO fills (id, tx_hash, log_index, wallet_id, market_id, kind, price, size, usd_value, ts)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const floorAbove = w
    .prepare(
      "SELECT next_id FROM fill_id_floor WHERE next_id > (SELECT coalesce(max(id), 0) + 1 FROM fills)",
    )
    .pluck() as Statement<[], number>;
  const fillIdByKey = w.prepare(FILL_ID_BY_KEY_SQL).pluck() as Statement<
    [Buffer, Buffer, number, Buffer],
    number
  >;
  const deferred = options.deferred ?? null;
  const storedFillId = (hash: Buffer, logIndex: number): number | undefined =>
    deferred?.active ? deferred.find(hash, logIndex) : fillIdByKey.get(hash, hash, logIndex, hash);
  const addWallet = w.prepare("INSERT INTO wallet_ids (address) VALUES (?)");
  const walletIdOf = w.prepare("SELECT id FROM wallet_ids WHERE address = ?").pluck() as Statement<
    [string],
    number
  >;
  const insertTransfer = w.prepare(
    `INSERT INTO transfers (tx_hash, log_index, from_address, to_address, token, amount, ts)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tx_hash, log_index) DO NOTHING`,
  );
  const transferId = w
    .prepare("SELECT id FROM transfers WHERE tx_hash = ? AND log_index = ?")
    .pluck() as Statement<[string, number], number>;
  // Dirty marks go in one statement per batch: the distinct keys travel as a JSON array, so a
  // batch of thousands of trades costs one call, not one per wallet.
  const markWallets = w.prepare(
    "INSERT INTO dirty_wallets (address) SELECT value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING",
  );
  const markMarkets = w.prepare(
    "INSERT INTO dirty_markets (market_id) SELECT value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING",
  );
  const markMarketChanged = w.prepare(MARK_MARKET_CHANGED);
  const markWallet = w.prepare(
    "INSERT INTO dirty_wallets (address) VALUES (?) ON CONFLICT DO NOTHING",
  );
  const marketByCondition = w.prepare("SELECT * FROM markets WHERE condition_id = ?") as Statement<
    [string],
    MarketRow
  >;
  const marketIdBySlug = w.prepare("SELECT id FROM markets WHERE slug = ?").pluck() as Statement<
    [string],
    number
  >;
  const insertMarket = w.prepare(
    `INSERT INTO markets (slug, title, category, condition_id, end_date, created_at,
       resolved_outcome, resolved_at)
     VALUES (@slug, @title, @category, @condition_id, @end_date, @created_at,
       @resolved_outcome, @resolved_at)`,
  );
  const updateMarket = w.prepare(
    `UPDATE markets SET slug = @slug, title = @title, category = @category,
       end_date = @end_date, created_at = @created_at WHERE id = @id`,
  );
  const setResolution = w.prepare(
    "UPDATE markets SET resolved_outcome = ?, resolved_at = ? WHERE id = ?",
  );
  const resolutionOf = w.prepare(
    "SELECT resolved_outcome AS outcome, resolved_at AS at FROM markets WHERE id = ?",
  ) as Statement<[number], { outcome: Outcome | null; at: number | null }>;
  const walletByAddress = w.prepare("SELECT * FROM wallets WHERE address = ?") as Statement<
    [string],
    WalletFacts
  >;
  const writeWallet = w.prepare(
    `INSERT INTO wallets (address, platform_name, platform_pnl, platform_pnl_as_of, created_at)
     VALUES (@address, @platform_name, @platform_pnl, @platform_pnl_as_of, @created_at)
     ON CONFLICT (address) DO UPDATE SET platform_name = excluded.platform_name,
       platform_pnl = excluded.platform_pnl, platform_pnl_as_of = excluded.platform_pnl_as_of,
       created_at = excluded.created_at`,
  );
  const labelByAddress = w.prepare("SELECT * FROM labels WHERE address = ?") as Statement<
    [string],
    Label
  >;
  const writeLabel = w.prepare(
    `INSERT INTO labels (address, kind, name) VALUES (@address, @kind, @name)
     ON CONFLICT (address) DO UPDATE SET kind = excluded.kind, name = excluded.name`,
  );
  const stateGet = w.prepare("SELECT value FROM ingest_state WHERE key = ?").pluck() as Statement<
    [string],
    string
  >;
  const stateSet = w.prepare(
    `INSERT INTO ingest_state (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );

  const compactedSlug = w
    .prepare("SELECT slug FROM markets WHERE id = ? AND compacted_at IS NOT NULL")
    .pluck() as Statement<[number], string>;
  const compactedReason = (marketId: number) => {
    const slug = compactedSlug.get(marketId);
    return slug === undefined ? undefined : compactedMarketMessage(slug);
  };

  const requireTransaction = () => {
    if (!w.inTransaction) throw new Error("ingest writes must run inside the caller's transaction");
  };

  const resolve = (id: number, outcome: Outcome, resolvedAt: number): RowStatus => {
    const current = resolutionOf.get(id);
    if (current?.outcome === outcome && current.at === resolvedAt) return "present";
    setResolution.run(outcome, resolvedAt, id);
    // Every bet in the market is judged again by the refresh (dirty_markets.changed).
    markMarketChanged.run(id);
    return current?.outcome === null ? "new" : "updated";
  };

  return {
    insertTrades(rows) {
      requireTransaction();
      const inserted: Trade[] = [];
      const markets = new Set<number>();
      // Wallet ids for this batch, new addresses added in sorted order (one pass along the
      // address index instead of a random walk).
      const walletIds = new Map<string, number>();
      for (const address of [...new Set(rows.map((r) => r.wallet))].sort()) {
        if (address.length !== 42)
          throw new Error(`wallet "${address}" is not a 42-character address`);
        let id = knownWalletIds?.get(address) ?? walletIdOf.get(address);
        if (id === undefined) id = Number(addWallet.run(address).lastInsertRowid);
        walletIds.set(address, id);
        if (knownWalletIds) {
          if (knownWalletIds.size > MAX_REMEMBERED) knownWalletIds.clear();
          knownWalletIds.set(address, id);
        }
      }
      const wallets = new Set<string>();
      /** Per market: the reason its fills are refused, null when they are not. */
      const refusal = knownRefusals ?? new Map<number, string | null>();
      if (refusal.size > MAX_REMEMBERED) refusal.clear();
      const refused = new Map<number, NewTrade[]>();
      let floor = floorAbove.get();
      for (const r of rows) {
        const hash = hashBytes(r.tx_hash);
        if (storedFillId(hash, r.log_index) !== undefined) continue;
        let reason = refusal.get(r.market_id);
        if (reason === undefined) {
          reason = compactedReason(r.market_id) ?? null;
          refusal.set(r.market_id, reason);
        }
        if (reason !== null) {
          const held = refused.get(r.market_id);
          if (held === undefined) refused.set(r.market_id, [r]);
          else held.push(r);
          continue;
        }
        const info = insertFill.run(
          floor ?? null,
          hash,
          r.log_index,
          walletIds.get(r.wallet)!,
          r.market_id,
          kindOf(r.outcome, r.side),
          units(r.price),
          units(r.size),
          units(r.usd_value),
          r.ts,
        );
        floor = undefined;
        const id = Number(info.lastInsertRowid);
        deferred?.add(hash, r.log_index, id);
        inserted.push({
          id,
          tx_hash: r.tx_hash,
          log_index: r.log_index,
          wallet: r.wallet,
          market_id: r.market_id,
          outcome: r.outcome,
          side: r.side,
          price: r.price,
          size: r.size,
          usd_value: r.usd_value,
          ts: r.ts,
        });
        wallets.add(r.wallet);
        markets.add(r.market_id);
      }
      if (inserted.length > 0) {
        const newWallets = unmarked(wallets, markedWallets);
        if (newWallets.length > 0) markWallets.run(JSON.stringify(newWallets));
        const newMarkets = unmarked(markets, markedMarkets);
        if (newMarkets.length > 0) markMarkets.run(JSON.stringify(newMarkets));
        hooks.onNewTrades?.(inserted);
      }
      for (const [marketId, trades] of refused) {
        hooks.onRefusedTrades?.(trades, refusal.get(marketId)!);
      }
      return inserted;
    },

    compactedReason,

    insertTransfers(rows) {
      requireTransaction();
      const inserted: Transfer[] = [];
      const touched = new Set<string>();
      for (const r of rows) {
        const info = insertTransfer.run(
          r.tx_hash,
          r.log_index,
          r.from_address,
          r.to_address,
          r.token,
          r.amount,
          r.ts,
        );
        if (info.changes === 0) continue;
        inserted.push({ id: Number(info.lastInsertRowid), ...r });
        touched.add(r.from_address);
        touched.add(r.to_address);
      }
      // Funding links feed the connection and cluster analytics of both ends.
      if (touched.size > 0) markWallets.run(JSON.stringify([...touched]));
      if (inserted.length > 0) hooks.onNewTransfers?.(inserted);
      return inserted;
    },

    upsertMarket(m) {
      requireTransaction();
      const slugOwner = marketIdBySlug.get(m.slug);
      const current = marketByCondition.get(m.condition_id);
      if (slugOwner !== undefined && slugOwner !== current?.id) {
        return { ok: false, reason: `slug "${m.slug}" already belongs to another market` };
      }
      if (!current) {
        const id = Number(insertMarket.run(m).lastInsertRowid);
        markMarketChanged.run(id);
        return { ok: true, id, status: "new" };
      }
      const next = {
        id: current.id,
        slug: m.slug,
        title: m.title ?? current.title,
        category: m.category ?? current.category,
        end_date: m.end_date ?? current.end_date,
        created_at: m.created_at ?? current.created_at,
      };
      let status: RowStatus = "present";
      if (
        next.slug !== current.slug ||
        next.title !== current.title ||
        next.category !== current.category ||
        next.end_date !== current.end_date ||
        next.created_at !== current.created_at
      ) {
        updateMarket.run(next);
        markMarketChanged.run(current.id);
        status = "updated";
      }
      if (m.resolved_outcome !== null && m.resolved_at !== null) {
        if (resolve(current.id, m.resolved_outcome, m.resolved_at) !== "present") {
          status = "updated";
        }
      }
      return { ok: true, id: current.id, status };
    },

    resolveMarket(marketId, outcome, resolvedAt) {
      requireTransaction();
      return resolve(marketId, outcome, resolvedAt);
    },

    upsertWallet(wallet) {
      requireTransaction();
      const current = walletByAddress.get(wallet.address);
      const next: WalletFacts = {
        address: wallet.address,
        platform_name: wallet.platform_name ?? current?.platform_name ?? null,
        platform_pnl: wallet.platform_pnl ?? current?.platform_pnl ?? null,
        platform_pnl_as_of: wallet.platform_pnl_as_of ?? current?.platform_pnl_as_of ?? null,
        created_at: wallet.created_at ?? current?.created_at ?? null,
      };
      if (
        current &&
        current.platform_name === next.platform_name &&
        current.platform_pnl === next.platform_pnl &&
        current.platform_pnl_as_of === next.platform_pnl_as_of &&
        current.created_at === next.created_at
      ) {
        return "present";
      }
      writeWallet.run(next);
      // The platform PnL figure feeds the PnL leaderboard's routing.
      markWallet.run(wallet.address);
      return current ? "updated" : "new";
    },

    upsertLabel(label) {
      requireTransaction();
      const current = labelByAddress.get(label.address);
      if (current && current.kind === label.kind && current.name === label.name) return "present";
      writeLabel.run(label);
      markWallet.run(label.address);
      hooks.onLabelChanged?.(label.address);
      return current ? "updated" : "new";
    },

    marketIdOf: (conditionId) => marketByCondition.get(conditionId)?.id,
    tradeIdOf: (txHash, logIndex) => storedFillId(hashBytes(txHash), logIndex),
    transferIdOf: (txHash, logIndex) => transferId.get(txHash, logIndex),
    getState: (key) => stateGet.get(key),
    setState(key, value) {
      stateSet.run(key, value, clock.now());
    },
  };
}
