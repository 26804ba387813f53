import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import SwaggerParser from "@apidevtools/swagger-parser";
import { serve } from "@hono/node-server";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Document, Spectral } from "@stoplight/spectral-core";
import { Json } from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TIERS, type Tier } from "../../src/auth/tiers";
import { answerClientErrors } from "../../src/http/client-error";
import { createTestApp, type TestApp } from "../helpers/app";
import { httpClient } from "../mcp/world";

interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema: Record<string, unknown>;
}
interface OpenApi {
  tags?: { name: string }[];
  paths: Record<
    string,
    Record<
      string,
      { tags?: string[]; parameters?: Parameter[]; responses: Record<string, unknown> }
    >
  >;
}

let t: TestApp;
let doc: OpenApi;

beforeAll(async () => {
  t = createTestApp();
  doc = (await (await t.raw("/v1/openapi.json")).json()) as OpenApi;
});
afterAll(() => t.close());

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method, op })),
  );

describe("the served OpenAPI document passes strict validators", () => {
  it("swagger-parser's validate", async () => {
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  it("@seriousme/openapi-schema-validator", async () => {
    const result = await new Validator().validate(structuredClone(doc) as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("Spectral's spectral:oas ruleset: no errors, and no warnings but the contact", async () => {
    const spectral = new Spectral();
    spectral.setRuleset(oas as never);
    const results = await spectral.run(new Document(JSON.stringify(doc), Json));
    const found = results.map(
      (r) =>
        `${r.severity === 0 ? "error" : "warning"} ${r.code} ${r.path.join(".")}: ${r.message}`,
    );
    // A self-hosted appliance has no one contact to publish; every other rule holds.
    expect(found.filter((line) => !line.startsWith("warning info-contact"))).toEqual([]);
  }, 30_000);
});

describe("what the document says of parameters is what the server enforces", () => {
  it("every path parameter is required and carries no default", () => {
    const path = operations().flatMap(({ op }) =>
      (op.parameters ?? []).filter((p) => p.in === "path"),
    );
    expect(path.length).toBeGreaterThanOrEqual(20);
    for (const p of path) {
      expect(p.required, p.name).toBe(true);
      expect(p.schema.default, p.name).toBeUndefined();
    }
  });

  it("no query parameter is a bare string: numbers, booleans, enums and formats are typed", () => {
    // Free text, searched or matched as given, and the opaque cursor.
    const freeText = new Set(["category", "search", "cursor"]);
    for (const { path, op } of operations()) {
      for (const p of (op.parameters ?? []).filter((p) => p.in === "query")) {
        const s = p.schema;
        const typed =
          s.type !== "string" || s.enum || s.pattern || s.anyOf || s.format || s.minLength;
        expect(typed || freeText.has(p.name), `${path} ${p.name}`).toBeTruthy();
      }
    }
    const search = doc.paths["/v1/wallets/search"]!.get!.parameters!;
    expect(search.find((p) => p.name === "q")).toMatchObject({ required: true });
    const flow = doc.paths["/v1/markets/{slug}/flow"]!.get!.parameters!;
    expect(flow.find((p) => p.name === "minutes")!.schema).toMatchObject({
      type: "integer",
      minimum: 5,
      maximum: 1440,
      default: 60,
    });
    expect(flow.find((p) => p.name === "whales_only")!.schema).toMatchObject({
      type: "boolean",
      default: true,
    });
  });

  it("documents a 500 and declares its tag on every operation", () => {
    const declared = new Set((doc.tags ?? []).map((tag) => tag.name));
    for (const { path, method, op } of operations()) {
      expect(Object.keys(op.responses), `${method} ${path}`).toContain("500");
      for (const tag of op.tags ?? []) expect(declared.has(tag), tag).toBe(true);
    }
  });
});

describe("every operation's minimum tier, from its x-min-tier", () => {
  it("is enforced: 403 one tier below, admitted at the tier", async () => {
    const ops = operations();
    for (const { path, method, op } of ops) {
      const tier = (op as { "x-min-tier"?: Tier })["x-min-tier"];
      expect(tier, `${method} ${path}`).toBeDefined();
      const url = path.replace(/\{\w+\}/g, "x");
      const init = { method: method.toUpperCase() };
      const below = TIERS[TIERS.indexOf(tier!) - 1];
      if (below) {
        const res = await t.get(url, t.key(below), init);
        expect(res.status, `${method} ${path} on ${below}`).toBe(403);
        expect(await res.text()).toContain(`needs the ${tier} tier`);
      }
      const res = await t.get(url, t.key(tier!), init);
      expect([401, 403], `${method} ${path} on ${tier}`).not.toContain(res.status);
    }
    const tiers = ops.map(({ op }) => (op as { "x-min-tier"?: Tier })["x-min-tier"]);
    for (const tier of TIERS) expect(tiers).toContain(tier);
  });
});

describe("error answers", () => {
  it("401s carry the Bearer challenge, on /v1 and /mcp, each naming its own kind of key", async () => {
    const rest = await t.get("/v1/_ping");
    expect(rest.status).toBe(401);
    expect(rest.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    expect(((await rest.json()) as { error: { message: string } }).error.message).toContain(
      "svc_api_",
    );
    const mcp = await t.raw("/mcp", undefined, { method: "POST", body: "{}" });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    const { message } = ((await mcp.json()) as { error: { message: string } }).error;
    expect(message).toContain("MCP key");
    expect(message).not.toContain("API");
    const revoked = await t.raw("/mcp", `svc_mcp_${"0".repeat(48)}`, {
      method: "POST",
      body: "{}",
    });
    expect(((await revoked.json()) as { error: { message: string } }).error.message).toBe(
      "invalid or revoked MCP key",
    );
  });

  it("a repeated query parameter is refused in our words", async () => {
    const key = t.key("terminal");
    for (const query of ["limit=5&limit=6", "side=BUY&side=SELL", "wallet=0x&wallet=0x"]) {
      const res = await t.get(`/v1/trades?${query}`, key);
      expect(res.status).toBe(400);
      const { message } = ((await res.json()) as { error: { message: string } }).error;
      expect(message).toBe(`${query.split("=")[0]} must be given at most once`);
    }
  });

  it("an unknown category is not echoed back", async () => {
    const long = "x".repeat(5_000);
    const res = await t.get(`/v1/leaderboards/category/${long}`, t.key("terminal"));
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain("xxxxxxxx");
  });

  it("MCP does not advertise tools.listChanged", async () => {
    const client = await httpClient(t.app, t.key("terminal", { kind: "mcp" }));
    try {
      expect(client.getServerCapabilities()?.tools?.listChanged).not.toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe("the API reference at /docs", () => {
  it("serves the page and Scalar's viewer from this installation, no key needed", async () => {
    const page = await t.raw("/docs");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('src="/docs/scalar.js"');
    const viewer = await t.raw("/docs/scalar.js");
    expect(viewer.status).toBe(200);
    expect(viewer.headers.get("content-type")).toContain("javascript");
    // The real viewer (a devDependency, installed here), not the note served without it.
    expect((await viewer.text()).length).toBeGreaterThan(100_000);
  });
});

describe("behind a real loopback server", () => {
  /** One raw request, so header names arrive as the server spelled them. */
  function raw(port: number, path: string, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; rawHeaders: string[]; body: string }>(
      (resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port, path, headers }, (res) => {
          let body = "";
          res.on("data", (chunk) => {
            body += chunk;
          });
          res.on("end", () =>
            resolve({ status: res.statusCode!, rawHeaders: res.rawHeaders, body }),
          );
        });
        req.on("error", reject);
        req.end();
      },
    );
  }

  it("errors spell X-Request-Id as successes do, and headers over 16 KiB get the envelope", async () => {
    const server = serve({ fetch: t.app.http.fetch, hostname: "127.0.0.1", port: 0 });
    answerClientErrors(server);
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    const { port } = server.address() as AddressInfo;
    try {
      const names = (h: string[]) => h.filter((_, i) => i % 2 === 0);
      const ok = await raw(port, "/v1/_ping", { authorization: `Bearer ${t.key("free")}` });
      expect(ok.status).toBe(200);
      expect(names(ok.rawHeaders)).toContain("X-Request-Id");
      const denied = await raw(port, "/v1/_ping");
      expect(denied.status).toBe(401);
      expect(names(denied.rawHeaders)).toContain("X-Request-Id");
      expect(names(denied.rawHeaders)).toContain("WWW-Authenticate");

      const big = await raw(port, "/v1/_ping", { "x-padding": "p".repeat(20_000) });
      expect(big.status).toBe(431);
      const body = JSON.parse(big.body) as { error: { code: string; request_id: string } };
      expect(body.error.code).toBe("bad_request");
      expect(names(big.rawHeaders)).toContain("X-Request-Id");
      expect(big.rawHeaders[big.rawHeaders.indexOf("X-Request-Id") + 1]).toBe(
        body.error.request_id,
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
