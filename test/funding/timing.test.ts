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
});
