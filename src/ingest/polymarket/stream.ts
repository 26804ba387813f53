import {
  emptySummary,
  IngestFailure,
  type PolymarketDeps,
  type PolymarketOptions,
} from "./context";
import { type DataTrade, mapDataTrade } from "./data-api";
import { createMarketBook } from "./markets";
import { createContext } from "./round";
import { toRow } from "./stage-trades";
import { STATE_KEYS, type StreamState, saveState } from "./state";

/**
 * The Real-Time Data Socket (`wss://ws-live-data.polymarket.com`): every trade Polymarket
 * matches, within about a second. Its trades carry the data API's fields, so each is mapped
 * and keyed exactly as the tail maps it (the same fill from both is stored once) and stored
 * through the one ingest path, which fires signals and webhooks.
 *
 * Node's own WebSocket client; a text "ping" every 5 s, and a socket silent for 15 s is taken
 * for dead. A drop reconnects with a doubling backoff (0.5 s to 30 s, with jitter) and calls
 * `onReconnect` with the time the socket went down, so the caller can fill the gap from the
 * data API tail (and chain logs). Trades are written in small batches, every 200 ms.
 */

export const DEFAULT_STREAM_URL = "wss://ws-live-data.polymarket.com";

export interface StreamSettings {
  url: string;
  pingMs?: number;
  /** No message (not even a pong) for this long: reconnect. */
  silenceMs?: number;
  flushMs?: number;
  /** After a drop, once connected again, with when the socket went down (ms). */
  onReconnect?(downSince: number): void;
}

/** The live ingest's name for the storage watch: the scheduled ingest job's. */
export const INGEST_WRITER = "ingest";

export interface StreamStats {
  connects: number;
  drops: number;
  messages: number;
  stored: number;
  present: number;
  /** Fills of markets that fill retention compacted (src/refresh/retention.ts): not stored. */
  refused: number;
  quarantined: number;
}

export interface LiveStream {
  readonly stats: StreamStats;
  connected(): boolean;
  /** Closes the socket and writes what is buffered. */
  stop(): Promise<void>;
}

const SUBSCRIBE = JSON.stringify({
  action: "subscribe",
  subscriptions: [{ topic: "activity", type: "trades" }],
});

