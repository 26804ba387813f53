import type { Clock } from "../../clock";

/** Waits `ms` (or until the signal aborts). Injected so tests move a fake clock instead. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * A client-side rolling window: at most `limit` requests in any `windowMs`, as observed here.
 * Publishers state their limits per 10 seconds; staying under them keeps 429s rare, and the
 * retry path handles the rest.
 */
export interface RateBucket {
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Start times of the requests still inside the window, oldest first. */
  readonly starts: number[];
}

export function rateBucket(name: string, limit: number, windowMs: number): RateBucket {
  return { name, limit, windowMs, starts: [] };
}

/**
 * Waits until every bucket has room, then records one request in each. A request counts
 * against all its buckets at once (e.g. the data API overall and its /trades route).
 * Returns the total time waited, in ms.
 */
export async function acquire(
  buckets: readonly RateBucket[],
  clock: Clock,
  sleep: Sleep,
  signal?: AbortSignal,
): Promise<number> {
  let waited = 0;
  for (;;) {
    const now = clock.now();
    let wait = 0;
    for (const bucket of buckets) {
      while (bucket.starts.length > 0 && bucket.starts[0]! <= now - bucket.windowMs) {
        bucket.starts.shift();
      }
      if (bucket.starts.length >= bucket.limit) {
        const frees = bucket.starts[bucket.starts.length - bucket.limit]! + bucket.windowMs;
        wait = Math.max(wait, frees - now);
      }
    }
    if (wait <= 0 || signal?.aborted) break;
    await sleep(wait, signal);
    waited += wait;
  }
  const now = clock.now();
  for (const bucket of buckets) bucket.starts.push(now);
  return waited;
}
