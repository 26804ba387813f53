import { keccak256, toEventSelector, toHex } from "viem";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PolymarketOptions } from "../../src/ingest/polymarket/context";
import {
  NATIVE_USDC,
  ORDER_FILLED_V1_SIGNATURE,
  ORDER_FILLED_V1_TOPIC,
  ORDER_FILLED_V2_SIGNATURE,
  ORDER_FILLED_V2_TOPIC,
  PUSD,
  TRANSFER_SIGNATURE,
  TRANSFER_TOPIC,
  USDC_E,
  V1_EXCHANGE,
  V1_NEG_RISK_EXCHANGE,
  V2_EXCHANGE,
  V2_NEG_RISK_EXCHANGE,
  ZERO_ADDRESS,
} from "../../src/ingest/polymarket/contracts";
import { syntheticLogIndex } from "../../src/ingest/polymarket/data-api";
import {
  decodeFill,
  decodeTransfer,
  fillToTrade,
  isTakerSummary,
  type RpcLog,
  transferToRow,
} from "../../src/ingest/polymarket/fills";
import { runPolymarketRound } from "../../src/ingest/polymarket/round";
import { STATE_KEYS, tokenKey } from "../../src/ingest/polymarket/state";
import { transferLog, txHash, units, v1Fill, v2Fill } from "../fixtures-polymarket/chain";
import { realGammaCaptures } from "../fixtures-polymarket/payloads";
import {
  type ApiServer,
  type RpcLogRecord,
  type RpcServer,
  startApiServer,
  startRpcServer,
} from "../fixtures-polymarket/servers";
import { count, type Harness, harness, stateOf, storedTrades } from "./harness";

const wallet = (digit: string) => `0x${digit.repeat(40)}`;
const A = wallet("a");
const B = wallet("b");
const C = wallet("c");
const D = wallet("d");
const E = wallet("e");
const F = wallet("f");
const M1 = wallet("1");
const M2 = wallet("2");
const M3 = wallet("3");
const M4 = wallet("4");
const FUNDER = wallet("5");
const OUTSIDER = wallet("6");
const STRANGER = wallet("7");

// Real markets and their real outcome tokens (Up = YES, Down = NO).
const [btc0, btc1, btc2] = realGammaCaptures();
const up0 = BigInt(btc0!.token_ids[0]);
const down0 = BigInt(btc0!.token_ids[1]);
const down1 = BigInt(btc1!.token_ids[1]);
const up2 = BigInt(btc2!.token_ids[0]);

const hexLog = (r: RpcLogRecord): RpcLog => ({
  ...r,
  blockNumber: `0x${r.blockNumber.toString(16)}`,
  logIndex: `0x${r.logIndex.toString(16)}`,
});

/**
 * Four matches, one per exchange of both eras; each appears from both sides (the resting
 * orders' fills and the aggressor's summary, whose taker is the exchange).
 */
