import { describe, expect, it } from "vitest";
import { marketLookup } from "../../src/refresh/pass";
import type { MarketInfo } from "../../src/refresh/wallet-model";

const market = (id: number): MarketInfo => ({
  id,
  category: `c${id}`,
  resolvedOutcome: null,
  resolvedAt: null,
  compacted: false,
});

describe("marketLookup", () => {
  it("finds each market by its id, and nothing for an id it does not hold", () => {
    // Dense ids (SQLite's rowids, as markets get them) with a gap, then ids far apart.
    for (const ids of [
      [1, 2, 3, 5, 6],
      [7, 1_000_000_000, 42],
    ]) {
      const lookup = marketLookup(ids.map(market));
      for (const id of ids) expect(lookup(id)).toEqual(market(id));
      for (const id of [0, 4, -1, 8, 1.5, 2 ** 40]) {
        if (!ids.includes(id)) expect(lookup(id)).toBeUndefined();
      }
    }
    expect(marketLookup([])(1)).toBeUndefined();
  });
});
