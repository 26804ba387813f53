import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { market, trade, writeJsonl } from "./builders";

const root = new URL("../..", import.meta.url);
const tsx = new URL("node_modules/tsx/dist/loader.mjs", root).href;
const main = new URL("cli/main.ts", root).pathname;

let t: TestApp;
beforeAll(() => {
  t = createTestApp();
});
afterAll(() => t.close());

/**
 * `smartmoney ...` from source, stderr piped (so no progress bar), run in the test's folder so
 * files written relative to the working directory (stdin.rejects.jsonl) land there.
 */
function smartmoney(args: string[], input?: string) {
  const result = spawnSync(process.execPath, ["--import", tsx, main, ...args], {
    cwd: t.dir,
    env: { ...process.env, SMARTMONEY_DB: t.config.dbPath, SMARTMONEY_LOG_LEVEL: "error" },
    encoding: "utf8",
    input,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The same in this process (test/helpers/cli.ts), for runs that need no standard input. */
const inProcess = (args: string[]) =>
  runCli(args, { SMARTMONEY_DB: t.config.dbPath, SMARTMONEY_LOG_LEVEL: "error" });

const trades = () => t.db.reader.prepare("SELECT count(*) FROM trades").pluck().get() as number;

describe("smartmoney import", () => {
  it("imports files, each on its own, listing a refused file's bad lines as FILE:LINE", async () => {
    const good = writeJsonl(t.dir, "good.jsonl", [market(1), trade(1), trade(2)]);
    const bad = writeJsonl(t.dir, "bad.jsonl", [market(1), trade(3, { price: 2 }), "{", trade(4)]);

    const res = await inProcess(["import", good, bad]);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(new RegExp(`^${good}: 3 rows in [\\d.]+ s \\([\\d,]+ rows/s\\)`));
    expect(res.stdout).toMatch(/trade\s+2\s+0\s+0/);
    const stderr = res.stderr.trim().split("\n");
    expect(stderr).toEqual([
      `${bad}:2: price: must be between 0 and 1 (got 2)`,
      expect.stringMatching(new RegExp(`^${bad}:3: not valid JSON`)),
      `${bad}: refused, 2 invalid lines; nothing was imported from it`,
      `smartmoney: 1 of 2 files refused (${bad}); the others were imported`,
    ]);
    expect(trades()).toBe(2);

    const alone = await inProcess(["import", bad]);
    expect(alone.code).toBe(1);
    expect(alone.stderr.trim().split("\n").at(-1)).toBe(
      `smartmoney: ${bad}: refused, 2 invalid lines; nothing was imported from it`,
    );
  });

  it("reads standard input for -, prints JSON, and writes rejects with --skip-invalid", () => {
    const lines = [market(1), trade(10), trade(11, { side: "HOLD" })]
      .map((l) => JSON.stringify(l))
      .join("\n");
    const res = smartmoney(["import", "-", "--json", "--skip-invalid"], lines);
    expect(res.code).toBe(0);
    const [report] = JSON.parse(res.stdout) as Record<string, unknown>[];
    expect(report).toMatchObject({
      file: "stdin",
      status: "imported",
      rows: 3,
      rejected: 1,
      rejects_path: "stdin.rejects.jsonl",
      errors: [{ line: 3, reason: expect.stringMatching(/^side:/) }],
    });
    expect((report!.counts as Record<string, unknown>).trade).toEqual({
      new: 1,
      updated: 0,
      present: 0,
    });
    expect(readFileSync(join(t.dir, "stdin.rejects.jsonl"), "utf8")).toBe(
      `${JSON.stringify(trade(11, { side: "HOLD" }))}\n`,
    );
    expect(trades()).toBe(3); // two from the previous test, one from stdin
  });
});
