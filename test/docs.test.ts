import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { staleDocs } from "../build/docs";
import { SETTINGS } from "../src/config";

const ROOT = new URL("..", import.meta.url).pathname;
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

function* filesUnder(dir: string): Generator<string> {
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) yield* filesUnder(path);
    else if (/\.(ts|md|sql|sh)$/.test(name) || dir === ".ci") yield path;
  }
}

describe("the documentation", () => {
  it("has current generated references (else run npm run docs)", async () => {
    expect(await staleDocs()).toEqual([]);
  }, 30_000);

  it("documents every setting in docs/configuration.md", () => {
    const text = read("docs/configuration.md");
    const missing = SETTINGS.filter((s) => !text.includes(s.env)).map((s) => s.env);
    expect(missing).toEqual([]);
  });

  it("cites no document outside the repository", () => {
    // Built from parts, so this file does not match itself: the product documents by name or
    // section sign, and any path into the folder they live in or its notes folder.
    const names = ["SPEC", "DECISIONS", "METHODOLOGY", "STYLE"].join("|");
    const cite = new RegExp(
      `\\b(${names})(\\.md\\b|\\s*§)|\\b${"shared"}/|\\/work\\/${"shared"}\\b|(^|[\\s(\`'"])${"notes"}/`,
      "m",
    );
    const roots = ["src", "cli", "test", "bench", "build", "sql", "scripts", "docs", ".ci"];
    const citing = [...roots.flatMap((root) => [...filesUnder(root)]), "README.md"].filter((file) =>
      cite.test(read(file)),
    );
    expect(citing).toEqual([]);
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
