import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { expectRefused, runCli } from "../helpers/cli";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-cli-"));
const db = join(dir, "cli.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `smartmoney ARGS` against the test database, in this process (test/helpers/cli.ts): the same
 * main() the binary runs. Only the serve test below needs a real process, for SIGTERM.
 */
function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { SMARTMONEY_DB: db, SMARTMONEY_LOG_LEVEL: "error", ...env });
}

/** `serve --port 0` from source on the test database, once it says where it listens. */
async function serveFromSource(args: string[]) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "cli/main.ts", "serve", "--port", "0", ...args],
    { cwd: root, env: { ...process.env, SMARTMONEY_DB: db } },
  );
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  return { child, base, stderr: () => stderr };
}

describe("smartmoney CLI", () => {
  it("mints a key per tier, printed once as JSON, and lists them without the key", async () => {
    const minted = await cli(["keys", "mint", "--tier", "terminal", "--account", "acme", "--json"]);
    expect(minted.code).toBe(0);
    const out = JSON.parse(minted.stdout) as Record<string, string>;
    expect(Object.keys(out)).toEqual(["key", "id", "account", "tier"]);
    expect(out.key).toMatch(/^svc_api_[0-9a-f]{48}$/);
    expect(out).toMatchObject({ account: "acme", tier: "terminal" });
    const mcp = JSON.parse(
      (
        await cli([
          "keys",
          "mint",
          "--tier",
          "terminal",
          "--account",
          "acme",
          "--kind",
          "mcp",
          "--json",
        ])
      ).stdout,
    );
    expect(mcp.key).toMatch(/^svc_mcp_[0-9a-f]{48}$/);

    const listed = await cli(["keys", "list", "--json"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(out.key);
    const keys = JSON.parse(listed.stdout) as { id: string; kind: string }[];
    expect(keys.map((k) => k.id)).toContain(out.id);
  });

  it("refuses a key for an existing account on another tier with one line and exit 1", async () => {
    await cli(["keys", "mint", "--tier", "free", "--account", "tiered"]);
    const res = await cli(["keys", "mint", "--tier", "terminal", "--account", "tiered"]);
    expectRefused(res, "accounts set-tier tiered terminal");
  });

  it("revokes by id and says so; revoking twice is an error", async () => {
    const { id } = JSON.parse((await cli(["keys", "mint", "--tier", "free", "--json"])).stdout);
    expect((await cli(["keys", "revoke", id])).code).toBe(0);
    const again = await cli(["keys", "revoke", id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already revoked/);
  });

  it("sets tiers and limits on accounts", async () => {
    await cli(["keys", "mint", "--tier", "free", "--account", "grow"]);
    expect((await cli(["accounts", "set-tier", "grow", "terminal_pro"])).code).toBe(0);
    const limits = await cli(["accounts", "set-limits", "grow", "--hourly", "100000", "--json"]);
    expect(JSON.parse(limits.stdout)).toMatchObject({
      tier: "terminal_pro",
      hourly_limit: 100000,
      monthly_limit: 250000,
    });
    const reset = await cli(["accounts", "set-limits", "grow", "--reset", "--json"]);
    expect(JSON.parse(reset.stdout)).toMatchObject({ hourly_limit: 5000 });
    const list = JSON.parse((await cli(["accounts", "list", "--json"])).stdout) as {
      name: string;
    }[];
    expect(list.map((a) => a.name)).toContain("grow");
  });

  it("exits 2 on usage errors", async () => {
    expect((await cli(["keys", "mint", "--tier", "gold"])).code).toBe(2);
    expect((await cli(["keys", "mint"])).code).toBe(2);
    expect((await cli(["no-such-command"])).code).toBe(2);
    expect((await cli(["accounts", "set-limits", "x", "--hourly", "lots"])).code).toBe(2);
  });

  it("names an unknown account alike in every accounts command, with how to create it", async () => {
    const hint = 'no account named "ghost" (create one with: keys mint --account ghost)';
    expectRefused(await cli(["accounts", "set-tier", "ghost", "terminal"]), hint);
    expectRefused(await cli(["accounts", "set-limits", "ghost", "--hourly", "5"]), hint);
  });

  it("stops at start on invalid configuration, listing every problem in one line", async () => {
    const res = await cli(["migrate"], { SMARTMONEY_PORT: "x", SMARTMONEY_LOG_LEVEL: "loud" });
    expectRefused(res, "SMARTMONEY_PORT", "SMARTMONEY_LOG_LEVEL");
  });

  it("migrates idempotently", async () => {
    const first = await cli(["migrate", "--json"]);
    expect(first.code).toBe(0);
    const second = JSON.parse((await cli(["migrate", "--json"])).stdout);
    expect(second.applied).toEqual([]);
  });

  it("prints a job's summary as text, nested parts (the refresh's phases) as indented lines", async () => {
    const { code, stdout } = await cli(["jobs", "run", "refresh", "--full"]);
    expect(code).toBe(0);
    expect(stdout).not.toContain("[object Object]");
    expect(stdout).toMatch(/^refresh:\n {2}kind full\n/);
    expect(stdout).toMatch(/\n {2}phases\n {4}plan \d+\n {4}drop_tables \d+\n/);
  });

  it("runs a job at the time --now gives, and refuses one that is not an instant", async () => {
    const { code, stdout } = await cli([
      "jobs",
      "run",
      "refresh",
      "--now",
      "2026-05-01T12:00:00Z",
      "--json",
    ]);
    expect(code).toBe(0);
    const summary = JSON.parse(stdout) as { job: string; as_of: string };
    expect(summary.job).toBe("refresh");
    // The clock starts at --now and runs on: the run is within moments of it.
    const asOf = Date.parse(summary.as_of) - Date.parse("2026-05-01T12:00:00Z");
    expect(asOf).toBeGreaterThanOrEqual(0);
    expect(asOf).toBeLessThan(60_000);
    const bad = await cli(["jobs", "run", "refresh", "--now", "soon"]);
    expectRefused(
      bad,
      '--now must be an RFC 3339 date-time or date, or Unix milliseconds such as 2026-11-01T00:00:00Z, not "soon"',
    );
  });

  it("compacts by hand only with SMARTMONEY_FILL_RETENTION set, and reports it in status", async () => {
    const off = await cli(["jobs", "run", "compact"]);
    expectRefused(off, "fill retention is off: set SMARTMONEY_FILL_RETENTION");
    const on = await cli(["jobs", "run", "compact", "--json"], {
      SMARTMONEY_FILL_RETENTION: "2160h",
    });
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ job: "compact", retention: "2160h", markets: 0 });
    const status = await cli(["status"], { SMARTMONEY_FILL_RETENTION: "2160h" });
    expect(status.stdout).toContain("fill retention    2160h, no market compacted");
    const report = JSON.parse((await cli(["status", "--json"])).stdout);
    expect(report.fills).toEqual({ total: 0, recent: 0, history: 0, newest_at: null });
    const bad = await cli(["status"], { SMARTMONEY_FILL_RETENTION: "10d" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'SMARTMONEY_FILL_RETENTION: "10d" must be a duration of at least 720h',
    );
  });

  it("refuses a --now that is not an instant with one line and exit 1", async () => {
    const res = await cli(["serve", "--port", "0", "--now", "yesterday"]);
    expectRefused(
      res,
      '--now must be an RFC 3339 date-time or date, or Unix milliseconds such as 2026-11-01T00:00:00Z, not "yesterday"',
    );
  });

  it("serves a recorded world at its own time with --now: rate windows follow that clock", async () => {
    const { key } = JSON.parse((await cli(["keys", "mint", "--tier", "free", "--json"])).stdout);
    // The API alone (--no-jobs): the clock of its rate windows is the point, not the jobs.
    const { child, base } = await serveFromSource(["--now", "2026-01-01T00:00:00Z", "--no-jobs"]);
    const res = await fetch(`${base}/v1/_ping`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    // The binding window resets within 30 days of the served clock's start, not of today.
    const reset = Number(res.headers.get("x-ratelimit-reset"));
    const start = Date.parse("2026-01-01T00:00:00Z") / 1000;
    expect(reset).toBeGreaterThan(start);
    expect(reset).toBeLessThanOrEqual(start + 31 * 86_400);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("serves, answers a ping, and shuts down cleanly on SIGTERM", async () => {
    const { key } = JSON.parse(
      (await cli(["keys", "mint", "--tier", "terminal_pro", "--json"])).stdout,
    );
    const { child, base, stderr } = await serveFromSource([]);
    const res = await fetch(`${base}/v1/_ping`, { headers: { authorization: `Bearer ${key}` } });
    expect(await res.json()).toEqual({ ok: true, tier: "terminal_pro" });
    // The port was picked at listen time; the OpenAPI document names it, not port 0.
    const spec = (await (await fetch(`${base}/v1/openapi.json`)).json()) as {
      servers: { url: string }[];
    };
    expect(spec.servers).toEqual([{ url: base }]);
    // Over real HTTP the headers take the Node fast path (src/http/headers.ts): check them there.
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{20,}$/);
    expect(res.headers.get("x-ratelimit-limit")).toBe("5000");
    expect(res.headers.get("x-ratelimit-remaining")).toBe("4999");
    expect(res.headers.get("x-ratelimit-reset")).toMatch(/^\d+$/);
    const missing = await fetch(`${base}/v1/wallets/0x${"0".repeat(40)}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(missing.status).toBe(404);
    const envelope = (await missing.json()) as { error: { request_id: string } };
    expect(missing.headers.get("x-request-id")).toBe(envelope.error.request_id);
    expect(missing.headers.get("x-ratelimit-remaining")).toBe("4998");
    const unauthorized = await fetch(`${base}/v1/_ping`);
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get("x-request-id")).toMatch(/^req_/);
    expect(unauthorized.headers.get("x-ratelimit-limit")).toBeNull();
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr()).toContain('"msg":"stopped"');
    expect(stderr()).not.toContain(key);
  });
});
