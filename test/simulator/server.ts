import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { RpcLogRecord } from "../fixtures-polymarket/servers";
import { POLYMARKET_LIMITS, type SimFault, type SimLimits } from "./limits";
import { createRpcNode } from "./rpc";
import type { SimFill, SimMarket, SimWorld } from "./world";

/**
 * A Polymarket simulator on loopback: Gamma (offset lists with their clamp, 422 and sunset
 * headers; keyset lists bound to their query), the data API (/trades newest first with its
 * offset cap, the leaderboard with its caps), a Polygon JSON-RPC node (/rpc) that refuses wide
 * log ranges, and the Real-Time Data Socket (/ws) that can drop. Faults are queued per route.
 * Every limit comes from ./limits.ts.
 */

export interface Simulator {
  /** http://127.0.0.1:port: Gamma, data API and /rpc all live here. */
  url: string;
  /** ws://127.0.0.1:port/ws */
  wsUrl: string;
  rpcUrl: string;
  world: SimWorld;
  limits: SimLimits;
  /** Path and query of every HTTP request, in order. */
  requests: string[];
  /** Faults answered once each, per route path ("/trades", "/events/keyset", "/rpc"…). */
  faults: Map<string, SimFault[]>;
  /** Every HTTP request fails at the connection (a network outage). */
  down: boolean;
  /** The socket refuses connections. */
  socketDown: boolean;
  /** Keyset lists ignore `after_cursor` (as they ignore `cursor`): page 1 forever. */
  keysetIgnoresCursor: boolean;
  /** Condition ids of markets Gamma does not serve yet (it indexes a new market late). */
  unlisted: Set<string>;
  /** eth_getLogs calls refused as "range too large". */
  rpcRefusals: number;
  /** Logs the node serves besides the fills' (transfers, say). */
  extraLogs: RpcLogRecord[];
  /** Sockets subscribed now; messages sent in all. */
  socketClients(): number;
  socketMessages: number;
  fault(path: string, ...faults: SimFault[]): void;
  /** Generates `n` fills at the clock's time (of `market` if given) and pushes them to sockets. */
  emit(n: number, market?: SimMarket): SimFill[];
  /** Closes every socket abruptly (no close frame), as a network drop does. */
  dropSockets(): void;
  blockAt(ms: number): number;
  close(): Promise<void>;
}

export interface SimOptions {
  world: SimWorld;
  now: () => number;
  limits?: Partial<SimLimits>;
  /** The chain's block 0 time (ms). */
  genesis?: number;
}

