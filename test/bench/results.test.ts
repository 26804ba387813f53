import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { currentRevision, type HistoryEntry, recordResults } from "../../bench/lib/results";

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-bench-results-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const history = (dir: string): HistoryEntry[] =>
  readFileSync(join(dir, "history.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as HistoryEntry);

describe("bench results (bench/lib/results.ts)", () => {
  it("replaces the bench's report and appends one dated line per run to history.jsonl", () => {
    const dir = scratch();
    const revision = { commit: "a".repeat(40), dirty: false };
    const first = recordResults(
      "refresh",
      { full_s: 193.1 },
      { dir, revision, now: new Date("2026-11-28T10:00:00Z"), args: ["--worlds", "large"] },
    );
    recordResults(
      "stall",
      { p99_ms: 8.1 },
      {
        dir,
        revision: { commit: "b".repeat(40), dirty: true },
        now: new Date("2026-11-29T09:00:00Z"),
        args: [],
      },
    );
    recordResults(
      "refresh",
      { full_s: 196.0 },
      { dir, revision, now: new Date("2026-11-29T09:30:00Z"), args: [] },
    );

    expect(first.report).toBe(join(dir, "refresh.json"));
    expect(JSON.parse(readFileSync(first.report, "utf8"))).toEqual({ full_s: 196.0 });
    expect(JSON.parse(readFileSync(join(dir, "stall.json"), "utf8"))).toEqual({ p99_ms: 8.1 });
    expect(history(dir)).toEqual([
      {
        date: "2026-11-28T10:00:00.000Z",
        commit: "a".repeat(40),
        dirty: false,
        bench: "refresh",
        args: ["--worlds", "large"],
        figures: { full_s: 193.1 },
      },
      {
        date: "2026-11-29T09:00:00.000Z",
        commit: "b".repeat(40),
        dirty: true,
        bench: "stall",
        args: [],
        figures: { p99_ms: 8.1 },
      },
      {
        date: "2026-11-29T09:30:00.000Z",
        commit: "a".repeat(40),
        dirty: false,
        bench: "refresh",
        args: [],
        figures: { full_s: 196.0 },
      },
    ]);
  });

  it("creates the folder, and dates and attributes a run by default", () => {
    const dir = join(scratch(), "results");
    const before = Date.now();
    recordResults("cold", { rows: [] }, { dir });
    const [entry] = history(dir);
    expect(Date.parse(entry!.date)).toBeGreaterThanOrEqual(before - 1000);
    // The checkout the suite runs in (CI runs a clone: a commit).
    expect(entry!.commit).toBe(currentRevision().commit);
    expect(entry!.args).toEqual(process.argv.slice(2));
  });

  it("names no commit outside a git checkout", () => {
    expect(currentRevision(scratch())).toEqual({ commit: null, dirty: false });
  });

  it("refuses a name that is not a bench's", () => {
    const dir = scratch();
    expect(() => recordResults("../http", {}, { dir })).toThrow("not a bench name: ../http");
  });
});
