/**
 * coordinated_timing connections (METHODOLOGY §Funding graph): two wallets that entered the same
 * market on the same side within 60 seconds of each other, on at least 3 different markets.
 * An entry is a bet's first BUY on its side (wallet_bets.entry_ts). Two-sided positions (market
 * making) are left out: a quote on both sides is not a bet on one.
 */

import type { Connection } from "../db/open";

export const COORDINATION_WINDOW_MS = 60_000;
export const COORDINATION_MIN_MARKETS = 3;

/**
 * 0.30 at 3 shared markets, 0.03 more per further market, 0.49 from 10 on: below 0.5, because
 * timing alone is a heuristic lead (SPEC §4), rising with the number of coincidences.
 */
export function coordinationConfidence(markets: number): number {
  if (markets < COORDINATION_MIN_MARKETS) return 0;
  const raw = 0.3 + 0.03 * (markets - COORDINATION_MIN_MARKETS);
  return Math.round(Math.min(0.49, raw) * 100) / 100;
}

export interface Entry {
  marketId: number;
  side: string;
  ts: number;
  wallet: string;
}

export interface CoordinatedPair {
  /** a < b. */
  a: string;
  b: string;
  markets: number;
  firstSeen: number;
  lastSeen: number;
}

/**
 * Pairs of wallets with near-simultaneous entries on at least COORDINATION_MIN_MARKETS markets,
 * from entries in any order. A wallet holds one bet per market, so a pair meets at most once per
 * market and counting meetings counts markets. Entries are kept as flat number arrays per
 * (market, side): millions of bets fit without an object each.
 */
export function coordinatedPairs(entries: Iterable<Entry>): CoordinatedPair[] {
  const walletIds = new Map<string, number>();
  const wallets: string[] = [];
  // (market, side) → [ts, walletId, ts, walletId, …]
  const groups = new Map<string, number[]>();
  for (const e of entries) {
    let id = walletIds.get(e.wallet);
    if (id === undefined) {
      id = wallets.length;
      walletIds.set(e.wallet, id);
      wallets.push(e.wallet);
    }
    const key = `${e.marketId}|${e.side}`;
    const group = groups.get(key);
    if (group) group.push(e.ts, id);
    else groups.set(key, [e.ts, id]);
  }
  // Pair key lo * 2^26 + hi stays a safe integer for up to 2^26 wallets.
  const meetings = new Map<number, { count: number; first: number; last: number }>();
  for (const flat of groups.values()) {
    const order = Array.from({ length: flat.length / 2 }, (_, i) => i).sort(
      (a, b) => flat[2 * a]! - flat[2 * b]!,
    );
    let start = 0;
    for (let k = 0; k < order.length; k++) {
      const ts = flat[2 * order[k]!]!;
      const wallet = flat[2 * order[k]! + 1]!;
      while (ts - flat[2 * order[start]!]! > COORDINATION_WINDOW_MS) start++;
      for (let j = start; j < k; j++) {
        const otherTs = flat[2 * order[j]!]!;
        const other = flat[2 * order[j]! + 1]!;
        if (other === wallet) continue;
        const pairKey = Math.min(wallet, other) * 2 ** 26 + Math.max(wallet, other);
        const seen = meetings.get(pairKey);
        if (seen) {
          seen.count++;
          seen.first = Math.min(seen.first, otherTs);
          seen.last = Math.max(seen.last, ts);
        } else {
          meetings.set(pairKey, { count: 1, first: otherTs, last: ts });
        }
      }
    }
  }
  const pairs: CoordinatedPair[] = [];
  for (const [pairKey, m] of meetings) {
    if (m.count < COORDINATION_MIN_MARKETS) continue;
    const lo = Math.floor(pairKey / 2 ** 26);
    const [a, b] = [wallets[lo]!, wallets[pairKey - lo * 2 ** 26]!].sort();
    pairs.push({ a: a!, b: b!, markets: m.count, firstSeen: m.first, lastSeen: m.last });
  }
  return pairs;
}

/** Rebuilds timing_connections from wallet_bets; returns the number of coordinated pairs. */
export function rebuildTimingConnections(conn: Connection): number {
  // A plain table scan: SQLite's sort of millions of bets costs far more than grouping them here.
  const rows = conn
    .prepare(
      `SELECT market_id AS marketId, side, entry_ts AS ts, wallet FROM wallet_bets
        WHERE two_sided = 0`,
    )
    .iterate() as IterableIterator<Entry>;
  const pairs = coordinatedPairs(rows);
  conn.exec("DELETE FROM timing_connections");
  const insert = conn.prepare(
    `INSERT INTO timing_connections (address, confidence, last_seen, counterparty, markets, first_seen)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  for (const p of pairs) {
    const confidence = coordinationConfidence(p.markets);
    insert.run(p.a, confidence, p.lastSeen, p.b, p.markets, p.firstSeen);
    insert.run(p.b, confidence, p.lastSeen, p.a, p.markets, p.firstSeen);
  }
  return pairs.length;
}
