/**
 * What the full and the incremental refresh share: how fills are read, the context a wallet's
 * model needs, wallet standings for the market models, and stored bets as rows.
 */
import type { Db } from "../db/open";
import { type Outcome, type TradeSide, WHALE_VOLUME_USD } from "../domain";
import { decodedSql, outcomeOfKind, sideOfKind } from "../ingest/fill-codec";
import type { WalletStanding } from "./market-model";
import { type PriceLookup, seekLookup } from "./prices";
import type {
  MarketInfo,
  ModelBetRow,
  TradeFill,
  WalletBetRow,
  WalletContext,
} from "./wallet-model";

/** A fill as the refresh reads it: address, market, outcome, side, price, size, USD, time, id, wallet id. */
export type FillRow = [
  string,
  number,
  Outcome,
  TradeSide,
  number,
  number,
  number,
  number,
  number,
  number,
];

export const toFill = (r: FillRow): TradeFill => ({
  wallet: r[0],
  marketId: r[1],
  outcome: r[2],
  side: r[3],
  price: r[4],
  size: r[5],
  usd: r[6],
  ts: r[7],
  id: r[8],
});

/** A FillRow's amounts (the trades view's decoding), time, id and wallet id, from `fills f`. */
const FILL_AMOUNTS_AND_KEYS = `${decodedSql("f.price")}, ${decodedSql("f.size")},
  ${decodedSql("f.usd_value")}, f.ts, f.id, f.wallet_id`;

// The columns of a FillRow, read from `fills f` and `wallet_ids w` (written out so each query
// can name the index it walks).
export const FILL_COLUMNS = `w.address, f.market_id,
  CASE WHEN f.kind & 1 THEN 'NO' ELSE 'YES' END, CASE WHEN f.kind & 2 THEN 'SELL' ELSE 'BUY' END,
  ${FILL_AMOUNTS_AND_KEYS}`;

/** Fills by wallet id, then market, then time; filter on f.wallet_id, f.market_id. */
export const FILLS_BY_WALLET = `fills f INDEXED BY fills_by_wallet
  CROSS JOIN wallet_ids w ON w.id = f.wallet_id`;
/** Fills by market, then time; filter on f.market_id, f.ts. */
export const FILLS_BY_MARKET = `fills f INDEXED BY fills_by_market
  CROSS JOIN wallet_ids w ON w.id = f.wallet_id`;
/**
 * Every fill as a FillRow to be completed (`completeSortedFill`), for a full rebuild to sort
 * (ORDER BY) rather than walk an index. A walk along fills_by_wallet or fills_by_market looks
 * each fill up in the table, in random order (35-40 s for the large world's 10M fills); SQLite's
 * sorter reads the table in order and merges sorted runs, on the connection's helper threads
 * (withBulkReads in full.ts): 14 s. Each sorted record goes through temporary files, so it
 * carries no text: not the address (with it, the sort took 20 s and wrote 0.98 GB of them instead
 * of 0.80), and the kind as its number (index 2; outcome and side are made from it in JS).
 */
export const ALL_FILLS = `SELECT NULL, f.market_id, f.kind, NULL, ${FILL_AMOUNTS_AND_KEYS}
  FROM fills f NOT INDEXED`;

/** Makes a row of ALL_FILLS a FillRow: its wallet's name, outcome and side from its kind. */
export function completeSortedFill(row: FillRow, wallet: string): FillRow {
  const kind = row[2] as unknown as number;
  row[0] = wallet;
  row[2] = outcomeOfKind(kind);
  row[3] = sideOfKind(kind);
  return row;
}

export interface PassResult {
  wallets: Set<string>;
  /**
   * Of `wallets`, those whose wallet search entry can have moved (RefreshChange.searchMoved);
   * absent after a full rebuild.
   */
  searchMoved?: Set<string>;
  markets: number;
  fillsRead: number;
  phases: Record<string, number>;
}

/** Times the steps of a pass: each call to `lap` closes the step that ran since the last one. */
export function stopwatch() {
  const phases: Record<string, number> = {};
  let last = performance.now();
  return {
    phases,
    lap(name: string): void {
      const now = performance.now();
      phases[name] = Math.round(now - last);
      last = now;
    },
  };
}