function matches(): RpcLogRecord[] {
  const tx1 = txHash("match 1");
  const tx2 = txHash("match 2");
  const tx3 = txHash("match 3");
  const tx4 = txHash("match 4");
  return [
    // V1: A buys 100 Up at 0.60 from two resting sellers (60 and 40 shares).
    v1Fill(
      V1_EXCHANGE,
      {
        maker: M1,
        taker: A,
        makerAssetId: up0,
        takerAssetId: 0n,
        makerAmount: units(60),
        takerAmount: units(36),
      },
      { block: 9000, tx: tx1, logIndex: 0 },
    ),
    v1Fill(
      V1_EXCHANGE,
      {
        maker: M2,
        taker: A,
        makerAssetId: up0,
        takerAssetId: 0n,
        makerAmount: units(40),
        takerAmount: units(24),
      },
      { block: 9000, tx: tx1, logIndex: 1 },
    ),
    v1Fill(
      V1_EXCHANGE,
      {
        maker: A,
        taker: V1_EXCHANGE,
        makerAssetId: 0n,
        takerAssetId: up0,
        makerAmount: units(60),
        takerAmount: units(100),
      },
      { block: 9000, tx: tx1, logIndex: 2 },
    ),
    // V1 neg risk: B sells 20 Down at 0.25 to a resting buyer.
    v1Fill(
      V1_NEG_RISK_EXCHANGE,
      {
        maker: M1,
        taker: B,
        makerAssetId: 0n,
        takerAssetId: down1,
        makerAmount: units(5),
        takerAmount: units(20),
      },
      { block: 9100, tx: tx2, logIndex: 5 },
    ),
    v1Fill(
      V1_NEG_RISK_EXCHANGE,
      {
        maker: B,
        taker: V1_NEG_RISK_EXCHANGE,
        makerAssetId: down1,
        takerAssetId: 0n,
        makerAmount: units(20),
        takerAmount: units(5),
      },
      { block: 9100, tx: tx2, logIndex: 6 },
    ),
    // V2: C sells 50 Down at 0.30 to a resting buyer.
    v2Fill(
      V2_EXCHANGE,
      {
        maker: M3,
        taker: C,
        side: 0,
        tokenId: down0,
        makerAmount: units(15),
        takerAmount: units(50),
      },
      { block: 9200, tx: tx3, logIndex: 0 },
    ),
    v2Fill(
      V2_EXCHANGE,
      {
        maker: C,
        taker: V2_EXCHANGE,
        side: 1,
        tokenId: down0,
        makerAmount: units(50),
        takerAmount: units(15),
      },
      { block: 9200, tx: tx3, logIndex: 1 },
    ),
    // V2 neg risk: D buys 10 Up at 0.90 from a resting seller.
    v2Fill(
      V2_NEG_RISK_EXCHANGE,
      { maker: M4, taker: D, side: 1, tokenId: up2, makerAmount: units(10), takerAmount: units(9) },
      { block: 9300, tx: tx4, logIndex: 3 },
    ),
    v2Fill(
      V2_NEG_RISK_EXCHANGE,
      {
        maker: D,
        taker: V2_NEG_RISK_EXCHANGE,
        side: 0,
        tokenId: up2,
        makerAmount: units(9),
        takerAmount: units(10),
      },
      { block: 9300, tx: tx4, logIndex: 4 },
    ),
  ];
}

/** A fill of a token no market lists, and one too recent to be confirmed. */
function stragglers(): RpcLogRecord[] {
  return [
    v2Fill(
      V2_EXCHANGE,
      {
        maker: F,
        taker: V2_EXCHANGE,
        side: 0,
        tokenId: 12345n,
        makerAmount: units(1),
        takerAmount: units(2),
      },
      { block: 9400, tx: txHash("unknown token"), logIndex: 0 },
    ),
    v2Fill(
      V2_EXCHANGE,
      {
        maker: E,
        taker: V2_EXCHANGE,
        side: 0,
        tokenId: up0,
        makerAmount: units(7),
        takerAmount: units(10),
      },
      { block: 9950, tx: txHash("recent"), logIndex: 0 },
    ),
  ];
}

function transfers(): RpcLogRecord[] {
  return [
    transferLog(
      USDC_E,
      { from: FUNDER, to: A, amount: units(250) },
      { block: 8500, tx: txHash("fund A"), logIndex: 0 },
    ),
    transferLog(
      PUSD,
      { from: FUNDER, to: C, amount: units(100) },
      { block: 8600, tx: txHash("fund C"), logIndex: 1 },
    ),
    transferLog(
      PUSD,
      { from: ZERO_ADDRESS, to: A, amount: units(250) },
      { block: 8700, tx: txHash("wrap"), logIndex: 0 },
    ),
    transferLog(
      USDC_E,
      { from: V1_EXCHANGE, to: A, amount: units(10) },
      { block: 9001, tx: txHash("settle"), logIndex: 0 },
    ),
    transferLog(
      NATIVE_USDC,
      { from: A, to: OUTSIDER, amount: units(40) },
      { block: 9500, tx: txHash("withdraw"), logIndex: 2 },
    ),
    transferLog(
      USDC_E,
      { from: A, to: C, amount: units(5) },
      { block: 9600, tx: txHash("A to C"), logIndex: 0 },
    ),
    transferLog(
      USDC_E,
      { from: FUNDER, to: STRANGER, amount: units(7) },
      { block: 9700, tx: txHash("stranger"), logIndex: 0 },
    ),
  ];
}

