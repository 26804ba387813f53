/**
 * V8's heap limits for the processes that work in bulk: serve's jobs process (`jobs schedule`)
 * and the CLI's bulk commands (`import`, `seed`, ...; cli/sized-heap.ts).
 *
 * Such a process allocates an object or two per fill it reads (ten million on the large world)
 * and keeps little of it: a full refresh's live heap stays near 30 MB on the medium world, and an
 * import's under 200 MB on the large one (its caches of wallets are bounded). With V8's defaults
 * on a machine with a few GB, a young generation of up to 128 MB and an old generation allowed to
 * grow to 4 GB before it must be collected, most of its resident memory was garbage not yet
 * collected: a Parquet import of 1M fills peaked at 1.07 GB with a heap three times its live size.
 * How a full rebuild's memory is made up: docs/architecture.md, "The full refresh's memory".
 */

/** The young generation's semi-space, MB: two of them make the new space (V8's default grew it to 64). */
export const HEAP_SEMI_SPACE_MB = 16;

/** The old generation's limit, MB: half of the memory cap (`SMARTMONEY_MEMORY_MB`). */
export function oldSpaceMb(memoryMb: number): number {
  return Math.floor(memoryMb / 2);
}

/** The Node flags a bulk process starts with. */
export function heapFlags(memoryMb: number): string[] {
  return [
    `--max-old-space-size=${oldSpaceMb(memoryMb)}`,
    `--max-semi-space-size=${HEAP_SEMI_SPACE_MB}`,
  ];
}

/**
 * glibc's malloc arenas for a bulk process (MALLOC_ARENA_MAX), unless the operator set them. By
 * default each thread that allocates may get an arena of its own, up to eight a core, and memory
 * freed in one stays mapped: a bulk process has its worker threads and SQLite's sorter threads,
 * each allocating hundreds of MB over its life. With two, `seed --scale medium` peaked at 698 MB
 * against 798, `seed --scale large` at 1,397 against 1,552, in the same time.
 */
export const MALLOC_ARENAS = "2";

/**
 * The environment for a bulk process: the flags go through NODE_OPTIONS, which both the
 * single binary (its arguments are the CLI's) and Node running cli/main.ts read. Flags the
 * operator set in NODE_OPTIONS come after, so they win; so does their MALLOC_ARENA_MAX.
 */
export function sizedHeapEnv(
  memoryMb: number,
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const flags = [...heapFlags(memoryMb), env.NODE_OPTIONS ?? ""].join(" ").trim();
  return { ...env, NODE_OPTIONS: flags, MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? MALLOC_ARENAS };
}

/** Whether Node flags (the process's own or NODE_OPTIONS) already set the old generation's limit. */
export function heapIsSized(execArgv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/)];
  return given.some((flag) => /^--max[-_]old[-_]space[-_]size(=|$)/.test(flag));
}
