import type { Bet } from "../../src/analytics/bets";
import type { Outcome } from "../../src/analytics/fill";

type TestBet = Bet & { move24h?: number | null };

/** A settled bet with only the fields a test cares about spelled out. */
export function bet(
  fields: Partial<TestBet> & {
    category: string | null;
    won: boolean | null;
    entryPrice: number | null;
  },
): TestBet {
  const side: Outcome = fields.side ?? "YES";
  return {
    wallet: "w",
    marketId: 0,
    side,
    entryTs: null,
    buyUsd: 100,
    netBuyUsd: 100,
    yesFlowUsd: side === "YES" ? 100 : 0,
    noFlowUsd: side === "NO" ? 100 : 0,
    volume: 100,
    fills: 1,
    twoSided: false,
    firstTs: 0,
    lastTs: 0,
    resolvedOutcome: fields.won === null ? null : fields.won ? side : side === "YES" ? "NO" : "YES",
    resolvedAt: null,
    hoursBeforeResolution: null,
    ...fields,
  };
}
