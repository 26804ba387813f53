import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app";
import { expectRefused, runCli } from "../helpers/cli";

// One instant parser (src/instant.ts) for the API and the CLI: an option that takes a time
// accepts exactly what /v1/trades' `start` accepts, and says what it takes when it refuses.

const dir = mkdtempSync(join(tmpdir(), "smartmoney-instants-"));
const db = join(dir, "cli.db");
let t: TestApp;
let key: string;

beforeAll(() => {
  t = createTestApp();
  key = t.key("terminal");
});

afterAll(() => {
  t.close();
  rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[]) => runCli(args, { SMARTMONEY_DB: db, SMARTMONEY_LOG_LEVEL: "error" });

const WALLET = `0x${"a".repeat(40)}`;

const INSTANTS: [string, boolean][] = [
  ["2026-11-01", true],
  ["2026-11-01T00:00:00Z", true],
  ["2026-11-01t00:00:00.5+02:00", true],
  ["1793491200000", true],
  // What Date.parse reads (in the machine's own zone, for the second) and RFC 3339 does not.
  ["2026-11-01T00:00:00", false],
  ["Nov 1 2026", false],
  ["2026/11/01", false],
  ["yesterday", false],
  // Date.parse rolls these over into March; the calendar has no such day.
  ["2026-02-30", false],
  ["2026-02-29T12:00:00Z", false],
  ["2028-02-29T12:00:00Z", true],
];

describe("instants, in the CLI as in the API", () => {
  it("are accepted and refused alike by --since and by /v1/trades' start", async () => {
    for (const [text, valid] of INSTANTS) {
      const api = await t.raw(
        `/v1/trades?wallet=${WALLET}&start=${encodeURIComponent(text)}&end=${encodeURIComponent(text)}`,
        key,
      );
      expect(api.status, text).toBe(valid ? 200 : 400);
      if (!valid) {
        const { error } = (await api.json()) as { error: { message: string } };
        expect(error.message, text).toContain(
          "start must be an RFC 3339 date-time or date, or Unix milliseconds",
        );
      }
      const res = await cli(["deliveries", "replay", "--dead", "--since", text, "--json"]);
      // A value commander's parser refuses is a usage error: exit 2 (cli/program.ts).
      expect(res.code, `${text}: ${res.stderr}`).toBe(valid ? 0 : 2);
      if (valid) {
        expect(JSON.parse(res.stdout), text).toEqual({ replayed: [] });
      } else {
        expect(res.stderr.split("\n")[0], text).toContain(
          `"${text}" must be an RFC 3339 date-time or date, or Unix milliseconds`,
        );
      }
    }
  });

  it("sets the clock of --now alike, and refuses the rest in one line", async () => {
    const bad = await cli(["jobs", "run", "refresh", "--now", "2026-11-01T00:00:00"]);
    expectRefused(
      bad,
      '--now must be an RFC 3339 date-time or date, or Unix milliseconds such as 2026-11-01T00:00:00Z, not "2026-11-01T00:00:00"',
    );
    const byDate = await cli(["jobs", "run", "refresh", "--now", "2026-05-01", "--json"]);
    expect(byDate.code, byDate.stderr).toBe(0);
    const asOf = Date.parse(JSON.parse(byDate.stdout).as_of) - Date.parse("2026-05-01T00:00:00Z");
    expect(asOf).toBeGreaterThanOrEqual(0);
    expect(asOf).toBeLessThan(60_000);
  });
});
