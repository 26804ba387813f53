/** Wall-clock time in epoch milliseconds. Passed in everywhere so tests can move time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
