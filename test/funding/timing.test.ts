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

  it("keeps a long burst's window correct", () => {
    // 3,000 entries a second apart in one market: each meets the 60 before it.
    const entries = Array.from({ length: 3_000 }, (_, i) => entry(1, "YES", i * 1_000, `0x${i}`));
    expect(coordinatedPairs(scrambled(entries))).toEqual([]);
    const repeated = [1, 2, 3].flatMap((m) =>
      Array.from({ length: 3_000 }, (_, i) => entry(m, "YES", i * 1_000, `0x${i}`)),
    );
    const pairs = coordinatedPairs(repeated);
    // Pairs i < j with j − i ≤ 60: every wallet with each of the (up to) 60 after it.
    expect(pairs.length).toBe(60 * 3_000 - (60 * 61) / 2);
  });
});