describe("event signatures", () => {
  it("match the published topic0 of both eras and ERC-20 Transfer", () => {
    expect(toEventSelector(ORDER_FILLED_V1_SIGNATURE)).toBe(ORDER_FILLED_V1_TOPIC);
    expect(toEventSelector(ORDER_FILLED_V2_SIGNATURE)).toBe(ORDER_FILLED_V2_TOPIC);
    expect(toEventSelector(TRANSFER_SIGNATURE)).toBe(TRANSFER_TOPIC);
    expect(
      keccak256(
        toHex("OrderFilled(bytes32,address,address,uint256,uint256,uint256,uint256,uint256)"),
      ),
    ).toBe(ORDER_FILLED_V1_TOPIC);
    expect(
      keccak256(
        toHex(
          "OrderFilled(bytes32,address,address,uint8,uint256,uint256,uint256,uint256,bytes32,bytes32)",
        ),
      ),
    ).toBe(ORDER_FILLED_V2_TOPIC);
  });
});

describe("decoding fills", () => {
  const logs = matches().map(hexLog);

  it("reads a V1 buy (maker pays collateral) and a V1 sell", () => {
    const buy = decodeFill(logs[2]!);
    expect(buy).toEqual({
      ok: true,
      value: {
        era: "v1",
        exchange: V1_EXCHANGE,
        tx_hash: txHash("match 1"),
        log_index: 2,
        block: 9000,
        maker: A,
        taker: V1_EXCHANGE,
        side: "BUY",
        token_id: up0.toString(),
        usd: 60,
        shares: 100,
      },
    });
    const sell = decodeFill(logs[4]!);
    expect(sell.ok && sell.value).toMatchObject({
      side: "SELL",
      token_id: down1.toString(),
      usd: 5,
      shares: 20,
      maker: B,
    });
  });

  it("reads V2's side field: 0 buy, 1 sell", () => {
    const sell = decodeFill(logs[6]!);
    expect(sell.ok && sell.value).toMatchObject({
      era: "v2",
      side: "SELL",
      usd: 15,
      shares: 50,
      maker: C,
      taker: V2_EXCHANGE,
    });
    const restingBuy = decodeFill(logs[5]!);
    expect(restingBuy.ok && restingBuy.value).toMatchObject({
      side: "BUY",
      usd: 15,
      shares: 50,
      maker: M3,
      taker: C,
    });
  });

  it("counts each match once: only the aggressors' summaries, half the naive volume", () => {
    const fills = logs.map((log) => {
      const fill = decodeFill(log);
      if (!fill.ok) throw new Error(fill.reason);
      return fill.value;
    });
    const naive = fills.reduce((sum, f) => sum + f.usd, 0);
    const kept = fills.filter(isTakerSummary);
    expect(kept.map((f) => f.maker)).toEqual([A, B, C, D]);
    expect(kept.reduce((sum, f) => sum + f.usd, 0)).toBe(89);
    expect(naive).toBe(178);
  });

  it("prices a fill as usd / shares and refuses an impossible price", () => {
    const fill = decodeFill(logs[2]!);
    if (!fill.ok) throw new Error(fill.reason);
    const trade = fillToTrade(fill.value, { market_id: 7, outcome: "YES" }, 1_000);
    expect(trade).toEqual({
      ok: true,
      value: {
        tx_hash: txHash("match 1"),
        log_index: 2,
        wallet: A,
        market_id: 7,
        outcome: "YES",
        side: "BUY",
        price: 0.6,
        size: 100,
        usd_value: 60,
        ts: 1_000,
      },
    });
    const bad = fillToTrade({ ...fill.value, usd: 150 }, { market_id: 7, outcome: "YES" }, 1_000);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.reason).toContain(`fill ${txHash("match 1")}#2: price 1.5`);
  });

  it("refuses a log that is not an OrderFilled, naming it", () => {
    const transfer = hexLog(transfers()[0]!);
    const result = decodeFill(transfer);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(`log ${txHash("fund A")}#0 (block 8500)`);
  });

  it("turns collateral transfers into funding rows, leaving out settlement and mints", () => {
    const rows = transfers().map((r) => {
      const t = decodeTransfer(hexLog(r));
      if (!t.ok) throw new Error(t.reason);
      return transferToRow(t.value, 5);
    });
    expect(rows[0]).toEqual({
      tx_hash: txHash("fund A"),
      log_index: 0,
      from_address: FUNDER,
      to_address: A,
      token: "USDC",
      amount: 250,
      ts: 5,
    });
    expect(rows[1]).toMatchObject({ token: "USDC", amount: 100, to_address: C });
    expect(rows[2]).toBeNull(); // pUSD minted from the zero address
    expect(rows[3]).toBeNull(); // the exchange settling a trade
    expect(rows[4]).toMatchObject({ from_address: A, to_address: OUTSIDER, amount: 40 });
  });
});

