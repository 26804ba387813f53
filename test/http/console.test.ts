import { gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP } from "../../src/http/console-page";
import { createTestApp } from "../helpers/app";

/** The console's files as the router serves them (the browser tests are in test/console). */
const t = createTestApp();
afterAll(() => t.close());

describe("the console's files at /console", () => {
  it("serves the page, its script and its stylesheet with no key, under a strict CSP", async () => {
    for (const [path, type] of [
      ["/console", "text/html"],
      ["/console/app.js", "text/javascript"],
      ["/console/app.css", "text/css"],
    ] as const) {
      const res = await t.raw(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toContain(type);
      expect(res.headers.get("content-security-policy"), path).toBe(CONSOLE_CSP);
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), path).toBe("no-referrer");
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain("unsafe");
    const page = await (await t.raw("/console")).text();
    expect(page).toContain('<script src="/console/app.js" defer></script>');
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/);
  });

  it("gzips for clients that accept it, and answers 304 to a matching ETag", async () => {
    const plain = await t.raw("/console/app.js");
    const body = await plain.text();
    expect(body.length).toBeGreaterThan(100_000);
    const zipped = await t.raw("/console/app.js", undefined, {
      headers: { "accept-encoding": "gzip, br" },
    });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    const bytes = Buffer.from(await zipped.arrayBuffer());
    expect(bytes.length).toBeLessThan(body.length / 2);
    expect(gunzipSync(bytes).toString()).toBe(body);
    const etag = plain.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    const again = await t.raw("/console/app.js", undefined, {
      headers: { "if-none-match": etag! },
    });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  it("redirects /console/ to /console and stays out of the OpenAPI document", async () => {
    const res = await t.raw("/console/");
    expect(res.status).toBe(301);
    expect(res.headers.get("location")).toBe("/console");
    const doc = (await (await t.raw("/v1/openapi.json")).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/console"))).toEqual([]);
  });
});
