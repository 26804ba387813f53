import { afterEach, describe, expect, it } from "vitest";
import { createFundingFacts } from "../../src/signals/funding-facts";
import { addr, rows, T0 } from "../funding/rows";
import { createTestApp, type TestApp } from "../helpers/app";

let t: TestApp | null = null;
afterEach(() => {
  t?.close();
  t = null;
});

/**
 * A scope's caches are bounded (src/signals/funding-facts.ts): past the bound it starts again.
 * Its answers must be those of a scope that reads everything afresh, also for a cluster read
 * across a clearing and a transfer stored after it.
 */
describe("funding facts in a scope that remembers few wallets", () => {
  it.each([2, 3, 4, 5, 8])("answers as a fresh read does, remembering %i", (remembered) => {
    t = createTestApp();
    const r = rows(t.db);
    const funder = addr("funder");
    const other = addr("other");
    const ring = Array.from({ length: 6 }, (_, i) => addr("ring", i));
    for (const [i, wallet] of ring.entries()) r.transfer(funder, wallet, 100, T0 + i);
    const small = createFundingFacts(t.db, remembered)();
    const fresh = () => createFundingFacts(t!.db)();
    const expectSame = () => {
      const now = fresh();
      for (const wallet of [...ring, funder, other]) {
        expect(small.cluster(wallet), wallet).toEqual(now.cluster(wallet));
        expect(small.firstFundedAt(wallet), wallet).toBe(now.firstFundedAt(wallet));
      }
    };
    expectSame();
    expect(small.cluster(ring[0]!).size).toBe(6);
    // A ring member's first funding moves to another sender (an earlier transfer), which
    // takes it out of the cluster: the scope hears of it as the ingest path reports it.
    r.transfer(other, ring[3]!, 50, T0 - 1);
    const moved = { from_address: other, to_address: ring[3]!, token: "USDC" };
    small.transfersStored([moved]);
    expectSame();
    expect(small.cluster(ring[0]!).size).toBe(5);
  });
});
