import { TIMING_TRADE_LIMIT, type TimedTrade } from "../analytics/timing";
import type { Connection } from "../db/open";

/**
 * A wallet's trades in compacted markets, kept for its timing buckets (sql/0033) once their fills
 * have moved into the fill history: the buckets then count them as they did before the move.
 */

/** A trade in a resolved market, with the fill id that orders trades of the same moment. */
export interface IdTimedTrade extends TimedTrade {
  id: number;
}

/**
 * Two float64s a trade: its time, and its id × 16 + (bucket + 1) × 2 + won (exact while ids stay
 * below 2^49).
 */
export function packSealedTrades(trades: readonly IdTimedTrade[]): Buffer {
  const values = new Float64Array(trades.length * 2);
  trades.forEach((t, i) => {
    values[2 * i] = t.ts;
    values[2 * i + 1] = t.id * 16 + (t.bucket + 1) * 2 + (t.won ? 1 : 0);
  });
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

export function unpackSealedTrades(blob: Uint8Array): IdTimedTrade[] {
  // A copy: a blob from SQLite need not sit at an 8-byte boundary.
  const values = new Float64Array(new Uint8Array(blob).buffer);
  const trades: IdTimedTrade[] = [];
  for (let at = 0; at < values.length; at += 2) {
    const packed = values[at + 1]!;
    const low = packed % 16;
    trades.push({
      ts: values[at]!,
      id: (packed - low) / 16,
      bucket: (low >> 1) - 1,
      won: (low & 1) === 1,
    });
  }
  return trades;
}

/** Two lists in (ts, id) order, merged in that order. */
export function mergeInTimeOrder<T extends { ts: number; id: number }>(
  a: readonly T[],
  b: readonly T[],
): T[] {
  if (a.length === 0) return [...b];
  if (b.length === 0) return [...a];
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x.ts < y.ts || (x.ts === y.ts && x.id <= y.id)) {
      out.push(x);
      i += 1;
    } else {
      out.push(y);
      j += 1;
    }
  }
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/**
 * The stored trades with `added` (both in (ts, id) order), keeping the 500 that the buckets would
 * take first (timingBuckets: newest first, and of trades at the same moment the lowest id), in
 * (ts, id) order.
 */
export function keepRecent(
  stored: readonly IdTimedTrade[],
  added: readonly IdTimedTrade[],
): IdTimedTrade[] {
  const all = mergeInTimeOrder(stored, added);
  if (all.length <= TIMING_TRADE_LIMIT) return all;
  return all
    .map((trade, at) => ({ trade, at }))
    .sort((a, b) => b.trade.ts - a.trade.ts || a.at - b.at)
    .slice(0, TIMING_TRADE_LIMIT)
    .sort((a, b) => a.at - b.at)
    .map(({ trade }) => trade);
}

/** A wallet's stored trades by its id: [] for a wallet with none. */
export function sealedTradesReader(db: Connection): (walletId: number) => IdTimedTrade[] {
  const get = db
    .prepare<[number], Buffer>("SELECT trades FROM wallet_sealed_trades WHERE wallet_id = ?")
    .pluck();
  return (walletId) => {
    const blob = get.get(walletId);
    return blob === undefined ? [] : unpackSealedTrades(blob);
  };
}
