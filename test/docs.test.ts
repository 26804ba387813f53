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
  it("has current generated references: CLI, endpoints, settings, the schema pages (else run npm run docs)", async () => {
    expect(await staleDocs()).toEqual([]);
  }, 30_000);

  it("documents every setting in docs/configuration.md", () => {
    const text = read("docs/configuration.md");
    const missing = SETTINGS.filter((s) => !text.includes(s.env)).map((s) => s.env);
    expect(missing).toEqual([]);
  });

  it("cites no document outside the repository", () => {
    const roots = ["src", "cli", "test", "bench", "build", "sql", "scripts", "docs", ".ci"];
    const files = [...roots.flatMap((root) => [...filesUnder(root)]), "README.md"];
    // Every Markdown file a text names is one of the repository's own.
    const ours = new Set(files.filter((f) => f.endsWith(".md")).map((f) => f.split("/").at(-1)));
    // A section sign (U+00A7) cites a section of some document: only an RFC's may be cited.
    const section = /\u00a7/g;
    // Paths into the folder beside the repository and its notes (built from parts, so this
    // file does not match itself).
    const outsidePath = new RegExp(
      `\\b${"shared"}/|\\/work\\/${"shared"}\\b|(^|[\\s(\`'"])${"notes"}/`,
      "m",
    );
    const citing = files.flatMap((file) => {
      const text = read(file);
      const found = [...text.matchAll(/[\w-]+\.md\b/g)]
        .map((m) => m[0])
        .filter((name) => !ours.has(name));
      for (const m of text.matchAll(section)) {
        if (!/RFC \d+\s*$/.test(text.slice(Math.max(0, m.index - 16), m.index)))
          found.push("a section sign");
      }
      if (outsidePath.test(text)) found.push("a path outside the repository");
      return found.map((what) => `${file}: ${what}`);
    });
    expect(citing).toEqual([]);
  });

  it("keeps every page within 30 KB, and the architecture within 25: a page says how it is now", () => {
    const kb = (file: string) => Buffer.byteLength(read(file)) / 1024;
    expect(kb("docs/architecture.md")).toBeLessThanOrEqual(25);
    const pages = readdirSync(new URL("../docs", import.meta.url)).filter((f) => f.endsWith(".md"));
    expect(pages.length).toBeGreaterThan(10);
    for (const page of pages) expect(kb(`docs/${page}`), page).toBeLessThanOrEqual(30);
  });

  it("cites only sections and anchors that exist", () => {
    const pages = new Map(
      readdirSync(join(ROOT, "docs"))
        .filter((name) => name.endsWith(".md"))
        .map((name) => [name, read(join("docs", name))]),
    );
    const headings = (page: string) =>
      [...(pages.get(page) ?? "").matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim());
    // GitHub's anchor for a heading, and the ids a page sets itself.
    const slug = (heading: string) =>
      heading
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s-]/gu, "")
        .replace(/\s/g, "-");
    const anchors = (page: string) =>
      new Set([
        ...headings(page).map(slug),
        ...[...(pages.get(page) ?? "").matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]!),
      ]);
    const roots = ["src", "cli", "test", "bench", "build", "sql", "docs"];
    const files = [...roots.flatMap((root) => [...filesUnder(root)]), "README.md"];
    const broken: string[] = [];
    for (const file of files) {
      // A citation may wrap across comment lines: join them first.
      const text = read(file).replace(/\n\s*(?:\/\/|\*|--)?\s*/g, " ");
      for (const m of text.matchAll(/\b(architecture|operations|scaling)\.md,? \(?"([^"]+)"/g)) {
        const [page, section] = [`${m[1]}.md`, m[2]!];
        if (!headings(page).some((h) => h.startsWith(section)))
          broken.push(`${file}: ${page}, "${section}"`);
      }
      for (const m of text.matchAll(/\(((?:docs\/)?([\w-]+\.md))#([\w-]+)\)/g)) {
        const page = m[2]!;
        if (pages.has(page) && !anchors(page).has(m[3]!)) broken.push(`${file}: ${page}#${m[3]}`);
      }
    }
    expect(broken).toEqual([]);
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
