import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshFunding } from "../../src/funding/refresh";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, rows, T0 } from "./rows";

const root = new URL("../..", import.meta.url).pathname;
const WALLET = addr("insider", 1);

let t: TestApp;
let id: number;

function cli(args: string[]) {
  const result = spawnSync(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    cwd: root,
    env: { ...process.env, SMARTMONEY_DB: t.config.dbPath },
    encoding: "utf8",
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
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
    const listed = cli(["investigations", "list", "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { id, status: "open", qualifies: true, subject: WALLET },
    ]);

    const shown = cli(["investigations", "show", String(id)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("won 17 of 20 resolved politics bets");

    expect(cli(["investigations", "dismiss", String(id)]).stdout).toContain(
      `investigation ${id} is now dismissed`,
    );
    refreshFunding(t.db, t.clock.now(), { force: true });
    expect((await t.get(`/v1/investigations/${id}`, t.key("terminal_pro"))).status).toBe(404);
    expect(JSON.parse(cli(["investigations", "list", "--json"]).stdout)).toEqual([]);
    const dismissed = JSON.parse(
      cli(["investigations", "list", "--status", "dismissed", "--json"]).stdout,
    );
    expect(dismissed.map((r: { id: number }) => r.id)).toEqual([id]);

    const again = cli(["investigations", "dismiss", String(id)]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`smartmoney: investigation ${id} is already dismissed`);

    expect(cli(["investigations", "reopen", String(id), "--json"]).code).toBe(0);
    expect((await t.get(`/v1/investigations/${id}`, t.key("terminal_pro"))).status).toBe(200);
  });

  it("refuses unknown and malformed ids", () => {
    const unknown = cli(["investigations", "show", "999"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no investigation with id 999");
    expect(cli(["investigations", "reopen", "0"]).code).toBe(2);
  });
});