/**
 * `prices`: "seek" to look prices up in the fills as asked (seekLookup in prices.ts), or
 * a lookup made already (the full rebuild's, from every market's series, read on another thread).
 */
export function contextFor(
  db: Pick<Db, "writer">,
  now: number,
  prices: "seek" | PriceLookup,
): WalletContext {
  const w = db.writer;
  const markets = marketLookup(
    w
      .prepare<
        [],
        {
          id: number;
          category: string | null;
          resolved_outcome: Outcome | null;
          resolved_at: number | null;
          compacted: number;
        }
      >(
        "SELECT id, category, resolved_outcome, resolved_at, compacted_at IS NOT NULL AS compacted FROM markets",
      )
      .all()
      .map((m) => ({
        id: m.id,
        category: m.category,
        resolvedOutcome: m.resolved_outcome,
        resolvedAt: m.resolved_at,
        compacted: m.compacted === 1,
      })),
  );
  const platformOf = w.prepare<
    [string],
    { name: string | null; pnl: number | null; asOf: number | null }
  >(
    "SELECT platform_name AS name, platform_pnl AS pnl, platform_pnl_as_of AS asOf FROM wallets WHERE address = ?",
  );
  const insiderMax = w.prepare<[string], { score: number | null }>(
    "SELECT max(score) AS score FROM signals WHERE wallet = +? AND type = 'insider'",
  );
  const investigated = investigationLookup(db);
  return {
    now,
    market: markets,
    prices: prices === "seek" ? seekLookup(db) : prices,
    platform: (address) => platformOf.get(address),
    maxInsiderScore: (address) => insiderMax.get(address)?.score ?? null,
    inOpenInvestigation: investigated,
  };
}

/**
 * A market's facts by id: an array indexed by id when the ids are dense (they are SQLite's
 * rowids, 1 to the number of markets), else a map. A wallet's model looks its markets up several
 * times a bet; with a Map the lookups took about 6% of the incremental wallet worker's time on
 * the large world (docs/architecture.md, "The wallet step reads what the model reads").
 */
export function marketLookup(
  markets: readonly MarketInfo[],
): (id: number) => MarketInfo | undefined {
  const maxId = markets.reduce((max, m) => Math.max(max, m.id), 0);
  if (maxId > 4 * markets.length + 1024) {
    const byId = new Map(markets.map((m) => [m.id, m]));
    return (id) => byId.get(id);
  }
  const byIndex = new Array<MarketInfo | undefined>(maxId + 1).fill(undefined);
  for (const m of markets) byIndex[m.id] = m;
  return (id) => byIndex[id];
}

/** Wallets in an open investigation, when the funding-graph tables exist. */
function investigationLookup(db: Pick<Db, "writer">): (address: string) => boolean {
  const exists = db.writer
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'investigation_wallets'")
    .get();
  if (!exists) return () => false;
  // Read once per refresh: open investigations hold few wallets, and asking per wallet cost a
  // join for every wallet recomputed.
  const open = new Set(
    db.writer
      .prepare(
        `SELECT DISTINCT iw.address FROM investigation_wallets iw
           JOIN investigations i ON i.id = iw.investigation_id
          WHERE i.status = 'open' AND i.active = 1`,
      )
      .pluck()
      .all() as string[],
  );
  return (address) => open.has(address);
}

/** A whale's or insider's standing, with its id in wallet_ids (null if it has no fill). */
export type CountingWallet = WalletStanding & { walletId: number | null };

/** The wallets whose standing counts in market sentiment (whales and insiders), by address. */
export function standings(db: Db): Map<string, CountingWallet> {
  const map = new Map<string, CountingWallet>();
  const rows = db.writer
    .prepare<
      [],
      { address: string; id: number | null; bwr: number | null; volume: number; type: string }
    >(
      `SELECT s.address, w.id, s.bayesian_win_rate AS bwr, s.total_volume AS volume,
              s.wallet_type AS type
         FROM wallet_stats s LEFT JOIN wallet_ids w ON w.address = s.address
        WHERE s.total_volume > ${WHALE_VOLUME_USD} OR s.wallet_type = 'insider'`,
    )
    .iterate();
  for (const r of rows) {
    map.set(r.address, {
      bayesianWinRate: r.bwr,
      whale: r.volume > WHALE_VOLUME_USD,
      insider: r.type === "insider",
      walletId: r.id,
    });
  }
  return map;
}

