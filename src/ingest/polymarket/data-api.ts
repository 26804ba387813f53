import { createHash } from "node:crypto";
import * as v from "valibot";
import type { TradeSide } from "../../domain";
import type { Result } from "../../result";
import type { Outcome, WalletFacts } from "../ingest";
import {
  address,
  describeIssues,
  describeRecord,
  finite,
  hash,
  positive,
  price,
  tokenId,
  unixSeconds,
} from "./records";

/**
 * Data API records (`/trades`, `/activity`, `/v1/leaderboard`, `/positions`) → our rows.
 *
 * The data API has no log index. A fill's key is (tx_hash, log_index), so each record gets a
 * synthetic index derived from what identifies it within its transaction: (tx, asset, side,
 * wallet). The same record always gets the same index (re-reading a page stores nothing twice),
 * and synthetic indexes lie in [2^31, 2^32), above any real log index, so they are recognisable.
 */

export const SYNTHETIC_LOG_INDEX_BASE = 2 ** 31;

export function syntheticLogIndex(
  txHash: string,
  asset: string,
  side: string,
  wallet: string,
): number {
  const digest = createHash("sha256")
    .update(`${txHash.toLowerCase()}|${asset}|${side}|${wallet.toLowerCase()}`)
    .digest();
  return SYNTHETIC_LOG_INDEX_BASE + (digest.readUInt32BE(0) & 0x7fffffff);
}

/** A data API fill, keyed and normalised; the market is still named by its condition id. */
export interface DataTrade {
  tx_hash: string;
  log_index: number;
  wallet: string;
  condition_id: string;
  /** The outcome token id. */
  asset: string;
  outcome: Outcome;
  side: TradeSide;
  price: number;
  size: number;
  usd_value: number;
  /** Epoch milliseconds. */
  ts: number;
  /** The market as the record names it: enough for a market row when Gamma has none. */
  slug: string | null;
  title: string | null;
}

const TradeRecord = v.looseObject({
  proxyWallet: address,
  side: v.picklist(["BUY", "SELL"], (i) => `must be "BUY" or "SELL" (got ${i.received})`),
  asset: tokenId,
  conditionId: hash,
  size: positive("a number of shares"),
  price,
  timestamp: unixSeconds,
  outcomeIndex: v.picklist([0, 1], (i) => `must be 0 or 1 (got ${i.received})`),
  transactionHash: hash,
  slug: v.nullish(v.string()),
  title: v.nullish(v.string()),
});

export const describeTradeRecord = (raw: unknown) =>
  describeRecord(raw, ["transactionHash", "proxyWallet", "asset"]);

/** One `/trades` item (or a TRADE item of `/activity`) → a fill. */
export function mapDataTrade(raw: unknown): Result<DataTrade> {
  const parsed = v.safeParse(TradeRecord, raw);
  if (!parsed.success) {
    return {
      ok: false,
      reason: `trade ${describeTradeRecord(raw)}: ${describeIssues(parsed.issues)}`,
    };
  }
  const t = parsed.output;
  return {
    ok: true,
    value: {
      tx_hash: t.transactionHash,
      log_index: syntheticLogIndex(t.transactionHash, t.asset, t.side, t.proxyWallet),
      wallet: t.proxyWallet,
      condition_id: t.conditionId,
      asset: t.asset,
      outcome: t.outcomeIndex === 0 ? "YES" : "NO",
      side: t.side,
      price: t.price,
      size: t.size,
      // Notional at the fill price, as for every other source (docs/methodology.md: usd = price ×
      // size); /activity's usdcSize is not used, so both feeds value a fill alike.
      usd_value: t.price * t.size,
      ts: t.timestamp,
      slug: t.slug?.trim() || null,
      title: t.title?.trim() || null,
    },
  };
}

/**
 * `/activity` items: only TRADE is a fill. REDEEM, SPLIT, MERGE, CONVERSION, REWARD and the
 * rebates move collateral or shares without a price; they are counted by type and skipped.
 */
export type ActivityItem = { kind: "trade"; trade: DataTrade } | { kind: "skipped"; type: string };

const ActivityType = v.looseObject({
  type: v.pipe(
    v.string((i) => `must be an activity type (got ${i.received})`),
    v.nonEmpty("must not be empty"),
  ),
});

