import type { PolymarketDeps } from "./context";
import { type LoopOptions, type LoopResult, runPolymarketLoop } from "./round";
import { type LiveStream, type StreamStats, startLiveStream } from "./stream";

/**
 * `ingest polymarket` without --once: rounds every interval (markets, the data API tail, chain
 * fills and transfers, resolutions, leaderboard) and, beside them, the live socket. When the
 * socket comes back after a drop, the pause is cut short so the next round's tail (and chain)
 * fills the gap at once. The tail also runs every round regardless: it is the fallback when
 * the socket is unavailable.
 */
export interface LiveOptions extends LoopOptions {
  /** The Real-Time Data Socket; null or "" leaves it off. */
  streamUrl: string | null;
  streamPingMs?: number;
}

export interface LiveResult extends LoopResult {
  stream: StreamStats | null;
}

export async function runLiveIngest(
  deps: PolymarketDeps,
  options: LiveOptions,
): Promise<LiveResult> {
  let wake = new AbortController();
  let stream: LiveStream | null = null;
  if (options.streamUrl) {
    stream = startLiveStream(deps, options, {
      url: options.streamUrl,
      pingMs: options.streamPingMs,
      onReconnect: (since) => {
        deps.log.info({ down_since: new Date(since).toISOString() }, "filling the stream's gap");
        wake.abort();
      },
    });
  }
  try {
    const loop = await runPolymarketLoop(deps, {
      ...options,
      // A reconnect during a round skips the next pause once (its signal is already aborted).
      wake: () => {
        const signal = wake.signal;
        if (signal.aborted) wake = new AbortController();
        return signal;
      },
    });
    return { ...loop, stream: stream?.stats ?? null };
  } finally {
    await stream?.stop();
  }
}
