import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Raw } from "./payloads";

/**
 * Loopback stand-ins for Polymarket's HTTP APIs and a Polygon JSON-RPC node (127.0.0.1, port
 * 0). They replay the given records with the real APIs' paging and filters, and answer with
 * queued faults (429, 5xx) when a test asks for them.
 */

export interface Fault {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface ApiWorld {
  /** Gamma market objects. */
  markets: Raw[];
  /** The trades feed, newest first. */
  trades: Raw[];
  leaderboard: Raw[];
}

export interface ApiServer {
  url: string;
  /** Every request's path and query, in order. */
  requests: string[];
  /** Faults to answer with, per path, before answering normally. */
  faults: Map<string, Fault[]>;
  /** Replace what the server serves (e.g. new trades arriving at the head). */
  world: ApiWorld;
  /** Offsets above this are refused with 400, as the v1 feed does past its depth. */
  maxTradesOffset: number;
  close(): Promise<void>;
}

export async function startApiServer(world: ApiWorld): Promise<ApiServer> {
  const state: ApiServer = {
    url: "",
    requests: [],
    faults: new Map(),
    world,
    maxTradesOffset: Number.POSITIVE_INFINITY,
    close: async () => {},
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    state.requests.push(`${url.pathname}${url.search}`);
    const fault = state.faults.get(url.pathname)?.shift();
    if (fault) {
      res.writeHead(fault.status, { "content-type": "text/plain", ...fault.headers });
      res.end(fault.body ?? "fault");
      return;
    }
    const q = url.searchParams;
    const limit = Number(q.get("limit") ?? "100");
    const offset = Number(q.get("offset") ?? "0");
    switch (url.pathname) {
      case "/markets":
        return send(res, 200, gammaMarkets(state.world.markets, q).slice(offset, offset + limit));
      case "/events/keyset": {
        // Gamma's keyset list of events, each embedding its markets (the event each market
        // names, or one event per market without one). The cursor is the next position.
        const events = eventsOf(gammaMarkets(state.world.markets, q));
        const start = Number(q.get("after_cursor") ?? "0");
        const size = Math.min(limit, 100);
        const page = events.slice(start, start + size);
        const more = start + size < events.length;
        return send(res, 200, {
          events: page,
          ...(more ? { next_cursor: String(start + size) } : {}),
        });
      }
      case "/trades":
        if (offset > state.maxTradesOffset) return send(res, 400, { error: "offset too large" });
        return send(res, 200, state.world.trades.slice(offset, offset + limit));
      case "/v2/trades": {
        if (q.has("offset")) return send(res, 400, { error: "offset is not supported" });
        const cursor = q.get("cursor");
        const at = cursor
          ? JSON.parse(Buffer.from(cursor, "base64url").toString())
          : { o: 0, l: limit };
        const data = state.world.trades.slice(at.o, at.o + at.l);
        const more = at.o + at.l < state.world.trades.length;
        const next = Buffer.from(JSON.stringify({ o: at.o + at.l, l: at.l })).toString("base64url");
        return send(res, 200, {
          data,
          pagination: { has_more: more, next_cursor: more ? next : null },
        });
      }
      case "/v1/leaderboard":
        return send(res, 200, state.world.leaderboard.slice(offset, offset + limit));
      default:
        return send(res, 404, { error: "not found" });
    }
  });
  const { url, close } = await listen(server);
  state.url = url;
  state.close = close;
  return state;
}

/** Gamma's filters as the ingester uses them: ids, tokens, closed, end date; id order. */
function gammaMarkets(markets: Raw[], q: URLSearchParams): Raw[] {
  const conditions = new Set(q.getAll("condition_ids"));
  const tokens = new Set(q.getAll("clob_token_ids"));
  const closed = q.get("closed");
  const endMin = q.get("end_date_min");
  return markets
    .filter((m) => conditions.size === 0 || conditions.has(m.conditionId as string))
    .filter(
      (m) =>
        tokens.size === 0 ||
        (JSON.parse((m.clobTokenIds as string) ?? "[]") as string[]).some((t) => tokens.has(t)),
    )
    .filter((m) => closed === null || String(m.closed) === closed)
    .filter((m) => endMin === null || Date.parse(m.endDate as string) >= Date.parse(endMin))
    .sort((a, b) => Number(a.id) - Number(b.id));
}

