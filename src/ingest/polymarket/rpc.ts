import type { Result } from "../../result";
import type { RpcLog } from "./fills";
import type { HttpClient } from "./http";
import type { RateBucket } from "./limiter";

/**
 * The few JSON-RPC calls the chain ingester needs: eth_blockNumber, eth_getLogs and block
 * times (eth_getBlockByNumber, batched). Transport retries (429, 5xx) are the HTTP client's;
 * a JSON-RPC error object is final, except that a "too many results / range too large" answer
 * is reported as such so the caller can split its block range.
 */

export interface LogFilter {
  fromBlock: number;
  toBlock: number;
  address: readonly string[];
  /** Per position: null (any), one value, or a list (any of them). */
  topics: readonly (string | readonly string[] | null)[];
}

export type RpcResult<T> = Result<T> & { tooLarge?: boolean };

export interface RpcClient {
  blockNumber(signal?: AbortSignal): Promise<RpcResult<number>>;
  getLogs(filter: LogFilter, signal?: AbortSignal): Promise<RpcResult<RpcLog[]>>;
  /** Block number → Unix ms, for each block asked. */
  blockTimes(
    blocks: readonly number[],
    signal?: AbortSignal,
  ): Promise<RpcResult<Map<number, number>>>;
}

const hex = (n: number) => `0x${n.toString(16)}`;

/** Providers word "narrow your range" differently; these are the common ones. */
const TOO_LARGE =
  /too many|query returned more than|limit exceeded|range|too large|response size|exceed/i;

/** Block headers asked per batch request. */
const BLOCK_BATCH = 50;

interface RpcAnswer {
  id?: unknown;
  result?: unknown;
  error?: { code?: number; message?: string };
}

export function createRpcClient(
  http: HttpClient,
  url: string,
  buckets: readonly RateBucket[] = [],
): RpcClient {
  let nextId = 1;

  async function call<T>(
    method: string,
    params: unknown[],
    signal?: AbortSignal,
  ): Promise<RpcResult<T>> {
    const id = nextId++;
    const answer = await http.postJson(
      url,
      { jsonrpc: "2.0", id, method, params },
      buckets,
      signal,
    );
    if (!answer.ok) {
      // Some providers refuse an oversized range at the HTTP level instead.
      const refused = answer.status === 400 || answer.status === 413;
      return {
        ok: false,
        reason: answer.reason,
        tooLarge: refused && TOO_LARGE.test(answer.reason),
      };
    }
    return unwrap<T>(method, answer.value as RpcAnswer);
  }

  return {
    async blockNumber(signal) {
      const result = await call<string>("eth_blockNumber", [], signal);
      if (!result.ok) return result;
      const n = Number.parseInt(result.value, 16);
      return Number.isSafeInteger(n)
        ? { ok: true, value: n }
        : { ok: false, reason: `eth_blockNumber: not a block number: ${result.value}` };
    },

    async getLogs(filter, signal) {
      const result = await call<RpcLog[]>(
        "eth_getLogs",
        [
          {
            fromBlock: hex(filter.fromBlock),
            toBlock: hex(filter.toBlock),
            address: filter.address,
            topics: filter.topics,
          },
        ],
        signal,
      );
      if (!result.ok) return result;
      if (!Array.isArray(result.value)) {
        return { ok: false, reason: "eth_getLogs: the answer is not a list of logs" };
      }
      return result;
    },

    async blockTimes(blocks, signal) {
      const times = new Map<number, number>();
      const wanted = [...new Set(blocks)];
      for (let i = 0; i < wanted.length; i += BLOCK_BATCH) {
        const slice = wanted.slice(i, i + BLOCK_BATCH);
        const batch = slice.map((n) => ({
          jsonrpc: "2.0",
          id: nextId++,
          method: "eth_getBlockByNumber",
          params: [hex(n), false],
        }));
        const answer = await http.postJson(url, batch, buckets, signal);
        if (!answer.ok) return answer;
        if (!Array.isArray(answer.value)) {
          return { ok: false, reason: "eth_getBlockByNumber: the batch answer is not a list" };
        }
        const byId = new Map((answer.value as RpcAnswer[]).map((a) => [a.id, a]));
        for (const [k, request] of batch.entries()) {
          const block = unwrap<{ timestamp?: string } | null>(
            "eth_getBlockByNumber",
            byId.get(request.id) ?? {},
          );
          if (!block.ok) return block;
          const seconds = block.value
            ? Number.parseInt(block.value.timestamp ?? "", 16)
            : Number.NaN;
          if (!Number.isFinite(seconds)) {
            return {
              ok: false,
              reason: `eth_getBlockByNumber: block ${slice[k]} has no timestamp`,
            };
          }
          times.set(slice[k]!, seconds * 1000);
        }
      }
      return { ok: true, value: times };
    },
  };
}

function unwrap<T>(method: string, answer: RpcAnswer): RpcResult<T> {
  if (answer.error) {
    const message = `${answer.error.message ?? "error"} (code ${answer.error.code ?? "?"})`;
    return {
      ok: false,
      reason: `${method}: ${message}`,
      tooLarge: answer.error.code === -32005 || TOO_LARGE.test(answer.error.message ?? ""),
    };
  }
  if (!("result" in answer)) return { ok: false, reason: `${method}: no result in the answer` };
  return { ok: true, value: answer.result as T };
}
