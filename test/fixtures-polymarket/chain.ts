import {
  type AbiEvent,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  keccak256,
  toHex,
} from "viem";
import {
  ORDER_FILLED_V1_ABI,
  ORDER_FILLED_V2_ABI,
  TRANSFER_ABI,
} from "../../src/ingest/polymarket/contracts";
import type { RpcLogRecord } from "./servers";

/**
 * On-chain logs encoded with viem from the real event ABIs of both exchange eras, so the
 * ingester decodes exactly what a node would serve.
 */

const dataOf = (event: AbiEvent, values: readonly unknown[]): Hex =>
  encodeAbiParameters(
    event.inputs.filter((input) => !input.indexed),
    values,
  );

export const txHash = (label: string) => keccak256(toHex(label));
const orderHash = (label: string) => keccak256(toHex(`order:${label}`));

interface Where {
  block: number;
  tx: string;
  logIndex: number;
}

export function v1Fill(
  exchange: string,
  fill: {
    maker: string;
    taker: string;
    makerAssetId: bigint;
    takerAssetId: bigint;
    makerAmount: bigint;
    takerAmount: bigint;
  },
  at: Where,
): RpcLogRecord {
  const topics = encodeEventTopics({
    abi: ORDER_FILLED_V1_ABI,
    eventName: "OrderFilled",
    args: {
      orderHash: orderHash(`${at.tx}:${at.logIndex}`),
      maker: fill.maker as Hex,
      taker: fill.taker as Hex,
    },
  });
  return {
    address: exchange,
    topics: topics as string[],
    data: dataOf(ORDER_FILLED_V1_ABI[0], [
      fill.makerAssetId,
      fill.takerAssetId,
      fill.makerAmount,
      fill.takerAmount,
      0n,
    ]),
    blockNumber: at.block,
    transactionHash: at.tx,
    logIndex: at.logIndex,
  };
}

export function v2Fill(
  exchange: string,
  fill: {
    maker: string;
    taker: string;
    side: 0 | 1;
    tokenId: bigint;
    makerAmount: bigint;
    takerAmount: bigint;
  },
  at: Where,
): RpcLogRecord {
  const topics = encodeEventTopics({
    abi: ORDER_FILLED_V2_ABI,
    eventName: "OrderFilled",
    args: {
      orderHash: orderHash(`${at.tx}:${at.logIndex}`),
      maker: fill.maker as Hex,
      taker: fill.taker as Hex,
    },
  });
  const zero = `0x${"0".repeat(64)}` as Hex;
  return {
    address: exchange,
    topics: topics as string[],
    data: dataOf(ORDER_FILLED_V2_ABI[0], [
      fill.side,
      fill.tokenId,
      fill.makerAmount,
      fill.takerAmount,
      0n,
      keccak256(toHex("builder")),
      zero,
    ]),
    blockNumber: at.block,
    transactionHash: at.tx,
    logIndex: at.logIndex,
  };
}

export function transferLog(
  token: string,
  transfer: { from: string; to: string; amount: bigint },
  at: Where,
): RpcLogRecord {
  const topics = encodeEventTopics({
    abi: TRANSFER_ABI,
    eventName: "Transfer",
    args: { from: transfer.from as Hex, to: transfer.to as Hex },
  });
  return {
    address: token,
    topics: topics as string[],
    data: dataOf(TRANSFER_ABI[0], [transfer.amount]),
    blockNumber: at.block,
    transactionHash: at.tx,
    logIndex: at.logIndex,
  };
}

/** Micro-units: 6 decimals for both collateral and outcome shares. */
export const units = (n: number) => BigInt(Math.round(n * 1e6));
