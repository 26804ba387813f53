import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAccounts, KEY_CACHE_MS } from "../../src/auth/accounts";
import { openDb } from "../../src/db/open";
import type { HttpEnv } from "../../src/http/env";
import { access } from "../../src/http/middleware/auth";
import { createTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
beforeEach(() => {
  t = createTestApp();
});
afterEach(() => t.close());

async function expectEnvelope(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toMatch(/^req_[0-9a-f]{20,}$/);
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id"]);
  expect(body.error.code).toBe(code);
  expect(body.error.request_id).toBe(requestId);
  expect(typeof body.error.message).toBe("string");
  expect((body.error.message as string).length).toBeGreaterThan(5);
  return body.error;
}

describe("GET /v1/_ping", () => {
  it.each(["free", "terminal", "terminal_pro"] as const)("answers the %s tier", async (tier) => {
    const res = await t.get("/v1/_ping", t.key(tier));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, tier });
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
      expect(res.headers.get(h)).toMatch(/^\d+$/);
    }
  });
});

describe("authentication", () => {
  const cases: [string, Record<string, string>, string][] = [
    ["no header", {}, "missing Authorization"],
    ["not bearer", { authorization: "Basic abc" }, "malformed"],
    ["bearer without key", { authorization: "Bearer" }, "malformed"],
    ["unknown key", { authorization: `Bearer svc_api_${"0".repeat(48)}` }, "invalid or revoked"],
    ["wrong shape", { authorization: "Bearer svc_api_xyz" }, "invalid or revoked"],
    ["uppercase hex", { authorization: `Bearer svc_api_${"A".repeat(48)}` }, "invalid or revoked"],
  ];
  it.each(cases)("401 for %s", async (_name, headers, message) => {
    const res = await t.app.http.request("/v1/_ping", { headers });
    const error = await expectEnvelope(res, 401, "unauthorized");
    expect(error.message).toContain(message);
    expect(res.headers.get("x-ratelimit-limit")).toBeNull();
  });

  it("refuses an MCP key on /v1", async () => {
    const res = await t.get("/v1/_ping", t.key("terminal", { kind: "mcp" }));
    const error = await expectEnvelope(res, 401, "unauthorized");
    expect(error.message).toContain("MCP key");
  });

  it("refuses a key revoked by another process within 1 second", async () => {
    const key = t.key("terminal");
    expect((await t.get("/v1/_ping", key)).status).toBe(200);
    // Another process (the CLI) revoking through its own connection.
    const other = openDb(t.config.dbPath);
    const revoked = createAccounts(other, t.clock).revokeKey(key);
    other.close();
    expect(revoked.ok).toBe(true);
    t.clock.advance(KEY_CACHE_MS);
    expect(KEY_CACHE_MS).toBeLessThan(1_000);
    await expectEnvelope(await t.get("/v1/_ping", key), 401, "unauthorized");
  });

  it("refuses a key revoked through the server's own process at once", async () => {
    const key = t.key("terminal");
    expect((await t.get("/v1/_ping", key)).status).toBe(200);
    expect(t.app.accounts.revokeKey(key).ok).toBe(true);
    await expectEnvelope(await t.get("/v1/_ping", key), 401, "unauthorized");
  });

  it("stores only a hash of each key", () => {
    const key = t.key("free");
    const dump = JSON.stringify(t.db.writer.prepare("SELECT * FROM api_keys").all());
    expect(dump).not.toContain(key);
    expect(dump).not.toContain(key.slice(8));
  });
});

