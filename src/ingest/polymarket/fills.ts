import { decodeEventLog, type Hex } from "viem";
import type { TradeSide } from "../../domain";
import type { Result } from "../../result";
import type { NewTrade, NewTransfer, Outcome } from "../ingest";
import {
  COLLATERAL_TOKENS,
  EXCHANGES,
  ORDER_FILLED_V1_ABI,
  ORDER_FILLED_V1_TOPIC,
  ORDER_FILLED_V2_ABI,
  ORDER_FILLED_V2_TOPIC,
  SETTLEMENT_ADDRESSES,
  TRANSFER_ABI,
  TRANSFER_TOPIC,
  UNIT,
} from "./contracts";

/**
 * On-chain logs → fills and transfers (pure). A fill's wallet is always the event's `maker`:
 * the owner of the order that filled (the proxy or Safe wallet the data API calls
 * `proxyWallet`).
 *
 * Counting each match once: a match emits one OrderFilled per resting order (maker = the
 * resting order's owner, taker = the aggressor) plus one summary for the aggressor's own order
 * whose `taker` is the exchange contract. We keep only the summaries (taker is an exchange):
 * one row per taker order, on the taker's side, which is exactly what the data API's `/trades`
 * serves by default, so both sources count volume alike. Resting (maker) fills are not stored.
 */

/** A log as eth_getLogs returns it (quantities hex-encoded). */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  transactionHash: string;
  logIndex: string;
  /** Some nodes add the block's time (hex seconds); saves a block lookup when present. */
  blockTimestamp?: string;
  removed?: boolean;
}

export interface Fill {
  era: "v1" | "v2";
  exchange: string;
  tx_hash: string;
  log_index: number;
  block: number;
  maker: string;
  taker: string;
  side: TradeSide;
  /** The outcome token id, decimal. */
  token_id: string;
  /** Collateral paid or received, in USD. */
  usd: number;
  shares: number;
}

const hexNumber = (hex: string) => Number.parseInt(hex, 16);
const units = (value: bigint) => Number(value) / UNIT;

/** Names a log in messages: where to find it on a block explorer. */
export const describeLog = (log: RpcLog) =>
  `log ${log.transactionHash}#${hexNumber(log.logIndex)} (block ${hexNumber(log.blockNumber)})`;

export function decodeFill(log: RpcLog): Result<Fill> {
  const topic0 = log.topics[0]?.toLowerCase();
  const base = {
    exchange: log.address.toLowerCase(),
    tx_hash: log.transactionHash.toLowerCase(),
    log_index: hexNumber(log.logIndex),
    block: hexNumber(log.blockNumber),
  };
  try {
    if (topic0 === ORDER_FILLED_V1_TOPIC) {
      const { args } = decodeEventLog({
        abi: ORDER_FILLED_V1_ABI,
        data: log.data as Hex,
        topics: log.topics as [Hex, ...Hex[]],
      });
      // The maker pays collateral (asset id 0) when it buys; the other asset is the outcome token.
      const buy = args.makerAssetId === 0n;
      return {
        ok: true,
        value: {
          era: "v1",
          ...base,
          maker: args.maker.toLowerCase(),
          taker: args.taker.toLowerCase(),
          side: buy ? "BUY" : "SELL",
          token_id: (buy ? args.takerAssetId : args.makerAssetId).toString(),
          usd: units(buy ? args.makerAmountFilled : args.takerAmountFilled),
          shares: units(buy ? args.takerAmountFilled : args.makerAmountFilled),
        },
      };
    }
    if (topic0 === ORDER_FILLED_V2_TOPIC) {
      const { args } = decodeEventLog({
        abi: ORDER_FILLED_V2_ABI,
        data: log.data as Hex,
        topics: log.topics as [Hex, ...Hex[]],
      });
      if (args.side !== 0 && args.side !== 1) {
        return { ok: false, reason: `${describeLog(log)}: side ${args.side} is neither 0 nor 1` };
      }
      const buy = args.side === 0;
      return {
        ok: true,
        value: {
          era: "v2",
          ...base,
          maker: args.maker.toLowerCase(),
          taker: args.taker.toLowerCase(),
          side: buy ? "BUY" : "SELL",
          token_id: args.tokenId.toString(),
          usd: units(buy ? args.makerAmountFilled : args.takerAmountFilled),
          shares: units(buy ? args.takerAmountFilled : args.makerAmountFilled),
        },
      };
    }
  } catch (error) {
    return {
      ok: false,
      reason: `${describeLog(log)}: cannot decode OrderFilled: ${firstLine(error)}`,
    };
  }
  return { ok: false, reason: `${describeLog(log)}: not an OrderFilled event (topic0 ${topic0})` };
}

