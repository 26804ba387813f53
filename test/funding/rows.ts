import type { Db } from "../../src/db/open";
import { categoryStatsWriter } from "../helpers/wallet-read-models";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const T0 = Date.parse("2026-08-01T00:00:00.000Z");

/** A distinct lowercase address per (prefix, n): readable in failures, ordered by n within a prefix. */
export function addr(prefix: string, n = 0): string {
  const head = Buffer.from(prefix).toString("hex").slice(0, 16);
  return `0x${head}${n.toString(16).padStart(40 - head.length, "0")}`;
}

/** Hand-built rows for the funding tests: transfers, labels, markets, bets and wallet stats. */
/** Transaction hashes and market ids stay unique however many helpers a test creates. */
let tx = 0;
let market = 0;

export function rows(db: Db) {
  const w = db.writer;
  const insertTransfer = w.prepare(
    `INSERT INTO transfers (tx_hash, log_index, from_address, to_address, token, amount, ts)
     VALUES (?, 0, ?, ?, ?, ?, ?)`,
  );
  const insertMarket = w.prepare(
    `INSERT INTO markets (id, slug, title, category, condition_id, resolved_outcome, resolved_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  // Bets name their wallet by its id in wallet_ids (sql/0012); a wallet with bets but no fills
  // (as these rows make) gets one here.
  const walletId = w.prepare(
    "INSERT INTO wallet_ids (address) VALUES (?) ON CONFLICT DO UPDATE SET address = address RETURNING id",
  );
  const insertBet = w.prepare(
    // The stored columns (sql/0021): amounts as REALs, which are served as they are.
    `INSERT INTO wallet_bets (wallet_id, market_id, category, side_code, entry_price_units,
       buy_usd_units, volume_units, yes_flow_units, no_flow_units, yes_shares_units,
       no_shares_units, trade_count, two_sided, first_ts, entry_offset, last_offset, resolved, won,
       pnl_base, move_24h)
     VALUES (@walletId, @market, @category, @side = 'NO', CAST(@price AS REAL),
       CAST(@usd AS REAL), CAST(@usd AS REAL), 0.0, 0.0, 0.0, 0.0, 1, @twoSided, @ts, 0, 0,
       @resolved, @won, @pnl, NULL)`,
  );

  const insertStats = w.prepare(
    `INSERT OR REPLACE INTO wallet_stats (address, trade_count, total_bets, resolved_bets, wins,
       win_rate, total_volume, ledger_pnl, total_pnl, pnl_source, markets_traded, expected_wins,
       counter_consensus_wins, smart_money_score, confidence, breakdown, wallet_type,
       first_trade_at, last_trade_at)
     VALUES (@address, @bets, @bets, @resolved, @wins, @winRate, @volume, @pnl, @pnl, 'ledger',
       @bets, 0, 0, 50, 0.5, '{}', 'retail', @first, @last)`,
  );
  const insertCategory = categoryStatsWriter(w);
  return {
    transfer(from: string, to: string, amount: number, ts: number, token: "USDC" | "POL" = "USDC") {
      tx += 1;
      insertTransfer.run(`0x${tx.toString(16).padStart(64, "0")}`, from, to, token, amount, ts);
    },
    label(address: string, kind: "exchange" | "platform" | "proxy_factory", name: string) {
      w.prepare("INSERT OR REPLACE INTO labels (address, kind, name) VALUES (?, ?, ?)").run(
        address,
        kind,
        name,
      );
    },
    /** A market; resolved YES at `resolvedAt` unless told otherwise. */
    market(category: string, resolved: "YES" | "NO" | null = "YES", resolvedAt = T0 + 60 * DAY) {
      market += 1;
      insertMarket.run(
        market,
        `m-${market}`,
        `Market ${market}?`,
        category,
        `0x${market.toString(16).padStart(64, "0")}`,
        resolved,
        resolved ? resolvedAt : null,
      );
      return market;
    },
    bet(b: {
      wallet: string;
      market: number;
      category: string;
      side?: "YES" | "NO";
      price: number | null;
      usd?: number;
      ts?: number;
      won?: boolean | null;
      pnl?: number;
      twoSided?: boolean;
    }) {
      const won = b.won ?? null;
      insertBet.run({
        walletId: (walletId.get(b.wallet) as { id: number }).id,
        market: b.market,
        category: b.category,
        side: b.side ?? "YES",
        price: b.price,
        usd: b.usd ?? 100,
        twoSided: b.twoSided ? 1 : 0,
        ts: b.ts ?? T0,
        resolved: won === null ? 0 : 1,
        won: won === null ? null : won ? 1 : 0,
        pnl: b.pnl ?? 0,
      });
    },
    stats(s: {
      address: string;
      bets: number;
      resolved: number;
      wins: number;
      volume: number;
      pnl: number | null;
      first?: number;
      last?: number;
    }) {
      insertStats.run({
        ...s,
        winRate: s.resolved > 0 ? s.wins / s.resolved : null,
        first: s.first ?? T0,
        last: s.last ?? T0,
      });
    },
    categoryStats(address: string, category: string, resolved: number, wins: number, pnl: number) {
      insertCategory({
        address,
        category,
        bets: resolved,
        resolved_bets: resolved,
        wins,
        win_rate: resolved ? wins / resolved : null,
        global_win_rate: null,
        edge: null,
        pnl,
        volume: 0,
        counter_consensus_wins: 0,
      });
    },
    baseRate(category: string, rate: number) {
      w.prepare(
        "INSERT OR REPLACE INTO category_base_rates (category, resolved_bets, wins, base_rate) VALUES (?, 1000, ?, ?)",
      ).run(category, Math.round(rate * 1000), rate);
    },
    /** Runs many inserts in one transaction (hundreds of wallets). */
    batch(work: () => void) {
      w.transaction(work)();
    },
  };
}
