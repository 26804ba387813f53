import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIDE_BETS_BY_SIZE_SQL, SIDE_BETS_OF_SIZE_SQL } from "../../src/read/correlated";
import { marketHoldersSql } from "../../src/read/market-positions";
import { SIDE_CODE_OF_OUTCOME } from "../../src/refresh/pass";
import { createTestApp, type TestApp } from "../helpers/app";
import { queryPlan } from "../helpers/plan";

/**
 * wallet_bets_by_market keys on (market_id, side_code, buy_usd DESC) (sql/0027). Each statement
 * that walks it must seek both the market and the side, and those that want the index's order
 * must get it without a sort: a busy market side holds tens of thousands of bets. A statement
 * comparing the generated `side` text instead would still prepare (its market prefix fits the
 * index), and sort every bet of the market.
 */
let t: TestApp;
beforeAll(() => {
  t = createTestApp();
});
afterAll(() => t.close());

const plan = (sql: string) => queryPlan(t.db.reader, sql);
const SEEK = /USING INDEX wallet_bets_by_market \(market_id=\? AND side_code=\?/;

describe("the statements on wallet_bets_by_market", () => {
  it("seek the market and the side, in the index's order where they want it", () => {
    for (const sql of [marketHoldersSql("b.buy_usd DESC"), SIDE_BETS_BY_SIZE_SQL]) {
      expect(plan(sql)).toMatch(SEEK);
      expect(plan(sql)).not.toContain("TEMP B-TREE");
    }
    // These order ties by address, which the index does not hold: they sort what they seek.
    for (const sql of [marketHoldersSql("b.buy_usd DESC, w.address"), SIDE_BETS_OF_SIZE_SQL]) {
      expect(plan(sql)).toMatch(SEEK);
    }
  });

  it("find the side asked for", () => {
    const code = t.db.reader.prepare(`SELECT ${SIDE_CODE_OF_OUTCOME} AS code`).pluck();
    expect([code.get("YES"), code.get("NO")]).toEqual([0, 1]);
  });
});