export async function startSimulator(options: SimOptions): Promise<Simulator> {
  const limits = { ...POLYMARKET_LIMITS, ...options.limits };
  const { world, now } = options;
  const genesis = options.genesis ?? Date.parse("2026-01-01T00:00:00Z");
  const sockets = new Set<WebSocket>();
  const subscribed = new Set<WebSocket>();
  const blockAt = (ms: number) => Math.floor((ms - genesis) / 1000 / limits.blockSeconds);

  const sim: Simulator = {
    url: "",
    wsUrl: "",
    rpcUrl: "",
    world,
    limits,
    requests: [],
    faults: new Map(),
    down: false,
    socketDown: false,
    keysetIgnoresCursor: false,
    unlisted: new Set(),
    rpcRefusals: 0,
    extraLogs: [],
    socketMessages: 0,
    socketClients: () => subscribed.size,
    fault(path, ...faults) {
      sim.faults.set(path, [...(sim.faults.get(path) ?? []), ...faults]);
    },
    emit(n, market) {
      const fills = world.emit(n, now(), market);
      for (const f of fills) {
        const message = JSON.stringify({
          topic: "activity",
          type: "trades",
          timestamp: now(),
          payload: world.tradeRecord(f),
        });
        for (const socket of subscribed) {
          socket.send(message);
          sim.socketMessages++;
        }
      }
      return fills;
    },
    dropSockets() {
      for (const socket of sockets) socket.terminate();
    },
    blockAt,
    close: async () => {},
  };

  const node = createRpcNode({
    world,
    limits,
    now,
    genesis,
    extraLogs: () => sim.extraLogs,
    onRefusal: () => {
      sim.rpcRefusals++;
    },
  });

  function http(req: IncomingMessage, res: ServerResponse, body: string) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    sim.requests.push(`${url.pathname}${url.search}`);
    if (sim.down) {
      req.socket.destroy();
      return;
    }
    const fault = sim.faults.get(url.pathname)?.shift();
    if (fault && applyFault(fault, res)) return;
    const q = url.searchParams;
    switch (url.pathname) {
      case "/markets":
        return offsetList(
          res,
          q,
          gammaMarkets(q).map((m) => world.gammaMarket(m)),
        );
      case "/events":
        return offsetList(
          res,
          q,
          gammaEvents(q).map((e) => world.gammaEvent(e)),
        );
      case "/markets/keyset":
        return keysetList(res, q, "markets", () =>
          ordered(gammaMarkets(q), q).map((m) => world.gammaMarket(m)),
        );
      case "/events/keyset":
        return keysetList(res, q, "events", () =>
          ordered(gammaEvents(q), q).map((e) => world.gammaEvent(e)),
        );
      case "/trades":
        return trades(res, q);
      case "/v1/leaderboard":
        return leaderboard(res, q);
      case "/rpc": {
        const answer = node(body);
        return send(res, answer.status, answer.body);
      }
      default:
        return send(res, 404, { error: "not found" });
    }
  }

  /** Answers with the fault (a hang holds the request, then drops it unanswered). */
  function applyFault(fault: SimFault, res: ServerResponse): boolean {
    switch (fault.kind) {
      case "429":
        res.writeHead(429, {
          "content-type": "application/json",
          ...(fault.retryAfterSeconds === undefined
            ? {}
            : { "retry-after": String(fault.retryAfterSeconds) }),
        });
        res.end(JSON.stringify({ error: "Too Many Requests" }));
        return true;
      case "502-html":
        res.writeHead(502, { "content-type": "text/html" });
        res.end("<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>");
        return true;
      case "hang":
        // Holds the request open, then drops the connection without an answer.
        setTimeout(() => res.socket?.destroy(), fault.ms).unref();
        return true;
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"data": [{"proxyWallet": "0x');
        return true;
      case "partial":
        res.writeHead(200, { "content-type": "application/json", "content-length": "100000" });
        res.write('[{"proxyWallet":"0xabc", "side": "BUY"');
        setTimeout(() => res.socket?.destroy(), 10).unref();
        return true;
    }
  }

  function clamp(q: URLSearchParams, max: number, fallback = max): number {
    const asked = Number(q.get("limit") ?? fallback);
    return Math.max(0, Math.min(max, Number.isFinite(asked) ? asked : fallback));
  }

  function gammaMarkets(q: URLSearchParams): SimMarket[] {
    const conditions = new Set(q.getAll("condition_ids"));
    const tokens = new Set(q.getAll("clob_token_ids"));
    const closed = q.get("closed");
    const endMin = q.get("end_date_min");
    return world.markets.filter(
      (m) =>
        !sim.unlisted.has(m.conditionId) &&
        (conditions.size === 0 || conditions.has(m.conditionId)) &&
        (tokens.size === 0 || m.tokens.some((t) => tokens.has(t))) &&
        (closed === null || String(m.closed) === closed) &&
        (endMin === null || m.endDate >= Date.parse(endMin)),
    );
  }

  function gammaEvents(q: URLSearchParams) {
    const closed = q.get("closed");
    const endMin = q.get("end_date_min");
    return world.events.filter(
      (e) =>
        !e.markets.some((m) => sim.unlisted.has(m.conditionId)) &&
        (closed === null || String(e.markets.every((m) => m.closed)) === closed) &&
        (endMin === null || e.endDate >= Date.parse(endMin)),
    );
  }

  /**
   * Gamma's `order` (a field name) and `ascending` (true unless "false"); without `order` the
   * list comes in id order. Only the fields the simulator keeps can be ordered by.
   */
  function ordered<T extends { id: number; createdAt: number }>(list: T[], q: URLSearchParams) {
    const field = q.get("order");
    if (field === null) return list;
    const key =
      field === "id" ? (x: T) => x.id : field === "createdAt" ? (x: T) => x.createdAt : null;
    if (key === null) throw new Unsupported(`order by "${field}" is not supported`);
    const direction = q.get("ascending") === "false" ? -1 : 1;
    return [...list].sort((a, b) => direction * (key(a) - key(b)) || a.id - b.id);
  }

  function offsetList(res: ServerResponse, q: URLSearchParams, all: unknown[]) {
    const headers = { deprecation: limits.gammaDeprecation, sunset: limits.gammaSunset };
    const offset = Number(q.get("offset") ?? 0);
    if (offset > limits.gammaMaxOffset) {
      return send(
        res,
        422,
        {
          type: "validation error",
          error: "offset too large, use /markets/keyset for deeper pagination",
        },
        headers,
      );
    }
    const limit = clamp(q, limits.gammaMaxLimit, 20);
    send(res, 200, all.slice(offset, offset + limit), headers);
  }

  /** The cursor encodes the position and a hash of the query it belongs to. */
  function keysetList(
    res: ServerResponse,
    q: URLSearchParams,
    key: "markets" | "events",
    list: () => unknown[],
  ) {
    const filters = [...q.entries()]
      .filter(([k]) => k !== "after_cursor" && k !== "cursor" && k !== "limit")
      .sort(([a], [b]) => a.localeCompare(b));
    const bound = createHash("sha256").update(JSON.stringify(filters)).digest("hex").slice(0, 12);
    let start = 0;
    const after = sim.keysetIgnoresCursor ? null : q.get("after_cursor");
    if (after) {
      const [position, query] = Buffer.from(after, "base64url").toString().split(":");
      if (query !== bound) {
        return send(res, 400, { error: "after_cursor does not belong to this query" });
      }
      start = Number(position);
    }
    const limit = clamp(q, limits.gammaMaxLimit, 20);
    let all: unknown[];
    try {
      all = list();
    } catch (error) {
      if (!(error instanceof Unsupported)) throw error;
      return send(res, 422, { type: "validation error", error: error.message });
    }
    const page = all.slice(start, start + limit);
    const more = start + limit < all.length;
    const next = more ? Buffer.from(`${start + limit}:${bound}`).toString("base64url") : undefined;
    send(res, 200, { [key]: page, ...(next ? { next_cursor: next } : {}) });
  }

  function trades(res: ServerResponse, q: URLSearchParams) {
    const offset = Number(q.get("offset") ?? 0);
    if (offset > limits.tradesMaxOffset) {
      return send(res, 400, {
        error: `max historical activity offset of ${limits.tradesMaxOffset} exceeded`,
      });
    }
    const limit = clamp(q, limits.tradesMaxLimit, 100);
    const page: unknown[] = [];
    const fills = world.fills;
    for (let i = fills.length - 1 - offset; i >= 0 && page.length < limit; i--) {
      page.push(world.tradeRecord(fills[i]!));
    }
    send(res, 200, page);
  }

  function leaderboard(res: ServerResponse, q: URLSearchParams) {
    const offset = Number(q.get("offset") ?? 0);
    if (offset > limits.leaderboardMaxOffset) {
      return send(res, 400, { error: `offset must be at most ${limits.leaderboardMaxOffset}` });
    }
    const limit = clamp(q, limits.leaderboardMaxLimit, 25);
    const rows = world.wallets.slice(offset, offset + limit).map((wallet, i) => ({
      rank: String(offset + i + 1),
      proxyWallet: wallet,
      userName: `trader${offset + i + 1}`,
      vol: 1000,
      pnl: 10_000 - (offset + i),
    }));
    send(res, 200, rows);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => http(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    if (sim.socketDown || !req.url?.startsWith("/ws")) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on("message", (data) => {
        const text = String(data);
        if (text === "ping") return ws.send("pong");
        try {
          const message = JSON.parse(text) as {
            action?: string;
            subscriptions?: { topic?: string; type?: string }[];
          };
          const wantsTrades = message.subscriptions?.some(
            (s) => s.topic === "activity" && (s.type === "trades" || s.type === "*"),
          );
          if (message.action === "subscribe" && wantsTrades) subscribed.add(ws);
        } catch {
          // The real socket ignores what it cannot read.
        }
      });
      ws.on("close", () => {
        sockets.delete(ws);
        subscribed.delete(ws);
      });
      ws.on("error", () => {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  sim.url = `http://127.0.0.1:${port}`;
  sim.wsUrl = `ws://127.0.0.1:${port}/ws`;
  sim.rpcUrl = `${sim.url}/rpc`;
  sim.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.terminate();
      wss.close();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return sim;
}

class Unsupported extends Error {}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
