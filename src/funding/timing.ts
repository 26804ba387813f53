/**
 * coordinated_timing connections (docs/methodology.md, Funding graph): two wallets that entered the same
 * market on the same side within 60 seconds of each other, on at least 3 different markets.
 * An entry is a bet's first BUY on its side (wallet_bets.entry_ts). Two-sided positions (market
 * making) are left out: a quote on both sides is not a bet on one. Entries in a crowd (more than
 * 10 others on the same side within 60 s either way: a market opening, breaking news, a bot
 * swarm) are left out too: there, entering together says nothing about acting together, and
 * counting every pair in a crowd would cost a quadratic number of meetings.
 */

import type { Connection } from "../db/open";
import { doubled } from "../typed-arrays";

export const COORDINATION_WINDOW_MS = 60_000;
export const COORDINATION_MIN_MARKETS = 3;
export const COORDINATION_MAX_CROWD = 10;

/**
 * 0.30 at 3 shared markets, 0.03 more per further market, 0.49 from 10 on: below 0.5, because
 * timing alone is a heuristic lead, not evidence, rising with the number of coincidences.
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

/** One (market, side): its entries sorted by time, and which of them are in a crowd. */
interface Group {
  ts: Float64Array;
  wallet: Int32Array;
  crowded: Uint8Array;
}

/**
 * Pairs of wallets with near-simultaneous entries on at least COORDINATION_MIN_MARKETS markets,
 * from entries in any order. A wallet holds one bet per market, so a pair meets at most once per
 * market and counting meetings counts markets. Two passes: the first finds the wallets that met
 * anyone on at least 3 markets, the second counts pairs among those only, so the pair table
 * stays small however many bets there are.
 */
export function coordinatedPairs(entries: Iterable<Entry>): CoordinatedPair[] {
  const { groups, wallets } = groupEntries(entries);
  return pairsOf(groups, wallets);
}

function pairsOf(groups: Group[], wallets: string[]): CoordinatedPair[] {
  const metMarkets = new Uint32Array(wallets.length);
  for (const g of groups) {
    forEachMeeting(g, (a, b) => {
      // Counted at most once per market for each wallet: mark, then count the marks.
      g.crowded[a] = g.crowded[a]! | 2;
      g.crowded[b] = g.crowded[b]! | 2;
    });
    for (let k = 0; k < g.ts.length; k++) {
      if (g.crowded[k]! & 2) metMarkets[g.wallet[k]!]!++;
      g.crowded[k]! &= 1;
    }
  }
  const eligible = (k: number, g: Group) => metMarkets[g.wallet[k]!]! >= COORDINATION_MIN_MARKETS;
  // Pair key lo * 2^26 + hi stays a safe integer for up to 2^26 wallets.
  const pairKey = (g: Group, a: number, b: number) => {
    const [wa, wb] = [g.wallet[a]!, g.wallet[b]!];
    return Math.min(wa, wb) * 2 ** 26 + Math.max(wa, wb);
  };
  // Every meeting of two eligible wallets, as its pair's key, counted by sorting the keys: most
  // pairs meet once or twice (669k of them on the large world, for 123 pairs kept), and an
  // object per pair held about 100 bytes each where a key takes 8.
  let keys = new Float64Array(1 << 16);
  let meetings = 0;
  for (const g of groups) {
    forEachMeeting(g, (a, b) => {
      if (!eligible(a, g) || !eligible(b, g)) return;
      if (meetings === keys.length) keys = doubled(keys);
      keys[meetings++] = pairKey(g, a, b);
    });
  }
  const sorted = keys.subarray(0, meetings).sort();
  const markets = new Map<number, number>();
  for (let i = 0; i < sorted.length; ) {
    let j = i + 1;
    while (j < sorted.length && sorted[j] === sorted[i]) j++;
    if (j - i >= COORDINATION_MIN_MARKETS) markets.set(sorted[i]!, j - i);
    i = j;
  }
  // The kept pairs' first and last meetings, in one more walk over the meetings.
  const seen = new Map<number, { first: number; last: number }>();
  for (const g of groups) {
    forEachMeeting(g, (a, b) => {
      const key = pairKey(g, a, b);
      if (!markets.has(key)) return;
      const first = Math.min(g.ts[a]!, g.ts[b]!);
      const last = Math.max(g.ts[a]!, g.ts[b]!);
      const pair = seen.get(key);
      if (pair) {
        pair.first = Math.min(pair.first, first);
        pair.last = Math.max(pair.last, last);
      } else {
        seen.set(key, { first, last });
      }
    });
  }
  const pairs: CoordinatedPair[] = [];
  for (const [key, m] of seen) {
    const lo = Math.floor(key / 2 ** 26);
    const [a, b] = [wallets[lo]!, wallets[key - lo * 2 ** 26]!].sort();
    pairs.push({ a: a!, b: b!, markets: markets.get(key)!, firstSeen: m.first, lastSeen: m.last });
  }
  // In one order whatever order the entries came in.
  return pairs.sort((x, y) =>
    x.a < y.a ? -1 : x.a > y.a ? 1 : x.b < y.b ? -1 : x.b > y.b ? 1 : 0,
  );
}