describe("chain source", () => {
  let api: ApiServer;
  let rpc: RpcServer;
  const open: Harness[] = [];
  const head = 10_000;

  beforeEach(async () => {
    api = await startApiServer({
      markets: realGammaCaptures().map((c) => c.raw),
      trades: [],
      leaderboard: [],
    });
    const now = Date.parse("2026-07-24T12:00:00Z");
    rpc = await startRpcServer({
      head,
      genesisSeconds: now / 1000 - 2 * head,
      logs: [...matches(), ...stragglers(), ...transfers()],
    });
  });
  afterEach(async () => {
    await api.close();
    await rpc.close();
    for (const h of open.splice(0)) h.t.close();
  });

  function fresh(): Harness {
    const h = harness("2026-07-24T12:00:00Z");
    open.push(h);
    return h;
  }

  /** Block n's time, as the node reports it. */
  const blockMs = (n: number) => (rpc.genesisSeconds + 2 * n) * 1000;

  const options = (extra: Partial<PolymarketOptions> = {}): PolymarketOptions => ({
    dataUrl: api.url,
    gammaUrl: api.url,
    rpcUrl: rpc.url,
    since: blockMs(8000),
    listMarkets: false,
    blockChunk: 300,
    transferChunk: 1000,
    transferLagBlocks: 0,
    leaderboardDepth: 50,
    ...extra,
  });

  it("stores each match once, on the aggressor's side, for both eras", async () => {
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.ok).toBe(true);
    expect(result.summary).toMatchObject({
      source: "chain",
      trades_new: 4,
      maker_fills_skipped: 0,
      unknown_tokens: 1,
      head_block: head,
      next_block: head - 64 + 1,
      // The newest stored block is 64 confirmations (2 s each) old.
      lag_seconds: 128,
    });
    const trades = storedTrades(h.t);
    const byWallet = Object.fromEntries(trades.map((t) => [t.wallet, t]));
    expect(Object.keys(byWallet).sort()).toEqual([A, B, C, D]);
    // The key every source shares: the data API's synthetic index of (tx, token, side, wallet).
    expect(byWallet[A]).toEqual({
      tx_hash: txHash("match 1"),
      log_index: syntheticLogIndex(txHash("match 1"), up0.toString(), "BUY", A),
      wallet: A,
      condition_id: btc0!.condition_id,
      outcome: "YES",
      side: "BUY",
      price: 0.6,
      size: 100,
      usd_value: 60,
      ts: blockMs(9000),
    });
    expect(byWallet[B]).toMatchObject({
      condition_id: btc1!.condition_id,
      outcome: "NO",
      side: "SELL",
      price: 0.25,
      size: 20,
    });
    expect(byWallet[C]).toMatchObject({
      condition_id: btc0!.condition_id,
      outcome: "NO",
      side: "SELL",
      price: 0.3,
      usd_value: 15,
    });
    expect(byWallet[D]).toMatchObject({
      condition_id: btc2!.condition_id,
      outcome: "YES",
      side: "BUY",
      price: 0.9,
    });
    expect(trades.reduce((sum, t) => sum + t.usd_value, 0)).toBe(89);
    // The token map outlives the round, for later fills of the same markets.
    expect(
      h.t.db.reader
        .prepare("SELECT value FROM ingest_state WHERE key = ?")
        .pluck()
        .get(tokenKey(up0.toString())),
    ).toBe(`${btc0!.condition_id}:0`);
    // The markets came from Gamma by token id, with their real Up/Down resolution.
    expect(count(h.t, "markets")).toBe(3);
  });

  it("does not double the volume when the node ignores the taker filter", async () => {
    rpc.ignoreTopics = true;
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.summary.maker_fills_skipped).toBe(5);
    expect(storedTrades(h.t).reduce((sum, t) => sum + t.usd_value, 0)).toBe(89);
  });

  it("stores funding transfers of the trading wallets, in and out, once each", async () => {
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options());
    expect(result.summary.transfers_new).toBe(4);
    const rows = h.t.db.reader
      .prepare("SELECT from_address, to_address, token, amount, ts FROM transfers ORDER BY ts")
      .all();
    expect(rows).toEqual([
      { from_address: FUNDER, to_address: A, token: "USDC", amount: 250, ts: blockMs(8500) },
      { from_address: FUNDER, to_address: C, token: "USDC", amount: 100, ts: blockMs(8600) },
      { from_address: A, to_address: OUTSIDER, token: "USDC", amount: 40, ts: blockMs(9500) },
      { from_address: A, to_address: C, token: "USDC", amount: 5, ts: blockMs(9600) },
    ]);
    // Wallet labels for the platform's own contracts, so they never count as funders.
    const label = h.t.db.reader.prepare("SELECT kind FROM labels WHERE address = ?").pluck();
    expect(label.get(V2_EXCHANGE)).toBe("platform");
  });

  it("keeps unconfirmed blocks for a later round and re-reads the buffer idempotently", async () => {
    const h = fresh();
    await runPolymarketRound(h.deps, options());
    expect(storedTrades(h.t).map((t) => t.wallet)).not.toContain(E);
    expect(stateOf(h.t, STATE_KEYS.fills)).toMatchObject({ start_block: 8000, next_block: 9937 });

    rpc.head = 10_050;
    rpc.calls.length = 0;
    const next = await runPolymarketRound(h.deps, options());
    expect(next.summary.trades_new).toBe(1);
    expect(storedTrades(h.t).map((t) => t.wallet)).toContain(E);
    const firstRange = rpc.calls.find((c) => c.method === "eth_getLogs")!.params[0] as {
      fromBlock: string;
    };
    expect(Number.parseInt(firstRange.fromBlock, 16)).toBe(9937 - 64);

    // The next round re-reads 9987 - 64 = 9923 onwards: E's fill again, stored once.
    const third = await runPolymarketRound(h.deps, options());
    expect(third.summary).toMatchObject({ trades_new: 0, transfers_new: 0, trades_present: 1 });
    expect(count(h.t, "trades")).toBe(5);
  });

  it("resumes after a crash after range k with the same rows as a clean run", async () => {
    const clean = fresh();
    await runPolymarketRound(clean.deps, options());
    const h = fresh();
    await expect(
      runPolymarketRound(
        h.deps,
        options({
          onPage: (p) => {
            if (p.stage === "fills" && p.page === 4) throw new Error("killed");
          },
        }),
      ),
    ).rejects.toThrow("killed");
    // Ranges 8000-8299, 8300-8599, 8600-8899, 8900-9199: the first two matches.
    expect(storedTrades(h.t).map((t) => t.wallet)).toEqual(
      storedTrades(clean.t)
        .filter((t) => t.ts <= blockMs(9199))
        .map((t) => t.wallet),
    );
    expect(stateOf(h.t, STATE_KEYS.fills)).toMatchObject({ start_block: 8000, next_block: 9200 });
    const resumed = await runPolymarketRound(h.deps, options());
    expect(resumed.ok).toBe(true);
    expect(storedTrades(h.t)).toEqual(storedTrades(clean.t));
  });

  it("splits a block range the node refuses as too large", async () => {
    rpc.maxRange = 100;
    const h = fresh();
    const result = await runPolymarketRound(h.deps, options({ blockChunk: 1000 }));
    expect(result.ok).toBe(true);
    expect(result.summary.trades_new).toBe(4);
    const ranges = rpc.calls
      .filter((c) => c.method === "eth_getLogs")
      .map((c) => c.params[0] as { fromBlock: string; toBlock: string })
      .map((f) => Number.parseInt(f.toBlock, 16) - Number.parseInt(f.fromBlock, 16) + 1);
    expect(Math.max(...ranges)).toBeGreaterThan(100);
    expect(ranges.some((n) => n <= 100)).toBe(true);
  });

  it("starts at the first block at or after --since", async () => {
    const h = fresh();
    await runPolymarketRound(h.deps, options({ since: blockMs(9150) - 1000 }));
    expect(stateOf(h.t, STATE_KEYS.fills)).toMatchObject({ start_block: 9150 });
    expect(
      storedTrades(h.t)
        .map((t) => t.wallet)
        .sort(),
    ).toEqual([C, D]);
  });
});
