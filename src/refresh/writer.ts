import type { Db } from "../db/open";
import type { MarketHourRow, MarketStatsRow } from "./market-model";
import type { WalletModel } from "./wallet-model";

/** The statements that replace one wallet's or one market's read-model rows. */
export function createModelWriter(db: Db) {
  const w = db.writer;
  const statsColumns = [
    "address",
    "platform_name",
    "trade_count",
    "total_bets",
    "resolved_bets",
    "wins",
    "win_rate",
    "bayesian_win_rate",
    "total_volume",
    "ledger_pnl",
    "total_pnl",
    "pnl_source",
    "pnl_as_of",
    "markets_traded",
    "expected_wins",
    "p_value",
    "z_score",
    "counter_consensus_wins",
    "smart_money_score",
    "confidence",
    "breakdown",
    "wallet_type",
    "first_trade_at",
    "last_trade_at",
  ];
  const betColumns = [
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
    "pnl",
    "move_24h",
  ];
  const categoryColumns = [
    "category",
    "bets",
    "resolved_bets",
    "wins",
    "win_rate",
    "global_win_rate",
    "edge",
    "pnl",
    "volume",
    "counter_consensus_wins",
  ];
  const marketColumns = [
    "volume",
    "trade_count",
    "unique_wallets",
    "last_yes_price",
    "last_trade_at",
    "sentiment",
    "yes_ratio",
    "yes_volume",
    "no_volume",
    "total_whale_volume",
    "unique_whales",
    "yes_implied_prob",
    "no_implied_prob",
    "implied_edge",
    "implied_samples",
    "implied_wallets",
  ];
  const hourColumns = [
    "hour",
    "volume",
    "whale_volume",
    "trade_count",
    "net_flow",
    "open_yes",
    "close_yes",
  ];
  const insert = (table: string, columns: string[], verb = "INSERT") =>
    w.prepare(
      `${verb} INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
    );

  const putStats = insert("wallet_stats", statsColumns, "INSERT OR REPLACE");
  const putBet = insert("wallet_bets", ["wallet", ...betColumns]);
  const putCategory = insert("wallet_category_stats", ["address", ...categoryColumns]);
  const putTiming = w.prepare(
    "INSERT OR REPLACE INTO wallet_timing (address, buckets) VALUES (?, ?)",
  );
  const dropBets = w.prepare("DELETE FROM wallet_bets WHERE wallet = ?");
  const dropCategories = w.prepare("DELETE FROM wallet_category_stats WHERE address = ?");
  const putMarket = insert("market_stats", ["market_id", ...marketColumns], "INSERT OR REPLACE");
  const putHour = insert("market_hours", ["market_id", ...hourColumns]);
  const dropHours = w.prepare("DELETE FROM market_hours WHERE market_id = ?");

  return {
    /** Replaces every row of the wallet. `fresh` skips the deletes during a full rebuild. */
    wallet(model: WalletModel, fresh = false): void {
      const address = model.stats.address;
      if (!fresh) {
        dropBets.run(address);
        dropCategories.run(address);
      }
      putStats.run(model.stats);
      for (const bet of model.bets) putBet.run({ wallet: address, ...bet });
      for (const category of model.categories) putCategory.run({ address, ...category });
      putTiming.run(address, model.timing);
    },

    market(marketId: number, stats: MarketStatsRow, hours: MarketHourRow[], fresh = false): void {
      if (!fresh) dropHours.run(marketId);
      putMarket.run({ market_id: marketId, ...stats });
      for (const hour of hours) putHour.run({ market_id: marketId, ...hour });
    },

    clearAll(): void {
      w.exec(`DELETE FROM wallet_bets; DELETE FROM wallet_stats; DELETE FROM wallet_category_stats;
        DELETE FROM wallet_timing; DELETE FROM market_stats; DELETE FROM market_hours;
        DELETE FROM category_base_rates;`);
    },
  };
}