/** Entries grouped by (market, side), each group sorted by time with its crowd flags set. */
function groupEntries(entries: Iterable<Entry>): { groups: Group[]; wallets: string[] } {
  const grouper = new EntryGrouper();
  for (const e of entries) grouper.add(e.marketId, e.side === "YES" ? 0 : 1, e.ts, e.wallet);
  return grouper.finish();
}

/**
 * Collects entries by (market, side) in typed arrays: a large installation has millions of bets,
 * and plain arrays of numbers (with an index array to sort them) held about 50 bytes per bet
 * at once, 450 MB for nine million. Entries go into one array per field (16 bytes each: time,
 * wallet number, group number), sized from `capacity` or doubled as needed; `finish` moves each
 * group's entries together in place (a bucket permutation: no second copy, where moving them
 * into new arrays held 28 bytes per bet at once, 250 MB in the large world's peak of memory),
 * and sorts each group's slice by time.
 */
class EntryGrouper<W = string> {
  private readonly walletIds = new Map<W, number>();
  private readonly wallets: W[] = [];
  /** market * 2 + side → group number, in order of first entry. */
  private readonly groupOf = new Map<number, number>();
  private readonly counts: number[] = [];
  private ts: Float64Array<ArrayBuffer>;
  private wallet: Int32Array<ArrayBuffer>;
  private group: Int32Array<ArrayBuffer>;
  private length = 0;

  /** `capacity`: how many entries to make room for at first (the arrays double when full). */
  constructor(capacity = 1024) {
    const room = Math.max(1, capacity);
    this.ts = new Float64Array(room);
    this.wallet = new Int32Array(room);
    this.group = new Int32Array(room);
  }

  /** `sideCode`: 0 for YES, 1 for NO (wallet_bets.side_code). */
  add(marketId: number, sideCode: number, ts: number, wallet: W): void {
    let id = this.walletIds.get(wallet);
    if (id === undefined) {
      id = this.wallets.length;
      this.walletIds.set(wallet, id);
      this.wallets.push(wallet);
    }
    const key = marketId * 2 + sideCode;
    let group = this.groupOf.get(key);
    if (group === undefined) {
      group = this.counts.length;
      this.groupOf.set(key, group);
      this.counts.push(0);
    }
    this.counts[group]!++;
    if (this.length === this.ts.length) {
      this.ts = doubled(this.ts);
      this.wallet = doubled(this.wallet);
      this.group = doubled(this.group);
    }
    this.ts[this.length] = ts;
    this.wallet[this.length] = id;
    this.group[this.length] = group;
    this.length++;
  }

  finish(): { groups: Group[]; wallets: W[] } {
    const { ts, wallet, group } = this;
    const starts: number[] = [];
    let total = 0;
    for (const count of this.counts) {
      starts.push(total);
      total += count;
    }
    // Each group's entries to its own range, in place: the entry at the next open place of a
    // group that is not its own is swapped to the next open place of its own group, so every
    // swap settles one entry for good. A group's order of entries is not kept; the time sort
    // below orders them, and what it finds (who met whom, when) does not depend on the order
    // of entries of the same time.
    const next = starts.slice();
    for (let g = 0; g < this.counts.length; g++) {
      const end = starts[g]! + this.counts[g]!;
      while (next[g]! < end) {
        const at = next[g]!;
        const owner = group[at]!;
        if (owner === g) {
          next[g] = at + 1;
          continue;
        }
        const to = next[owner]!;
        next[owner] = to + 1;
        const t = ts[to]!;
        ts[to] = ts[at]!;
        ts[at] = t;
        const w = wallet[to]!;
        wallet[to] = wallet[at]!;
        wallet[at] = w;
        group[at] = group[to]!;
        group[to] = owner;
      }
    }
    const groups: Group[] = [];
    this.counts.forEach((count, g) => {
      if (count < 2) return; // a single entry meets nobody
      const end = starts[g]! + count;
      groups.push(sortedGroup(ts.subarray(starts[g]!, end), wallet.subarray(starts[g]!, end)));
    });
    return { groups, wallets: this.wallets };
  }
}