export function mapActivity(raw: unknown): Result<ActivityItem> {
  const typed = v.safeParse(ActivityType, raw);
  if (!typed.success) {
    return {
      ok: false,
      reason: `activity ${describeTradeRecord(raw)}: ${describeIssues(typed.issues)}`,
    };
  }
  const type = typed.output.type.toUpperCase();
  if (type !== "TRADE") return { ok: true, value: { kind: "skipped", type } };
  const trade = mapDataTrade(raw);
  return trade.ok ? { ok: true, value: { kind: "trade", trade: trade.value } } : trade;
}

const LeaderboardRecord = v.looseObject({
  proxyWallet: address,
  userName: v.nullish(v.string()),
  pnl: finite(),
});

/** Polymarket's placeholder name for users who never chose one: "<address>-<digits>". */
const DEFAULT_USERNAME = /^0x[0-9a-f]{40}-\d+$/i;

/**
 * A leaderboard row → the wallet's platform facts. `pnl` of the all-time board is the figure
 * Polymarket shows on the profile: that is the wallet's platform PnL, as of the fetch.
 */
export function mapLeaderboardEntry(raw: unknown, asOf: number): Result<WalletFacts> {
  const parsed = v.safeParse(LeaderboardRecord, raw);
  if (!parsed.success) {
    return {
      ok: false,
      reason: `leaderboard row ${describeRecord(raw, ["rank", "proxyWallet"])}: ${describeIssues(parsed.issues)}`,
    };
  }
  const row = parsed.output;
  const name = row.userName?.trim() ?? "";
  return {
    ok: true,
    value: {
      address: row.proxyWallet,
      platform_name: name === "" || DEFAULT_USERNAME.test(name) ? null : name,
      platform_pnl: row.pnl,
      platform_pnl_as_of: asOf,
      created_at: null,
    },
  };
}

/** One held (or redeemable) position, as `/positions` reports it. */
export interface Position {
  wallet: string;
  condition_id: string;
  asset: string;
  outcome: Outcome;
  size: number;
  avg_price: number;
  cur_price: number;
  initial_value: number;
  current_value: number;
  /** Unrealised plus realised PnL on this position only. */
  cash_pnl: number;
  realized_pnl: number;
  redeemable: boolean;
}

const PositionRecord = v.looseObject({
  proxyWallet: address,
  conditionId: hash,
  asset: tokenId,
  outcomeIndex: v.picklist([0, 1], (i) => `must be 0 or 1 (got ${i.received})`),
  size: finite(),
  avgPrice: finite(),
  curPrice: finite(),
  initialValue: finite(),
  currentValue: finite(),
  cashPnl: finite(),
  realizedPnl: finite(),
  redeemable: v.nullish(v.boolean(), false),
});

/**
 * `/positions` lists only what a wallet still holds (or can redeem): positions it sold out of
 * or already redeemed are gone. Summing `cashPnl` therefore gives the PnL of open positions,
 * not the wallet's; the wallet figure comes from the leaderboard (see mapLeaderboardEntry).
 */
export function mapPosition(raw: unknown): Result<Position> {
  const parsed = v.safeParse(PositionRecord, raw);
  if (!parsed.success) {
    return {
      ok: false,
      reason: `position ${describeRecord(raw, ["proxyWallet", "asset"])}: ${describeIssues(parsed.issues)}`,
    };
  }
  const p = parsed.output;
  return {
    ok: true,
    value: {
      wallet: p.proxyWallet,
      condition_id: p.conditionId,
      asset: p.asset,
      outcome: p.outcomeIndex === 0 ? "YES" : "NO",
      size: p.size,
      avg_price: p.avgPrice,
      cur_price: p.curPrice,
      initial_value: p.initialValue,
      current_value: p.currentValue,
      cash_pnl: p.cashPnl,
      realized_pnl: p.realizedPnl,
      redeemable: p.redeemable,
    },
  };
}

/** The PnL of the positions a wallet holds now: Σ cashPnl (not the wallet's total PnL). */
export function openPositionsPnl(positions: readonly Position[]): number {
  return positions.reduce((sum, p) => sum + p.cash_pnl, 0);
}
