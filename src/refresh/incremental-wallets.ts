/**
 * The incremental refresh's wallet step, one wallet at a time: the bets of its changed pairs
 * recomputed from their fills, then its stats, score, type and categories from all its bets,
 * marked now. What it gives is what the writer stores (createModelWriter's `wallet`), so the
 * reading and modelling can run on another thread than the writing: on the writer's own thread
 * for a small run, in a worker thread for a large one (incrementalWalletsInWorker in
 * workers/incremental.ts; docs/architecture.md, "The wallet step in a worker thread").
 *
 * Everything here only reads, and reads only rows this refresh does not write before the wallet
 * step ends (fills, the wallets' own stored rows, markets, signals, the stored marks), so a read
 * on the writer's connection between writes and one on another connection, from the snapshot
 * committed before the refresh, give the same answer.
 */
import { HOUR_MS } from "../analytics/fill";
import type { Connection } from "../db/open";
import { WHALE_VOLUME_USD } from "../domain";
import {
  BET_FIELDS,
  betFromValues,
  FILL_COLUMNS,
  FILLS_BY_WALLET,
  type FillRow,
  MODEL_BET_FIELDS,
  modelBetFromValues,
  sameBet,
  toFill,
} from "./pass";
import { sealedTradesReader } from "./sealed-trades";
import {
  betFromFills,
  type ModelBetRow,
  timingOf,
  type WalletBetRow,
  type WalletCategoryRow,
  type WalletContext,
  type WalletModel,
  type WalletStatsRow,
  walletFromBets,
} from "./wallet-model";
import type { PreviousWalletRows } from "./writer";

/** Which wallets the step recomputes, and what about each (selectChanges in incremental.ts). */
export interface WalletChanges {
  /** The bets to recompute: wallet → markets. */
  pairs: Map<string, Set<number>>;
  /** Wallets whose timing buckets (trades in resolved markets) may have changed. */
  timingChanged: Set<string>;
  /** Every wallet to recompute: those of `pairs`, dirty ones and the stalest marks. */
  wallets: Set<string>;
}

/**
 * One wallet's rows to store: its model (without its bets: `changed` holds those to write), and
 * the rows stored before, so only what changed is written. `previous.bets` holds only the old
 * rows of `changed`, which is all the writer compares.
 */
export interface WalletUpdate {
  walletId: number;
  model: WalletModel;
  changed: WalletBetRow[];
  previous: PreviousWalletRows;
}

/** What recomputing the wallets tells the market step and the base rates. */
export interface WalletTotals {
  fillsRead: number;
  /** Markets of wallets whose standing changed, with the hours whose whale volume moved. */
  restanded: Map<number, Set<number>>;
  /** Per market: wallets that had never traded it before this run's fills. */
  newWalletsIn: Map<number, number>;
  /** Per category: resolved bets and wins gained (or lost) by the recomputed bets. */
  baseRateDelta: Map<string, { bets: number; wins: number }>;
}

/**
 * The step's reads on `rows` (stored read-model rows) and `fills` (the fill store): `next`
 * recomputes one wallet, `totals` sums what the wallets recomputed so far tell the market step.
 */
