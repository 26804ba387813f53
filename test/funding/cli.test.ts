import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../cli/program";
import { refreshFunding } from "../../src/funding/refresh";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, rows, T0 } from "./rows";

const WALLET = addr("insider", 1);

let t: TestApp;
let id: number;

/** Runs the CLI in-process, as `smartmoney ARGS --db <the test database>`, capturing its output. */
async function cli(args: string[]) {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main([...args, "--db", t.config.dbPath, "--log-level", "error"]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

beforeAll(() => {
  t = createTestApp();
  const b = rows(t.db);
  b.baseRate("politics", 0.5);
  for (let i = 0; i < 20; i++) {
    const market = b.market("politics", "YES", T0 + 60 * DAY);
    const won = i < 17;
    b.bet({
      wallet: WALLET,
      market,
      category: "politics",
      side: won ? "YES" : "NO",
      price: 0.25,
      ts: T0 + i * DAY,
      won,
    });
  }
  b.categoryStats(WALLET, "politics", 20, 17, 2_000);
  refreshFunding(t.db, t.clock.now());
  id = t.app.funding.investigations.list("open")[0]!.id;
});
afterAll(() => t.close());

describe("smartmoney investigations", () => {
  it("lists, shows, dismisses and reopens; a dismissal survives the refresh", async () => {
    const listed = await cli(["investigations", "list", "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { id, status: "open", qualifies: true, subject: WALLET },
    ]);

    const shown = await cli(["investigations", "show", String(id)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("won 17 of 20 resolved politics bets");

    expect((await cli(["investigations", "dismiss", String(id)])).stdout).toContain(
      `investigation ${id} is now dismissed`,
    );
    refreshFunding(t.db, t.clock.now(), { force: true });
    expect((await t.get(`/v1/investigations/${id}`, t.key("terminal_pro"))).status).toBe(404);
    expect(JSON.parse((await cli(["investigations", "list", "--json"])).stdout)).toEqual([]);
    const dismissed = JSON.parse(
      (await cli(["investigations", "list", "--status", "dismissed", "--json"])).stdout,
    );
    expect(dismissed.map((r: { id: number }) => r.id)).toEqual([id]);

    const again = await cli(["investigations", "dismiss", String(id)]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`smartmoney: investigation ${id} is already dismissed`);

    expect((await cli(["investigations", "reopen", String(id), "--json"])).code).toBe(0);
    expect((await t.get(`/v1/investigations/${id}`, t.key("terminal_pro"))).status).toBe(200);
  });

  it("refuses unknown and malformed ids", async () => {
    const unknown = await cli(["investigations", "show", "999"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no investigation with id 999");
    expect((await cli(["investigations", "reopen", "0"])).code).toBe(2);
  });
});