export type Stopwatch = ReturnType<typeof stopwatch>;

/**
 * A bet's side as wallet_bets stores it (side_code: 0 YES, 1 NO), from an outcome bound as a
 * parameter: the statements that walk wallet_bets_by_market (sql/0027) compare side_code with it,
 * since the index keys on the stored code, not the generated `side` text.
 */
export const SIDE_CODE_OF_OUTCOME = "(+? = 'NO')";

export const BET_FIELDS: (keyof WalletBetRow)[] = [
  "market_id",
  "category",
  "side",
  "entry_price",
  "buy_usd",
  "volume",
  "yes_flow",
  "no_flow",
  "yes_shares",
  "no_shares",
  "trade_count",
  "two_sided",
  "first_ts",
  "entry_ts",
  "last_ts",
  "resolved",
  "won",
  "pnl_base",
  "move_24h",
];

/** A wallet_bets row read as an array, in BET_FIELDS order. */
export function betFromValues(v: unknown[]): WalletBetRow {
  // Written out, so every bet object has one shape (a loop assigning fields one by one made
  // V8 fall back to slow dictionary objects).
  return {
    market_id: v[0] as number,
    category: v[1] as string | null,
    side: v[2] as WalletBetRow["side"],
    entry_price: v[3] as number | null,
    buy_usd: v[4] as number,
    volume: v[5] as number,
    yes_flow: v[6] as number,
    no_flow: v[7] as number,
    yes_shares: v[8] as number,
    no_shares: v[9] as number,
    trade_count: v[10] as number,
    two_sided: v[11] as number,
    first_ts: v[12] as number,
    entry_ts: v[13] as number,
    last_ts: v[14] as number,
    resolved: v[15] as number,
    won: v[16] as number | null,
    pnl_base: v[17] as number,
    move_24h: v[18] as number | null,
  };
}

/**
 * The stored bet's columns the wallet's model reads (ModelBetRow), in this order. The
 * incremental refresh reads every bet of each wallet it recomputes, and a column costs about as
 * much to hand to JavaScript as the row costs to find: the served amounts are generated columns,
 * decoded on every read (sql/0021). Reading these 12 instead of all 19 took the large world's
 * 401k bets from 1.32 to 0.78 s of CPU (docs/architecture.md, "The wallet step reads what the
 * model reads"). The category is the market's (modelBetFromValues), not read at all.
 */
export const MODEL_BET_FIELDS = [
  "market_id",
  "entry_price",
  "won",
  "volume",
  "trade_count",
  "two_sided",
  "move_24h",
  "pnl_base",
  "yes_shares",
  "no_shares",
  "first_ts",
  "last_ts",
] as const satisfies readonly (keyof ModelBetRow)[];

/**
 * A stored bet read as MODEL_BET_FIELDS. Its category is its market's: a bet takes its market's
 * category when it is computed (settleBet), and a change to a market's facts recomputes every
 * bet in it in the same run (dirty_markets.changed), so the two only differ for a compacted
 * market, whose bets are frozen with the category they had: `frozenCategory` reads that one.
 */
export function modelBetFromValues(
  v: unknown[],
  ctx: Pick<WalletContext, "market">,
  frozenCategory: (marketId: number) => string | null,
): ModelBetRow {
  const marketId = v[0] as number;
  const market = ctx.market(marketId);
  return {
    market_id: marketId,
    category: market?.compacted ? frozenCategory(marketId) : (market?.category ?? null),
    entry_price: v[1] as number | null,
    won: v[2] as number | null,
    volume: v[3] as number,
    trade_count: v[4] as number,
    two_sided: v[5] as number,
    move_24h: v[6] as number | null,
    pnl_base: v[7] as number,
    yes_shares: v[8] as number,
    no_shares: v[9] as number,
    first_ts: v[10] as number,
    last_ts: v[11] as number,
  };
}

export function sameBet(a: WalletBetRow, b: WalletBetRow): boolean {
  return BET_FIELDS.every((field) => a[field] === b[field]);
}