export function walletRecompute(
  rows: Connection,
  fills: Connection,
  ctx: WalletContext,
  changes: WalletChanges,
) {
  const { pairs, timingChanged } = changes;
  // Arrays, made into objects here: better-sqlite3 builds row objects several times slower, and
  // these reads (every bet of every wallet recomputed) are most of an incremental run's reading.
  // Of each bet only what the model reads (MODEL_BET_FIELDS); the whole row only of a bet this
  // run recomputes, which the writer compares with its new one.
  const idOf = rows
    .prepare<[string], number>("SELECT id FROM wallet_ids WHERE address = ?")
    .pluck();
  const betsOf = rows
    .prepare<[number], unknown[]>(
      `SELECT ${MODEL_BET_FIELDS.join(", ")} FROM wallet_bets WHERE wallet_id = +? ORDER BY market_id`,
    )
    .raw();
  const storedBet = rows
    .prepare<[number, number], unknown[]>(
      `SELECT ${BET_FIELDS.join(", ")} FROM wallet_bets WHERE wallet_id = ? AND market_id = ?`,
    )
    .raw();
  const storedCategory = rows
    .prepare<[number, number], string | null>(
      "SELECT category FROM wallet_bets WHERE wallet_id = ? AND market_id = ?",
    )
    .pluck();
  const oldStats = rows.prepare<[string], WalletStatsRow>(
    "SELECT * FROM wallet_stats WHERE address = ?",
  );
  const oldCategories = rows.prepare<[number], WalletCategoryRow>(
    "SELECT * FROM wallet_category_stats WHERE wallet_id = ?",
  );
  const pairFills = fills
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_WALLET}
        WHERE f.wallet_id = +? AND f.market_id = +? ORDER BY f.ts, f.id`,
    )
    .raw();
  const walletFills = fills
    .prepare(
      `SELECT ${FILL_COLUMNS} FROM ${FILLS_BY_WALLET} WHERE f.wallet_id = +? ORDER BY f.ts, f.id`,
    )
    .raw();
  const sealedOf = sealedTradesReader(rows);
  const totals: WalletTotals = {
    fillsRead: 0,
    restanded: new Map(),
    newWalletsIn: new Map(),
    baseRateDelta: new Map(),
  };
  const bump = (bet: WalletBetRow, sign: 1 | -1) => {
    if (bet.resolved !== 1 || bet.category === null) return;
    const d = totals.baseRateDelta.get(bet.category) ?? { bets: 0, wins: 0 };
    d.bets += sign;
    d.wins += sign * (bet.won ?? 0);
    totals.baseRateDelta.set(bet.category, d);
  };

  const next = (wallet: string): WalletUpdate | undefined => {
    // A wallet with no fills (marked dirty by funding or labels alone) has no id and no bets.
    const walletId = idOf.get(wallet);
    if (walletId === undefined) return undefined;
    const before = oldStats.get(wallet);
    const bets = new Map<number, ModelBetRow>();
    const frozenCategory = (marketId: number) => storedCategory.get(walletId, marketId) ?? null;
    for (const values of betsOf.all(walletId)) {
      const bet = modelBetFromValues(values, ctx, frozenCategory);
      bets.set(bet.market_id, bet);
    }
    const changed: WalletBetRow[] = [];
    const oldBets = new Map<number, WalletBetRow>();
    // A market whose facts changed marks its holders (`timingChanged`): its bets may have come
    // resolved and frozen, written by the bulk path (src/ingest/past-markets.ts), with no fill
    // for the loop below to find, and the wins test counts them.
    let resolvedChanged = before === undefined || timingChanged.has(wallet);
    // A new wallet has no timing row yet; others change only with trades in resolved markets.
    let timing = before === undefined || timingChanged.has(wallet);
    for (const marketId of pairs.get(wallet) ?? []) {
      // A compacted market's bet is frozen as it was: its fills are gone.
      if (ctx.market(marketId)?.compacted) continue;
      const fillRows = (pairFills.all(walletId, marketId) as FillRow[]).map(toFill);
      totals.fillsRead += fillRows.length;
      if (fillRows.length === 0) continue;
      const stored = bets.has(marketId) ? storedBet.get(walletId, marketId) : undefined;
      const old = stored === undefined ? undefined : betFromValues(stored);
      const bet = betFromFills(wallet, marketId, fillRows, ctx);
      if (old === undefined) {
        totals.newWalletsIn.set(marketId, (totals.newWalletsIn.get(marketId) ?? 0) + 1);
      }
      if (old?.resolved === 1 || bet.resolved === 1) {
        resolvedChanged = true;
        timing = true;
      }
      if (old === undefined || !sameBet(old, bet)) {
        if (old !== undefined) {
          bump(old, -1);
          oldBets.set(marketId, old);
        }
        bump(bet, 1);
        changed.push(bet);
        bets.set(marketId, bet);
      }
    }
    let timingJson: string | null = null;
    if (timing) {
      const all = (walletFills.all(walletId) as FillRow[]).map(toFill);
      totals.fillsRead += all.length;
      timingJson = timingOf(all, ctx, sealedOf(walletId));
    }
    const sorted = [...bets.values()].sort((a, b) => a.market_id - b.market_id);
    if (sorted.length === 0) return undefined;
    const model = walletFromBets(wallet, sorted, ctx, {
      timing: timingJson,
      winsTest: resolvedChanged ? undefined : { log10PValue: before!.log10_p_value },
    });
    restand(walletId, before, model.stats, sorted);
    return {
      walletId,
      // The writer stores `changed`, not every bet: a bet crosses threads only when it changed.
      model: { ...model, bets: [] },
      changed,
      previous: {
        stats: before,
        bets: oldBets,
        categories: new Map(oldCategories.all(walletId).map((c) => [c.category, c])),
      },
    };
  };

  /**
   * A wallet whose standing (Bayesian win rate, whale, insider) changed, and which counts as a
   * whale or insider before or after: its markets' sentiment weighs it differently, and if its
   * whale flag flipped, the hours it traded in gain or lose its whale volume. Nothing else about
   * those markets changes.
   */
  const restand = (
    walletId: number,
    before: WalletStatsRow | undefined,
    after: WalletStatsRow,
    sorted: readonly ModelBetRow[],
  ) => {
    const standingChanged =
      !before ||
      before.bayesian_win_rate !== after.bayesian_win_rate ||
      before.total_volume > WHALE_VOLUME_USD !== after.total_volume > WHALE_VOLUME_USD ||
      (before.wallet_type === "insider") !== (after.wallet_type === "insider");
    const counts =
      after.total_volume > WHALE_VOLUME_USD ||
      after.wallet_type === "insider" ||
      (before !== undefined &&
        (before.total_volume > WHALE_VOLUME_USD || before.wallet_type === "insider"));
    if (!standingChanged || !counts) return;
    const whaleFlipped =
      before === undefined ||
      before.total_volume > WHALE_VOLUME_USD !== after.total_volume > WHALE_VOLUME_USD;
    for (const bet of sorted) {
      // A compacted market's stats and hours are frozen with it.
      if (ctx.market(bet.market_id)?.compacted) continue;
      const hours = totals.restanded.get(bet.market_id) ?? new Set<number>();
      totals.restanded.set(bet.market_id, hours);
      if (!whaleFlipped) continue;
      for (const row of pairFills.all(walletId, bet.market_id) as FillRow[]) {
        hours.add(Math.floor(row[7] / HOUR_MS));
      }
    }
  };

  return { next, totals };
}