/** Sorts one group's entries by time in place (ties in arrival order) and flags its crowds. */
function sortedGroup(ts: Float64Array, wallet: Int32Array): Group {
  const order = new Uint32Array(ts.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((a, b) => ts[a]! - ts[b]! || a - b);
  const arrivedTs = ts.slice();
  const arrivedWallet = wallet.slice();
  for (let k = 0; k < order.length; k++) {
    ts[k] = arrivedTs[order[k]!]!;
    wallet[k] = arrivedWallet[order[k]!]!;
  }
  const crowded = new Uint8Array(ts.length);
  let lo = 0;
  let hi = 0;
  for (let k = 0; k < ts.length; k++) {
    while (ts[k]! - ts[lo]! > COORDINATION_WINDOW_MS) lo++;
    while (hi < ts.length && ts[hi]! - ts[k]! <= COORDINATION_WINDOW_MS) hi++;
    if (hi - lo - 1 > COORDINATION_MAX_CROWD) crowded[k] = 1;
  }
  return { ts, wallet, crowded };
}

/** Calls `meet` for every two uncrowded entries of the group within the window of each other. */
function forEachMeeting(g: Group, meet: (a: number, b: number) => void): void {
  let start = 0;
  for (let k = 0; k < g.ts.length; k++) {
    while (g.ts[k]! - g.ts[start]! > COORDINATION_WINDOW_MS) start++;
    if (g.crowded[k]! & 1) continue;
    for (let j = start; j < k; j++) {
      if (g.crowded[j]! & 1 || g.wallet[j] === g.wallet[k]) continue;
      meet(j, k);
    }
  }
}

/**
 * The coordinated pairs of every stored bet (wallet_bets as `conn` reads it), each wallet named by
 * its address. Reads only: a worker thread runs it on a read-only connection of its own while
 * the writer goes on with the funding graph (coordinatedPairsInWorker, src/refresh/model-worker.ts).
 */
export function readCoordinatedPairs(conn: Connection): CoordinatedPair[] {
  // A plain table scan: SQLite's sort of millions of bets costs far more than grouping them here.
  // Bets name their wallet by id (sql/0012); each wallet's address is looked up once, after.
  // The stored columns, not the served `side` and `entry_ts` (sql/0021): generating those for
  // nine million bets, `side` as text, took 8.8 s of reading against 4.6 s (large world).
  // Room for every bet (two-sided ones are few): counted from wallet_bets_by_market, 0.1 s for
  // the large world's nine million, so the arrays are never copied to grow.
  const bets = conn.prepare("SELECT count(*) FROM wallet_bets").pluck().get() as number;
  const rows = conn
    .prepare(
      `SELECT market_id, side_code, first_ts + entry_offset, wallet_id FROM wallet_bets
        WHERE two_sided = 0`,
    )
    .raw()
    .iterate() as IterableIterator<[number, number, number, number]>;
  const grouper = new EntryGrouper<number>(bets);
  for (const [marketId, sideCode, ts, walletId] of rows) {
    grouper.add(marketId, sideCode, ts, walletId);
  }
  const { groups, wallets: walletIds } = grouper.finish();
  const addressOf = conn
    .prepare<[number], string>("SELECT address FROM wallet_ids WHERE id = ?")
    .pluck();
  return pairsOf(
    groups,
    walletIds.map((id) => addressOf.get(id)!),
  );
}

/** Replaces timing_connections with `pairs` (both directions); returns how many pairs. */
export function storeTimingConnections(conn: Connection, pairs: CoordinatedPair[]): number {
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
