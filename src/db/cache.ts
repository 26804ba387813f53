import { totalmem } from "node:os";
import { type Connection, overridePragmas } from "./open";

/** The page cache every connection starts with (src/db/open.ts), MB. */
export const DEFAULT_CACHE_MB = 64;

/**
 * The bulk writer's page cache, MB: a quarter of the memory cap, never more than a quarter of
 * the machine's memory, never less than the default. The rest of the cap is the process
 * itself: measured importing 1M fills into the medium world, Node's heap grew to about 470 MB
 * (parsing, batches, detection's per-file facts) and the binary takes about 60 MB, so half the
 * cap for the cache (as before) put the peak RSS above the cap. A larger cache did not import
 * faster there (docs/architecture.md, "The bulk writer's page cache"). A file far larger than
 * the cache (seed --scale large) does pay: its dirty pages spill and are read back more often
 * (docs/operations.md, "Import rate"); a larger cap is the remedy.
 */
export function bulkCacheMb(memoryMb: number, machineBytes = totalmem()): number {
  const machineMb = Math.floor(machineBytes / 4 / 2 ** 20);
  return Math.max(DEFAULT_CACHE_MB, Math.min(Math.floor(memoryMb / 4), machineMb));
}

/**
 * Runs `work` with the connection's page cache at `mb` and its memory map off, then puts both
 * back. The map (256 MB, src/db/open.ts) counts in the process's RSS on top of the cache, and
 * a bulk file reads far more of the database than that: without it every page the file reads
 * goes through the cache, which stays within its bound.
 */
export async function withCacheMb<T>(
  connection: Connection,
  mb: number | undefined,
  work: () => Promise<T>,
): Promise<T> {
  if (mb === undefined) return work();
  const restore = overridePragmas(connection, { cache_size: -mb * 1024, mmap_size: 0 });
  try {
    return await work();
  } finally {
    restore();
  }
}