const EXCHANGE_SET = new Set(EXCHANGES);

/** The aggressor's summary of a match: the one event per match we store. */
export const isTakerSummary = (fill: Fill) => EXCHANGE_SET.has(fill.taker);

export interface TokenMarket {
  market_id: number;
  outcome: Outcome;
}

/**
 * A summary fill → a trade row. Null for an empty fill (no shares): there is no price to
 * record. A price above 1 cannot come from a valid fill and is refused.
 */
export function fillToTrade(fill: Fill, token: TokenMarket, ts: number): Result<NewTrade | null> {
  if (fill.shares === 0) return { ok: true, value: null };
  const price = fill.usd / fill.shares;
  // Amounts are whole micro-units, so a price of exactly 1 can come out as 1 + rounding.
  if (price > 1 + 1e-9) {
    return {
      ok: false,
      reason: `fill ${fill.tx_hash}#${fill.log_index}: price ${price} (${fill.usd} USD for ${fill.shares} shares) is above 1`,
    };
  }
  return {
    ok: true,
    value: {
      tx_hash: fill.tx_hash,
      log_index: fill.log_index,
      wallet: fill.maker,
      market_id: token.market_id,
      outcome: token.outcome,
      side: fill.side,
      price: Math.min(price, 1),
      size: fill.shares,
      usd_value: fill.usd,
      ts,
    },
  };
}

export interface CollateralTransfer {
  tx_hash: string;
  log_index: number;
  block: number;
  /** The token contract: USDC.e, native USDC or pUSD. */
  token: string;
  from: string;
  to: string;
  amount: number;
}

const COLLATERAL_SET = new Set(COLLATERAL_TOKENS);

export function decodeTransfer(log: RpcLog): Result<CollateralTransfer> {
  const token = log.address.toLowerCase();
  if (!COLLATERAL_SET.has(token)) {
    return { ok: false, reason: `${describeLog(log)}: ${token} is not a collateral token` };
  }
  if (log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC) {
    return { ok: false, reason: `${describeLog(log)}: not a Transfer event` };
  }
  try {
    const { args } = decodeEventLog({
      abi: TRANSFER_ABI,
      data: log.data as Hex,
      topics: log.topics as [Hex, ...Hex[]],
    });
    return {
      ok: true,
      value: {
        tx_hash: log.transactionHash.toLowerCase(),
        log_index: hexNumber(log.logIndex),
        block: hexNumber(log.blockNumber),
        token,
        from: args.from.toLowerCase(),
        to: args.to.toLowerCase(),
        amount: units(args.value),
      },
    };
  } catch (error) {
    return {
      ok: false,
      reason: `${describeLog(log)}: cannot decode Transfer: ${firstLine(error)}`,
    };
  }
}

/**
 * A collateral movement → a funding row (token "USDC": USDC.e, native USDC and pUSD are all
 * dollars to the funding graph). Null for settlement plumbing (exchanges, Conditional Tokens,
 * pUSD wraps, mints and burns) and for zero amounts.
 */
export function transferToRow(t: CollateralTransfer, ts: number): NewTransfer | null {
  if (t.amount <= 0) return null;
  if (SETTLEMENT_ADDRESSES.has(t.from) || SETTLEMENT_ADDRESSES.has(t.to)) return null;
  return {
    tx_hash: t.tx_hash,
    log_index: t.log_index,
    from_address: t.from,
    to_address: t.to,
    token: "USDC",
    amount: t.amount,
    ts,
  };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
}
