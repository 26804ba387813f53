/**
 * Polls `probe` every 100 ms until it gives something other than null, and returns that; fails
 * naming `what` after 60 s. For tests that wait on other processes (serve, its jobs).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | null> | T | null,
): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
