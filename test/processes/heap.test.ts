import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { HEAP_SEMI_SPACE_MB, heapIsSized, oldSpaceMb, sizedHeapEnv } from "../../src/heap";

describe("a bulk process's heap limits", () => {
  it("caps the old generation at half the memory cap", () => {
    expect(oldSpaceMb(1024)).toBe(512);
    expect(oldSpaceMb(4096)).toBe(2048);
  });

  it("passes them through NODE_OPTIONS, after which the operator's own flags still win", () => {
    expect(sizedHeapEnv(1024, { PATH: "/bin" }).NODE_OPTIONS).toBe(
      `--max-old-space-size=512 --max-semi-space-size=${HEAP_SEMI_SPACE_MB}`,
    );
    const env = sizedHeapEnv(1024, { NODE_OPTIONS: "--max-old-space-size=3000" });
    expect(env.NODE_OPTIONS).toBe(
      `--max-old-space-size=512 --max-semi-space-size=${HEAP_SEMI_SPACE_MB} --max-old-space-size=3000`,
    );
  });

  it("gives glibc two malloc arenas, unless the operator chose", () => {
    expect(sizedHeapEnv(1024, { PATH: "/bin" }).MALLOC_ARENA_MAX).toBe("2");
    expect(sizedHeapEnv(1024, { MALLOC_ARENA_MAX: "8" }).MALLOC_ARENA_MAX).toBe("8");
  });

  it("knows a heap already sized, by a flag of the process or of NODE_OPTIONS", () => {
    expect(heapIsSized([], {})).toBe(false);
    expect(heapIsSized(["--import", "tsx"], { NODE_OPTIONS: "--require x.cjs" })).toBe(false);
    expect(heapIsSized(["--max-old-space-size=300"], {})).toBe(true);
    expect(heapIsSized([], { NODE_OPTIONS: "--require x.cjs --max_old_space_size=300" })).toBe(
      true,
    );
    expect(heapIsSized([], { NODE_OPTIONS: "--max-semi-space-size=16" })).toBe(false);
  });

  it("gives a Node started with them that heap", () => {
    const limitMb = (env: NodeJS.ProcessEnv) => {
      const run = spawnSync(
        process.execPath,
        ["-e", "process.stdout.write(String(require('v8').getHeapStatistics().heap_size_limit))"],
        { env, encoding: "utf8" },
      );
      expect(run.status, run.stderr).toBe(0);
      return Number(run.stdout) / 2 ** 20;
    };
    const { NODE_OPTIONS: _, ...inherited } = process.env;
    const capped = limitMb(sizedHeapEnv(1024, inherited));
    // The old generation's 512 MB plus the young generation's share of the limit.
    expect(capped).toBeGreaterThanOrEqual(512);
    expect(capped).toBeLessThan(640);
    expect(limitMb(sizedHeapEnv(2048, inherited))).toBeGreaterThanOrEqual(1024);
  });
});
