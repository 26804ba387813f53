/**
 * V8's heap limits for the jobs process (`jobs schedule`, which `serve` starts beside itself).
 *
 * A full refresh allocates an object or two per fill it reads (ten million on the large world)
 * and keeps little of it: its live heap stays small (about 30 MB on the medium world, price
 * series and bet groups live in typed arrays outside the heap). With V8's defaults on a machine
 * with a few GB, a young generation of up to 128 MB and an old generation allowed to grow to 4 GB
 * before it must be collected, most of its resident memory was garbage not yet collected.
 * How a full rebuild's memory is made up: docs/architecture.md, "The full refresh's memory".
 */

/** The young generation's semi-space, MB: two of them make the new space (V8's default grew it to 64). */
export const JOBS_SEMI_SPACE_MB = 16;

/** The old generation's limit, MB: half of the memory cap (`SMARTMONEY_MEMORY_MB`). */
export function jobsOldSpaceMb(memoryMb: number): number {
  return Math.floor(memoryMb / 2);
}

/** The Node flags the jobs process starts with. */
export function jobsHeapFlags(memoryMb: number): string[] {
  return [
    `--max-old-space-size=${jobsOldSpaceMb(memoryMb)}`,
    `--max-semi-space-size=${JOBS_SEMI_SPACE_MB}`,
  ];
}

/**
 * The environment for the jobs process: the flags go through NODE_OPTIONS, which both the
 * single binary (its arguments are the CLI's) and Node running cli/main.ts read. Flags the
 * operator set in NODE_OPTIONS come after, so they win.
 */
export function jobsEnv(memoryMb: number, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const flags = [...jobsHeapFlags(memoryMb), env.NODE_OPTIONS ?? ""].join(" ").trim();
  return { ...env, NODE_OPTIONS: flags };
}