export function startLiveStream(
  deps: PolymarketDeps,
  options: PolymarketOptions,
  settings: StreamSettings,
): LiveStream {
  const pingMs = settings.pingMs ?? 5_000;
  const silenceMs = settings.silenceMs ?? 15_000;
  const flushMs = settings.flushMs ?? 200;
  const random = deps.random ?? Math.random;
  const summary = emptySummary(options.rpcUrl ? "chain" : "data-api");
  const ctx = createContext(deps, options, summary);
  const book = createMarketBook(ctx, ctx.rpc !== null);
  const stats: StreamStats = {
    connects: 0,
    drops: 0,
    messages: 0,
    stored: 0,
    present: 0,
    refused: 0,
    quarantined: 0,
  };
  const state: StreamState = { newest_fill: null, last_message_at: null, connected: false };
  let buffer: unknown[] = [];
  let socket: WebSocket | null = null;
  let stopped = false;
  let failures = 0;
  let downSince: number | null = null;
  let lastHeard = Date.now();
  let reconnectTimer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> = Promise.resolve();

  const host = (() => {
    try {
      return new URL(settings.url).host;
    } catch {
      return settings.url;
    }
  })();

  function connect(): void {
    if (stopped) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(settings.url);
    } catch (error) {
      dropped(`cannot open: ${(error as Error).message}`);
      return;
    }
    socket = ws;
    ws.onopen = () => {
      stats.connects++;
      failures = 0;
      lastHeard = Date.now();
      ws.send(SUBSCRIBE);
      state.connected = true;
      writeState();
      deps.log.info({ host }, "polymarket stream connected");
      if (downSince !== null) {
        const since = downSince;
        downSince = null;
        settings.onReconnect?.(since);
      }
    };
    ws.onmessage = (event) => {
      lastHeard = Date.now();
      const text = typeof event.data === "string" ? event.data : String(event.data);
      if (text === "pong" || text === "") return;
      let message: { topic?: unknown; type?: unknown; payload?: unknown };
      try {
        message = JSON.parse(text);
      } catch {
        return;
      }
      if (message.topic !== "activity" || message.type !== "trades") return;
      stats.messages++;
      buffer.push(message.payload);
    };
    ws.onclose = () => {
      if (socket === ws) dropped("closed");
    };
    ws.onerror = () => {
      // onclose follows and reconnects.
    };
  }

  function dropped(reason: string): void {
    socket = null;
    if (stopped) return;
    stats.drops++;
    failures++;
    downSince ??= deps.clock.now();
    state.connected = false;
    writeState();
    const step = Math.min(30_000, 500 * 2 ** Math.min(10, failures - 1));
    const wait = Math.round(step / 2 + random() * (step / 2));
    ctx.ledger.failed("stream", deps.clock.now(), `${host}: ${reason}`, deps.clock.now() + wait);
    deps.log.warn({ host, reason, retry_in_ms: wait }, "polymarket stream dropped");
    reconnectTimer = setTimeout(connect, wait);
  }

  function writeState(): void {
    try {
      ctx.transaction(() => saveState(ctx.ingest, STATE_KEYS.stream, state));
    } catch (error) {
      deps.log.error({ err: error }, "polymarket stream state not written");
    }
  }

  /** Stores what the socket sent since the last flush; true when it wrote. */
  async function flush(): Promise<boolean> {
    if (buffer.length === 0) return false;
    const items = buffer;
    buffer = [];
    // While the disk is full the fills are not kept: the scheduled round's tail, which runs as
    // the ingest job's retry, fetches them again once they can be stored (src/db/storage.ts).
    if (!deps.db.storage.mayWrite(INGEST_WRITER)) return false;
    const fills: DataTrade[] = [];
    const bad: { raw: unknown; reason: string }[] = [];
    for (const raw of items) {
      const mapped = mapDataTrade(raw);
      if (mapped.ok) fills.push(mapped.value);
      else bad.push({ raw, reason: mapped.reason });
    }
    let markets: Awaited<ReturnType<typeof book.missingByCondition>> = [];
    try {
      markets = await book.missingByCondition(fills.map((f) => f.condition_id));
    } catch (error) {
      // Gamma unavailable: the fills are stored under markets made from their own fields,
      // and a later lookup or listing fills in the rest.
      if (!(error instanceof IngestFailure)) throw error;
      deps.log.warn({ reason: error.message }, "polymarket stream: market lookup failed");
    }
    const now = deps.clock.now();
    const before = { newest_fill: state.newest_fill, last_message_at: state.last_message_at };
    let inserted: number;
    const refusedBefore = summary.trades_refused;
    try {
      inserted = ctx.transaction(() => {
        for (const b of bad) ctx.quarantine("stream", `socket ${host}`, b.reason, b.raw);
        book.store(markets);
        const stored = ctx.ingest.insertTrades(fills.map((f) => toRow(f, book)));
        for (const f of fills) state.newest_fill = Math.max(state.newest_fill ?? f.ts, f.ts);
        state.last_message_at = now;
        saveState(ctx.ingest, STATE_KEYS.stream, state);
        ctx.ledger.succeeded("stream", now);
        return stored.length;
      });
    } catch (error) {
      // Rolled back: the markets it stored and the fills it counted are not there. A market
      // id kept from it would fail every later batch on its foreign key.
      book.forget();
      Object.assign(state, before);
      throw error;
    }
    // insertTrades reports the fills it refuses (onRefusedTrades, counted in the summary) and
    // returns only those it stored: the rest were stored already.
    const refused = summary.trades_refused - refusedBefore;
    stats.stored += inserted;
    stats.refused += refused;
    stats.present += fills.length - inserted - refused;
    stats.quarantined += bad.length;
    return true;
  }

  const flushTimer = setInterval(() => {
    flushing = flushing.then(flush).then(
      (wrote) => {
        if (wrote) deps.db.storage.succeeded(INGEST_WRITER);
      },
      (error) => {
        if (deps.db.storage.failed(INGEST_WRITER, error, { retries: true })) return;
        deps.log.error({ err: error }, "polymarket stream batch failed");
      },
    );
  }, flushMs);
  const pingTimer = setInterval(() => {
    const ws = socket;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (Date.now() - lastHeard > silenceMs) {
      socket = null;
      ws.close();
      dropped(`silent for ${silenceMs} ms`);
      return;
    }
    ws.send("ping");
  }, pingMs);

  connect();

  return {
    stats,
    connected: () => socket?.readyState === WebSocket.OPEN,
    async stop() {
      stopped = true;
      clearInterval(flushTimer);
      clearInterval(pingTimer);
      if (reconnectTimer) clearTimeout(reconnectTimer);
      const ws = socket;
      socket = null;
      ws?.close();
      await flushing;
      await flush().catch((error) =>
        deps.log.error({ err: error }, "polymarket stream batch failed"),
      );
      state.connected = false;
      writeState();
    },
  };
}