describe("errors", () => {
  it("404 envelope for an unknown route, with quota headers for a known caller", async () => {
    const res = await t.get("/v1/no-such-thing", t.key("free"));
    await expectEnvelope(res, 404, "not_found");
    expect(res.headers.get("x-ratelimit-remaining")).toBe("50");
  });

  it("404 envelope for an unknown path outside /v1 and for an unknown method", async () => {
    await expectEnvelope(await t.get("/nope"), 404, "not_found");
    await expectEnvelope(
      await t.get("/v1/_ping", t.key("free"), { method: "DELETE" }),
      404,
      "not_found",
    );
  });

  it("413 envelope for a body over 64 KiB", async () => {
    const res = await t.get("/v1/_ping", t.key("free"), {
      method: "POST",
      body: "x".repeat(64 * 1024 + 1),
      headers: { "content-type": "application/json" },
    });
    await expectEnvelope(res, 413, "bad_request");
  });

  it("500 envelope for a thrown exception, leaking no stack or SQL, logged with the request id", async () => {
    t.app.http.get("/v1/boom", () => {
      throw new Error("SELECT secret FROM somewhere near line 3");
    });
    const res = await t.raw("/v1/boom", t.key("free"));
    const error = await expectEnvelope(res, 500, "internal_error");
    expect(JSON.stringify(error)).not.toMatch(/SELECT|at .*\.ts|Error:/);
    const logged = t.logs.find((l) => l.msg === "unhandled error");
    expect(logged?.request_id).toBe(error.request_id);
  });

  it("sends no CORS headers, preflights included", async () => {
    const preflight = await t.app.http.request("/v1/_ping", {
      method: "OPTIONS",
      headers: {
        origin: "https://evil.example",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    const ping = await t.get("/v1/_ping", t.key("free"), {
      headers: { origin: "https://evil.example" },
    });
    for (const res of [preflight, ping]) {
      for (const name of res.headers.keys()) expect(name).not.toMatch(/^access-control-/);
    }
    expect(preflight.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("serves /healthz and the OpenAPI document without a key", async () => {
    const health = await t.get("/healthz");
    expect(await health.json()).toEqual({ ok: true, storage: { state: "ok" } });
    const doc = (await (await t.get("/v1/openapi.json")).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/v1/_ping"]).toBeDefined();
  });
});

describe("tier gate", () => {
  function gated() {
    const http = t.app.http;
    const sub = new Hono<HttpEnv>()
      .get("/gated-terminal", access(t.app.limiter, "terminal"), (c) => c.json({ ok: true }))
      .get("/gated-pro", access(t.app.limiter, "terminal_pro"), (c) => c.json({ ok: true }));
    http.route("/v1", sub);
  }

  it("403 below the minimum tier, naming the tier needed; not counted", async () => {
    gated();
    const free = t.key("free");
    for (let i = 0; i < 60; i++) {
      const res = await t.raw("/v1/gated-terminal", free);
      const error = await expectEnvelope(res, 403, "forbidden");
      expect(error.message).toContain("terminal");
      expect(res.headers.get("x-ratelimit-remaining")).toBe("50");
    }
    expect((await t.get("/v1/_ping", free)).status).toBe(200);
  });

  it("admits at and above the minimum tier", async () => {
    gated();
    expect((await t.raw("/v1/gated-terminal", t.key("terminal"))).status).toBe(200);
    expect((await t.raw("/v1/gated-terminal", t.key("terminal_pro"))).status).toBe(200);
    await expectEnvelope(await t.raw("/v1/gated-pro", t.key("terminal")), 403, "forbidden");
  });
});

describe("request log", () => {
  it("writes one line per request with id, account, route, status and duration, never the key", async () => {
    const key = t.key("terminal");
    const res = await t.get("/v1/_ping", key);
    await t.get("/v1/_ping", "svc_api_bad");
    t.app.deps.log.flush();
    // The contract check reads /v1/openapi.json through the app too; leave its line out.
    const lines = t.logs.filter((l) => l.msg === "request" && l.path !== "/v1/openapi.json");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      request_id: res.headers.get("x-request-id"),
      route: "/v1/_ping",
      status: 200,
      method: "GET",
    });
    expect(lines[0]!.account_id).toEqual(expect.any(Number));
    expect(lines[0]!.duration_ms).toEqual(expect.any(Number));
    expect(lines[1]).toMatchObject({ status: 401, account_id: null });
    expect(t.logText()).not.toContain(key);
    expect(t.logText()).not.toContain(key.slice(8, 40));
  });
});
