import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { staleDocs } from "../build/docs";
import { SETTINGS } from "../src/config";

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), "utf8");

describe("the documentation", () => {
  it("has current generated references (else run npm run docs)", async () => {
    expect(await staleDocs()).toEqual([]);
  }, 30_000);

  it("documents every setting in docs/configuration.md", () => {
    const text = read("docs/configuration.md");
    const missing = SETTINGS.filter((s) => !text.includes(s.env)).map((s) => s.env);
    expect(missing).toEqual([]);
  });

  it("keeps the README short, with the quick start and working links", () => {
    const readme = read("README.md");
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(10 * 1024);
    expect(readme).toContain("npm ci && npm run demo");
    expect(readme).toContain("npm test");
    const links = [...readme.matchAll(/\]\(((?:docs\/)[^)#]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(() => read(link), link).not.toThrow();
  });
});
