import { describe, expect, it, vi } from "vitest";
import { migrationReport, progressReporter } from "../../cli/progress";

const sink = (isTTY: boolean) => {
  const written: string[] = [];
  const stream = { isTTY, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
  return { stream, written };
};
const step = { migration: "0010_compact_fills.sql", step: "copy_fills" };

describe("progress on stderr", () => {
  it("draws a bar with counts and an ETA on a terminal, and clears it", () => {
    vi.spyOn(performance, "now").mockReturnValueOnce(0).mockReturnValueOnce(10_000);
    const { stream, written } = sink(true);
    const progress = progressReporter(stream);
    progress.update(migrationReport({ ...step, done: 0, total: 1000 }));
    progress.update(migrationReport({ ...step, done: 250, total: 1000 }));
    progress.done();
    expect(written[0]).toContain("25% 250 of 1,000 rows, about 30 s left");
    expect(written[0]).toContain("[########");
    expect(written.at(-1)).toBe("\r\x1b[K");
    vi.restoreAllMocks();
  });

  it("writes plain lines when stderr is not a terminal, always the last one", () => {
    const { stream, written } = sink(false);
    const progress = progressReporter(stream);
    progress.update(migrationReport({ ...step, done: 0, total: 4 }));
    progress.update(migrationReport({ ...step, done: 2, total: 4 }));
    progress.update(migrationReport({ ...step, done: 4, total: 4 }));
    progress.done();
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^migrating 0010_compact_fills.sql copy_fills: 100%, 4 of 4 rows/);
  });
});
