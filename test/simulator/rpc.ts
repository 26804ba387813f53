import type { RpcLogRecord } from "../fixtures-polymarket/servers";
import type { SimLimits } from "./limits";
import type { SimWorld } from "./world";

/**
 * The simulator's Polygon JSON-RPC node: eth_blockNumber (the block of the clock's time),
 * eth_getBlockByNumber (block n at genesis + n × blockSeconds), and eth_getLogs over the fills'
 * OrderFilled summaries and any extra logs, refusing ranges wider than `rpcMaxBlockRange` with
 * -32005 "block range too large", as providers do. Batches are answered item by item.
 */
export function createRpcNode(options: {
  world: SimWorld;
  limits: SimLimits;
  now: () => number;
  genesis: number;
  extraLogs: () => RpcLogRecord[];
  onRefusal: () => void;
}) {
  const { world, limits, now, genesis } = options;
  const encoded = new Map<number, RpcLogRecord>();
  const blockAt = (ms: number) => Math.floor((ms - genesis) / 1000 / limits.blockSeconds);

  function logsBetween(from: number, to: number): RpcLogRecord[] {
    const fills = world.fills;
    const startMs = genesis + from * limits.blockSeconds * 1000;
    // Fills are appended in time order: binary search the first one in range.
    let lo = 0;
    let hi = fills.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (fills[mid]!.ts < startMs) lo = mid + 1;
      else hi = mid;
    }
    const logs: RpcLogRecord[] = [];
    for (let i = lo; i < fills.length; i++) {
      const f = fills[i]!;
      const block = blockAt(f.ts);
      if (block > to) break;
      let log = encoded.get(f.seq);
      if (!log) {
        log = world.chainLog(f, block, f.seq % 1000);
        encoded.set(f.seq, log);
      }
      logs.push(log);
    }
    for (const log of options.extraLogs()) {
      if (log.blockNumber >= from && log.blockNumber <= to) logs.push(log);
    }
    return logs;
  }

  return (body: string): { status: number; body: unknown } => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return {
        status: 400,
        body: { jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } },
      };
    }
    const hex = (n: number) => `0x${n.toString(16)}`;
    const answer = (call: { id: unknown; method: string; params: unknown[] }) => {
      const result = (value: unknown) => ({ jsonrpc: "2.0", id: call.id, result: value });
      const head = blockAt(now()) + limits.headLeadBlocks;
      switch (call.method) {
        case "eth_blockNumber":
          return result(hex(head));
        case "eth_getBlockByNumber": {
          const n = Number.parseInt(call.params[0] as string, 16);
          if (n > head) return result(null);
          const seconds = genesis / 1000 + n * limits.blockSeconds;
          return result({ number: hex(n), timestamp: hex(seconds) });
        }
        case "eth_getLogs": {
          const filter = call.params[0] as {
            fromBlock: string;
            toBlock: string;
            address: string[] | string;
            topics?: (string | string[] | null)[];
          };
          const from = Number.parseInt(filter.fromBlock, 16);
          const to = Number.parseInt(filter.toBlock, 16);
          if (to - from + 1 > limits.rpcMaxBlockRange) {
            options.onRefusal();
            return {
              jsonrpc: "2.0",
              id: call.id,
              error: { code: -32005, message: "block range too large" },
            };
          }
          const addresses = new Set(
            (Array.isArray(filter.address) ? filter.address : [filter.address]).map((a) =>
              a.toLowerCase(),
            ),
          );
          const logs = logsBetween(from, to).filter(
            (log) =>
              addresses.has(log.address.toLowerCase()) &&
              topicsMatch(log.topics, filter.topics ?? []),
          );
          return result(
            logs.map((log) => ({
              ...log,
              blockNumber: hex(log.blockNumber),
              logIndex: hex(log.logIndex),
              removed: false,
            })),
          );
        }
        default:
          return {
            jsonrpc: "2.0",
            id: call.id,
            error: { code: -32601, message: "method not found" },
          };
      }
    };
    type Call = Parameters<typeof answer>[0];
    return {
      status: 200,
      body: Array.isArray(parsed) ? parsed.map((c) => answer(c as Call)) : answer(parsed as Call),
    };
  };
}

function topicsMatch(topics: string[], filter: (string | string[] | null)[]): boolean {
  return filter.every((wanted, i) => {
    if (wanted === null) return true;
    const actual = topics[i]?.toLowerCase();
    const choices = (Array.isArray(wanted) ? wanted : [wanted]).map((t) => t.toLowerCase());
    return actual !== undefined && choices.includes(actual);
  });
}
