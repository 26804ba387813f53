import { afterEach, describe, expect, it } from "vitest";
import { USDC_E } from "../../src/ingest/polymarket/contracts";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { transferLog, txHash, units } from "../fixtures-polymarket/chain";
import { SimWorld } from "../simulator/world";
import { closeSimulated, simulate } from "./harness";

/** Funding that precedes a wallet's first fill, read back to the horizon when it is first seen. */

const NOW = "2026-07-18T00:00:00Z";
const DAY = 86_400_000;
const FUNDER = `0x${"f".repeat(40)}`;
afterEach(closeSimulated);

describe("funding before the first fill", () => {
  it("stores inbound transfers within the horizon before a new wallet's first fill, once", async () => {
    const { h, sim } = await simulate(
      NOW,
      (now) => new SimWorld({ events: 5, marketsPerEvent: 1, wallets: 1, now }),
      // A generous node, so the 30-day scan takes a few requests.
      { rpcMaxBlockRange: 500_000 },
    );
    const now = h.t.clock.now();
    const world = sim.world;
    const trader = world.wallets[0]!;
    const stranger = `0x${"e".repeat(40)}`;
    const at = (ms: number, label: string, to: string, amount: number) =>
      transferLog(
        USDC_E,
        { from: FUNDER, to, amount: units(amount) },
        {
          block: sim.blockAt(ms),
          tx: txHash(label),
          logIndex: 0,
        },
      );
    sim.extraLogs.push(
      at(now - 40 * DAY, "too old", trader, 1_000),
      at(now - 5 * DAY, "funding", trader, 2_500),
      at(now - 2 * DAY, "not a trader", stranger, 700),
    );
    world.emit(3, now - 60_000);
    const options = {
      dataUrl: sim.url,
      gammaUrl: sim.url,
      rpcUrl: sim.rpcUrl,
      since: now - 3_600_000,
      confirmations: 2,
      transferChunk: 500_000,
      leaderboardDepth: 10,
    };
    h.t.clock.advance(60_000);
    const first = await runPolymarketRound(h.deps, options);
    expect(first.ok).toBe(true);
    const transfers = () =>
      h.t.db.reader
        .prepare("SELECT tx_hash, from_address, to_address, amount FROM transfers")
        .all();
    expect(transfers()).toEqual([
      { tx_hash: txHash("funding"), from_address: FUNDER, to_address: trader, amount: 2_500 },
    ]);
    const again = await runPolymarketRound(h.deps, options);
    expect(again.ok).toBe(true);
    expect(transfers()).toHaveLength(1);
    expect(h.t.db.reader.prepare("SELECT wallet FROM wallet_funding_scans").pluck().all()).toEqual([
      trader,
    ]);
  });
});
