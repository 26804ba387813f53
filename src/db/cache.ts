import { totalmem } from "node:os";
import type { Connection } from "./open";

/** The page cache every connection starts with (src/db/open.ts), MB. */
export const DEFAULT_CACHE_MB = 64;

/**
 * The bulk writer's page cache, MB: half of the memory cap (the rest is the process itself:
 * Node, parsing, batches), never more than a quarter of the machine's memory, never less than
 * the default. A file is one transaction, so its dirty pages are written once at the commit
 * instead of spilling to the WAL and being read back; measured in docs/architecture.md.
 */
export function bulkCacheMb(memoryMb: number, machineBytes = totalmem()): number {
  const machineMb = Math.floor(machineBytes / 4 / 2 ** 20);
  return Math.max(DEFAULT_CACHE_MB, Math.min(Math.floor(memoryMb / 2), machineMb));
}

/** Runs `work` with the connection's page cache at `mb`, then puts the previous size back. */
export async function withCacheMb<T>(
  connection: Connection,
  mb: number | undefined,
  work: () => Promise<T>,
): Promise<T> {
  if (mb === undefined) return work();
  const previous = connection.pragma("cache_size", { simple: true }) as number;
  connection.pragma(`cache_size = ${-mb * 1024}`);
  try {
    return await work();
  } finally {
    connection.pragma(`cache_size = ${previous}`);
  }
}
