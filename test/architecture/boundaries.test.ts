import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The core is free of HTTP: REST (src/http) and MCP (src/mcp) are adapters over it, and only the
 * composition root (src/app.ts) knows both. Read from the import statements themselves.
 */
const SRC = new URL("../../src", import.meta.url).pathname;

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

/** Every module specifier a file imports or re-exports, type-only ones included. */
function specifiers(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gm)].map((m) => m[1]!);
}

const files = [...sources(SRC)].map((path) => ({ path, name: relative(SRC, path) }));
const adapter = /^(http|mcp)\//;
const framework = /^(hono|@hono\/|hono-openapi|@modelcontextprotocol\/)/;

describe("module boundaries", () => {
  it("nothing outside http/ and mcp/ imports hono or the MCP SDK, not even a type", () => {
    const offenders = files
      .filter(({ name }) => !adapter.test(name))
      .flatMap(({ name, path }) =>
        specifiers(path)
          .filter((s) => framework.test(s))
          .map((s) => `${name} imports ${s}`),
      );
    expect(offenders).toEqual([]);
  });

  it("only app.ts, the composition root, imports the adapters or the app", () => {
    const offenders = files
      .filter(({ name }) => !adapter.test(name) && name !== "app.ts")
      .flatMap(({ name, path }) =>
        specifiers(path)
          .filter((s) => /(^|\/)(http|mcp)\//.test(s) || /\/app$/.test(s))
          .map((s) => `${name} imports ${s}`),
      );
    expect(offenders).toEqual([]);
  });

  it("MCP reaches into REST only for its own HTTP transport (mcp/http.ts)", () => {
    const offenders = files
      .filter(({ name }) => name.startsWith("mcp/") && name !== "mcp/http.ts")
      .flatMap(({ name, path }) =>
        specifiers(path)
          .filter((s) => /(^|\/)http\//.test(s))
          .map((s) => `${name} imports ${s}`),
      );
    expect(offenders).toEqual([]);
  });

  it("src/db imports nothing above it: only its own files, Node, SQLite and the error types", () => {
    // Every layer builds on src/db, so an import from above would be a cycle in waiting; the
    // migrations, whose data steps reuse other layers' code, live above it (src/migrations).
    const offenders = files
      .filter(({ name }) => name.startsWith("db/"))
      .flatMap(({ name, path }) =>
        specifiers(path)
          .filter(
            (s) =>
              !s.startsWith("./") &&
              !s.startsWith("node:") &&
              s !== "better-sqlite3" &&
              s !== "../errors",
          )
          .map((s) => `${name} imports ${s}`),
      );
    expect(offenders).toEqual([]);
  });

  it("only src/db imports better-sqlite3", () => {
    const offenders = files
      .filter(({ name }) => !name.startsWith("db/"))
      .filter(({ path }) => specifiers(path).includes("better-sqlite3"))
      .map(({ name }) => name);
    expect(offenders).toEqual([]);
  });

  it("only src/history/engine.ts imports DuckDB, and only lazily", () => {
    const offenders = files
      .filter(({ name }) => name !== "history/engine.ts")
      .filter(({ path }) => specifiers(path).some((s) => s.startsWith("@duckdb/")))
      .map(({ name }) => name);
    expect(offenders).toEqual([]);
    // A static import would load DuckDB's 70 MB library in every process that starts the CLI.
    const engine = files.find(({ name }) => name === "history/engine.ts")!;
    expect(readFileSync(engine.path, "utf8")).not.toMatch(/^import (?!type )[^;]*"@duckdb\//m);
  });
});