function eventsOf(markets: Raw[]): Raw[] {
  const events = new Map<string, Raw & { markets: Raw[] }>();
  for (const m of markets) {
    const { events: own, ...market } = m as Raw & { events?: Raw[] };
    const event = own?.[0];
    const key = event
      ? `event:${String(event.id ?? event.slug ?? m.id)}`
      : `market:${String(m.id)}`;
    const entry = events.get(key) ?? { ...(event ?? {}), markets: [] };
    entry.markets.push(market);
    events.set(key, entry);
  }
  return [...events.values()];
}

export interface RpcLogRecord {
  address: string;
  topics: string[];
  data: string;
  blockNumber: number;
  transactionHash: string;
  logIndex: number;
}

export interface RpcServer {
  url: string;
  head: number;
  logs: RpcLogRecord[];
  /** Block n's time: genesisSeconds + 2 n. */
  genesisSeconds: number;
  /** eth_getLogs over more blocks than this is refused as too large. */
  maxRange: number;
  /** A node that ignores topic filters (the client must still count each match once). */
  ignoreTopics: boolean;
  calls: { method: string; params: unknown[] }[];
  faults: Fault[];
  close(): Promise<void>;
}

export async function startRpcServer(options: {
  head: number;
  genesisSeconds: number;
  logs?: RpcLogRecord[];
}): Promise<RpcServer> {
  const state: RpcServer = {
    url: "",
    head: options.head,
    logs: options.logs ?? [],
    genesisSeconds: options.genesisSeconds,
    maxRange: Number.POSITIVE_INFINITY,
    ignoreTopics: false,
    calls: [],
    faults: [],
    close: async () => {},
  };
  const hex = (n: number) => `0x${n.toString(16)}`;
  const answer = (call: { id: unknown; method: string; params: unknown[] }) => {
    state.calls.push({ method: call.method, params: call.params });
    const result = (value: unknown) => ({ jsonrpc: "2.0", id: call.id, result: value });
    switch (call.method) {
      case "eth_blockNumber":
        return result(hex(state.head));
      case "eth_getBlockByNumber": {
        const n = Number.parseInt(call.params[0] as string, 16);
        if (n > state.head) return result(null);
        return result({ number: hex(n), timestamp: hex(state.genesisSeconds + 2 * n) });
      }
      case "eth_getLogs": {
        const filter = call.params[0] as {
          fromBlock: string;
          toBlock: string;
          address: string[];
          topics: (string | string[] | null)[];
        };
        const from = Number.parseInt(filter.fromBlock, 16);
        const to = Number.parseInt(filter.toBlock, 16);
        if (to - from + 1 > state.maxRange) {
          return {
            jsonrpc: "2.0",
            id: call.id,
            error: { code: -32005, message: "query returned more than 10000 results" },
          };
        }
        const addresses = new Set(filter.address.map((a) => a.toLowerCase()));
        const logs = state.logs.filter(
          (log) =>
            log.blockNumber >= from &&
            log.blockNumber <= to &&
            addresses.has(log.address.toLowerCase()) &&
            (state.ignoreTopics || topicsMatch(log.topics, filter.topics)),
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
  const server = createServer(async (req, res) => {
    const fault = state.faults.shift();
    if (fault) {
      res.writeHead(fault.status, fault.headers);
      res.end(fault.body ?? "fault");
      return;
    }
    const body = JSON.parse(await readBody(req));
    send(res, 200, Array.isArray(body) ? body.map(answer) : answer(body));
  });
  const { url, close } = await listen(server);
  state.url = url;
  state.close = close;
  return state;
}

function topicsMatch(topics: string[], filter: (string | string[] | null)[]): boolean {
  return filter.every((wanted, i) => {
    if (wanted === null) return true;
    const actual = topics[i]?.toLowerCase();
    const options = (Array.isArray(wanted) ? wanted : [wanted]).map((t) => t.toLowerCase());
    return actual !== undefined && options.includes(actual);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function listen(server: Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
