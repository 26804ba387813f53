import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { JOBS_SEMI_SPACE_MB, jobsEnv, jobsOldSpaceMb } from "../../src/jobs/heap";

describe("the jobs process's heap limits", () => {
  it("caps the old generation at half the memory cap", () => {
    expect(jobsOldSpaceMb(1024)).toBe(512);
    expect(jobsOldSpaceMb(4096)).toBe(2048);
  });

  it("passes them through NODE_OPTIONS, after which the operator's own flags still win", () => {
    expect(jobsEnv(1024, { PATH: "/bin" }).NODE_OPTIONS).toBe(
      `--max-old-space-size=512 --max-semi-space-size=${JOBS_SEMI_SPACE_MB}`,
    );
    const env = jobsEnv(1024, { NODE_OPTIONS: "--max-old-space-size=3000" });
    expect(env.NODE_OPTIONS).toBe(
      `--max-old-space-size=512 --max-semi-space-size=${JOBS_SEMI_SPACE_MB} --max-old-space-size=3000`,
    );
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
    const capped = limitMb(jobsEnv(1024, inherited));
    // The old generation's 512 MB plus the young generation's share of the limit.
    expect(capped).toBeGreaterThanOrEqual(512);
    expect(capped).toBeLessThan(640);
    expect(limitMb(jobsEnv(2048, inherited))).toBeGreaterThanOrEqual(1024);
  });
});
