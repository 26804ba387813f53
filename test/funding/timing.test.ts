import { describe, expect, it } from "vitest";
import { coordinatedPairs, coordinationConfidence, type Entry } from "../../src/funding/timing";

const entry = (marketId: number, side: string, ts: number, wallet: string): Entry => ({
  marketId,
  side,
  ts,
  wallet,
});

/** The entries in a scrambled but fixed order: the pair finder must not depend on it. */
const scrambled = (entries: Entry[]) =>
  entries
    .map((e, i) => ({ e, k: (i * 7919) % 104_729 }))
    .sort((x, y) => x.k - y.k)
    .map((x) => x.e);

describe("coordination confidence", () => {
  it("rises from 0.30 at 3 markets by 0.03 a market and stays below 0.5", () => {
    expect([2, 3, 4, 5, 9, 10, 50].map(coordinationConfidence)).toEqual([
      0, 0.3, 0.33, 0.36, 0.48, 0.49, 0.49,
    ]);
  });
});

describe("coordinatedPairs", () => {
  it("counts markets where two wallets entered the same side within 60 s", () => {
    const entries: Entry[] = [];
    for (let m = 1; m <= 5; m++) {
      entries.push(entry(m, "YES", m * 1e6, "0xa"), entry(m, "YES", m * 1e6 + 60_000, "0xb"));
      // 0xc is 60.001 s behind 0xa: outside the window, but within it of 0xb.
      entries.push(entry(m, "YES", m * 1e6 + 60_001, "0xc"));
      // Same time, other side: never coordinated.
      entries.push(entry(m, "NO", m * 1e6, "0xd"));
    }
    const pairs = coordinatedPairs(scrambled(entries));
    expect(pairs.sort((x, y) => x.a.localeCompare(y.a) || x.b.localeCompare(y.b))).toEqual([
      { a: "0xa", b: "0xb", markets: 5, firstSeen: 1e6, lastSeen: 5e6 + 60_000 },
      { a: "0xb", b: "0xc", markets: 5, firstSeen: 1e6 + 60_000, lastSeen: 5e6 + 60_001 },
    ]);
  });

  it("needs three markets", () => {
    const entries = [1, 2].flatMap((m) => [entry(m, "NO", 0, "0xa"), entry(m, "NO", 1, "0xb")]);
    expect(coordinatedPairs(scrambled(entries))).toEqual([]);
    const three = [1, 2, 3].flatMap((m) => [entry(m, "NO", 0, "0xb"), entry(m, "NO", 1, "0xa")]);
    expect(coordinatedPairs(scrambled(three))).toEqual([
      { a: "0xa", b: "0xb", markets: 3, firstSeen: 0, lastSeen: 1 },
    ]);
  });

  it("keeps a long stream's window correct", () => {
    // 3,000 wallets 12 s apart, the same in three markets: each meets the 5 after it.
    const stream = [1, 2, 3].flatMap((m) =>
      Array.from({ length: 3_000 }, (_, i) => entry(m, "YES", i * 12_000, `0x${i}`)),
    );
    const pairs = coordinatedPairs(scrambled(stream));
    expect(pairs.length).toBe(5 * 3_000 - 15);
    expect(pairs.every((p) => p.markets === 3)).toBe(true);
  });

  it("ignores crowds: more than 10 others on the same side within 60 s", () => {
    const crowd = (size: number) =>
      [1, 2, 3].flatMap((m) =>
        Array.from({ length: size }, (_, i) => entry(m, "NO", m * 1e7 + i * 1_000, `0x${i}`)),
      );
    expect(coordinatedPairs(crowd(11))).toHaveLength(55);
    expect(coordinatedPairs(crowd(12))).toEqual([]);
  });

  it("counts a pair only where both wallets met someone on three markets", () => {
    // 0xa and 0xb meet on markets 1-3; 0xc meets 0xa on market 4 only.
    const entries = [1, 2, 3].flatMap((m) => [
      entry(m, "YES", 0, "0xa"),
      entry(m, "YES", 5, "0xb"),
    ]);
    entries.push(entry(4, "YES", 0, "0xa"), entry(4, "YES", 1, "0xc"));
    expect(coordinatedPairs(scrambled(entries))).toEqual([
      { a: "0xa", b: "0xb", markets: 3, firstSeen: 0, lastSeen: 5 },
    ]);
  });

  it("finds what the definition says, with many groups, equal times and any entry order", () => {
    // A seeded stream: 40 markets, 60 wallets, entries on a coarse clock (many equal times),
    // more than the grouper's first room (1,024 entries), so its arrays grow and its groups are
    // moved into place from all over them.
    let seed = 7;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n); // the high bits: an LCG's low bits cycle fast
    };
    const entries: Entry[] = [];
    const taken = new Set<string>();
    while (entries.length < 1_500) {
      const [m, w] = [random(40), random(60)];
      if (taken.has(`${m}/${w}`)) continue; // one bet per wallet and market
      taken.add(`${m}/${w}`);
      entries.push(entry(m, random(2) ? "YES" : "NO", random(60) * 15_000, `0x${w}`));
    }
    // The definition, directly: every two entries of a (market, side) within the window, neither
    // in a crowd; pairs of wallets that each met someone on 3 markets, meeting on 3 themselves.
    const within = (a: Entry, b: Entry) =>
      a.marketId === b.marketId && a.side === b.side && Math.abs(a.ts - b.ts) <= 60_000;
    const crowd = new Set(
      entries.filter((e) => entries.filter((o) => o !== e && within(o, e)).length > 10),
    );
    const meetings = entries.flatMap((a, i) =>
      entries
        .slice(i + 1)
        .filter((b) => b.wallet !== a.wallet && within(a, b) && !crowd.has(a) && !crowd.has(b))
        .map((b) => [a, b] as const),
    );
    const metOn = new Map<string, Set<number>>();
    for (const [a, b] of meetings) {
      for (const w of [a.wallet, b.wallet]) {
        metOn.set(w, (metOn.get(w) ?? new Set()).add(a.marketId));
      }
    }
    const eligible = (w: string) => (metOn.get(w)?.size ?? 0) >= 3;
    const byPair = new Map<string, { markets: number; first: number; last: number }>();
    for (const [x, y] of meetings) {
      if (!eligible(x.wallet) || !eligible(y.wallet)) continue;
      const [a, b] = [x.wallet, y.wallet].sort();
      const key = `${a} ${b}`;
      const seen = byPair.get(key) ?? { markets: 0, first: Infinity, last: -Infinity };
      byPair.set(key, {
        markets: seen.markets + 1,
        first: Math.min(seen.first, x.ts, y.ts),
        last: Math.max(seen.last, x.ts, y.ts),
      });
    }
    const expected = [...byPair]
      .filter(([, p]) => p.markets >= 3)
      .map(([key, p]) => {
        const [a, b] = key.split(" ");
        return { a: a!, b: b!, markets: p.markets, firstSeen: p.first, lastSeen: p.last };
      })
      .sort((x, y) => x.a.localeCompare(y.a) || x.b.localeCompare(y.b));
    expect(expected.length).toBeGreaterThan(10);
    expect(coordinatedPairs(entries)).toEqual(expected);
    expect(coordinatedPairs(scrambled(entries))).toEqual(expected);
  });
});
