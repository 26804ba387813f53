import type * as v from "valibot";
import { fallbackScore, type ScoreBreakdown } from "../analytics/score";
import { TIMING_BUCKETS, timingFromStored } from "../analytics/timing";
import type { Db } from "../db/open";
import type { TradeSide } from "../domain";
import type {
  AlertSchema,
  WalletCategoriesSchema,
  WalletDossierSchema,
  WalletProfileLiteSchema,
  WalletSignalSchema,
  WalletTimingSchema,
} from "../schemas/wallets";
import { createCorrelatedQueries } from "./correlated";
import type { TradeQueries } from "./trades";
import { createWalletFallback } from "./wallet-fallback";
import { createWalletSearch } from "./wallet-search";
import {
  categoryPnlTrusted,
  createLatestRefresh,
  STATS_COLUMNS,
  type StatsRow,
  toWalletStats,
} from "./wallet-stats";

export type WalletSignal = v.InferOutput<typeof WalletSignalSchema>;

export type WalletProfile = v.InferOutput<typeof WalletProfileLiteSchema>;

export type WalletAlert = v.InferOutput<typeof AlertSchema>;

export type WalletDossier = v.InferOutput<typeof WalletDossierSchema>;

export type WalletCategoryStat = v.InferOutput<typeof WalletCategoriesSchema>["categories"][number];

export type WalletTiming = v.InferOutput<typeof WalletTimingSchema>;

/** The full dossier's recent trades and alerts: the latest this many of each. */
export const DOSSIER_TRADES = 20;
export const DOSSIER_ALERTS = 20;
/** A wallet has few categories; this bounds a source that invents many. */
export const MAX_CATEGORIES = 200;

interface WalletRow extends StatsRow {
  platform_name: string | null;
  wallet_type: string;
  smart_money_score: number;
  confidence: number;
  breakdown: string;
}

export type WalletQueries = ReturnType<typeof createWalletQueries>;

export interface WalletQueryDeps {
  trades: TradeQueries;
  /** The wallet's sybil cluster membership (the funding graph's clusterOf), or null. */
  clusterOf(address: string): WalletDossier["funding_cluster"];
}

/**
 * One wallet's read models, plus correlated wallets and wallet search. Addresses are expected
 * lowercase (the HTTP layer lowercases them).
 */
export function createWalletQueries(db: Db, deps: WalletQueryDeps) {
  const r = db.reader;
  const latestRefreshAt = createLatestRefresh(db);
  const walletRow = r.prepare<[string], WalletRow>(
    `SELECT ${STATS_COLUMNS}, platform_name, wallet_type, smart_money_score, confidence, breakdown
       FROM wallet_stats WHERE address = ?`,
  );
  const fallback = createWalletFallback(db);
  const alerts = r.prepare<[string, number], AlertRow>(
    `SELECT s.id, s.type, s.score, s.bet_value, s.side, s.outcome, s.price, s.explanation,
            s.created_at, m.slug, m.title, m.category
       FROM signals s JOIN markets m ON m.id = s.market_id
      WHERE s.wallet = +? ORDER BY s.created_at DESC, s.id DESC LIMIT +?`,
  );
  const categoryRows = r.prepare<[string, number], CategoryRow>(
    `SELECT category, bets, wins, win_rate, pnl, volume FROM wallet_category_stats
      WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?) LIMIT +?`,
  );
  const timingRow = r
    .prepare<[string], string>(
      "SELECT counts FROM wallet_timing WHERE wallet_id = (SELECT id FROM wallet_ids WHERE address = ?)",
    )
    .pluck();

  function profile(address: string): WalletProfile | undefined {
    const row = walletRow.get(address);
    if (row) {
      return {
        address,
        platform_name: row.platform_name,
        wallet_type: row.wallet_type,
        stats: toWalletStats(row, latestRefreshAt),
      };
    }
    const fb = fallback(address);
    if (!fb) return undefined;
    return { address, platform_name: fb.platformName, wallet_type: null, stats: fb.stats };
  }

  return {
    ...createCorrelatedQueries(db),
    ...createWalletSearch(db),

    /** The wallet's score and stats; undefined when it never traded. */
    signal(address: string): WalletSignal | undefined {
      const row = walletRow.get(address);
      if (row) {
        return {
          wallet: address,
          smart_money_score: row.smart_money_score,
          confidence: row.confidence,
          breakdown: JSON.parse(row.breakdown) as WalletSignal["breakdown"],
          wallet_type: row.wallet_type,
          stats: toWalletStats(row, latestRefreshAt),
        };
      }
      const fb = fallback(address);
      if (!fb) return undefined;
      const score = fallbackScore(fb.wins, fb.resolvedBets);
      return {
        wallet: address,
        smart_money_score: score.score,
        confidence: score.confidence,
        breakdown: breakdownObject(score.breakdown),
        wallet_type: null,
        stats: fb.stats,
      };
    },

    /** The lite profile (free keys); undefined when the wallet never traded. */
    profile,

    /**
     * The full dossier: the profile plus recent trades (the first page of its trades, the fill
     * history's included), alerts and the funding cluster.
     */
    async dossier(address: string): Promise<WalletDossier | undefined> {
      const base = profile(address);
      if (!base) return undefined;
      const alertRows = alerts.all(address, DOSSIER_ALERTS).map(toAlert);
      const cluster = deps.clusterOf(address) ?? null;
      const trades = await deps.trades.page({ wallet: address }, DOSSIER_TRADES);
      return { ...base, recent_trades: trades.rows, alerts: alertRows, funding_cluster: cluster };
    },

    /** Per-category record, most bets first; PnL withheld where the ledger is not trusted. */
    categories(address: string): { address: string; categories: WalletCategoryStat[] } {
      const wallet = walletRow.get(address);
      const trusted = wallet ? categoryPnlTrusted(wallet.wallet_type, wallet.total_volume) : false;
      const categories = categoryRows
        .all(address, MAX_CATEGORIES)
        .map((row) => ({ ...row, pnl: trusted ? row.pnl : null }))
        .sort((a, b) => b.bets - a.bets || (a.category < b.category ? -1 : 1));
      return { address, categories };
    },

    /** Win rate by time before resolution; every bucket present, empty before a refresh. */
    timing(address: string): WalletTiming {
      const counts = timingRow.get(address);
      const buckets = counts
        ? timingFromStored(counts).map((b) => ({
            label: b.label,
            count: b.count,
            win_rate: b.winRate,
          }))
        : TIMING_BUCKETS.map((b) => ({ label: b.label, count: 0, win_rate: null }));
      return { address, buckets };
    },
  };
}

interface AlertRow {
  id: number;
  type: "whale" | "insider";
  score: number;
  bet_value: number;
  side: TradeSide;
  outcome: string;
  price: number;
  explanation: string;
  created_at: number;
  slug: string;
  title: string | null;
  category: string | null;
}

interface CategoryRow {
  category: string;
  bets: number;
  wins: number;
  win_rate: number | null;
  pnl: number;
  volume: number;
}

/** Field by field, as toTrade (src/read/trades.ts): a fixed shape serializes faster. */
function toAlert(row: AlertRow): WalletAlert {
  return {
    id: row.id,
    type: row.type,
    score: row.score,
    bet_value: row.bet_value,
    side: row.side,
    outcome: row.outcome,
    price: row.price,
    explanation: row.explanation,
    created_at: new Date(row.created_at).toISOString(),
    market: { slug: row.slug, title: row.title, category: row.category },
  };
}

function breakdownObject(breakdown: ScoreBreakdown): WalletSignal["breakdown"] {
  return { ...breakdown };
}
