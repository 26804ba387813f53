import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";

/**
 * A statement whose LIMIT is a bare bound parameter (`LIMIT ?`, `LIMIT @limit`) is prepared
 * again on every run: SQLite's planner reads the bound LIMIT, so binding it expires the statement
 * (docs/architecture.md, "Bound parameters the planner reads"). Written `LIMIT +?` the value is
 * an expression the planner does not read, and the prepared plan is kept. Read from the source
 * text. Equalities the planner reads depend on the plan, not the text:
 * test/db/statement-reprepare.test.ts watches a running process for those.
 */
const SRC = new URL("../../src", import.meta.url).pathname;

/**
 * Files not yet swept: the ingest stages run once per batch, not per request (and a change there
 * makes the benchmarks rebuild their worlds).
 */
const NOT_YET = new Set([
  "ingest/polymarket/stage-funding.ts",
  "ingest/polymarket/stage-markets.ts",
]);

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

/** A parameter (`?`, `@name`, `:name`, `$name`); `${…}` splices a literal into the text. */
const BARE_LIMIT = /\bLIMIT\s+(?:[?@:]|\$(?!\{))/g;

describe("bound LIMITs", () => {
  it("no statement binds its LIMIT bare", () => {
    const offenders = [...sources(SRC)]
      .map((path) => ({ path, name: relative(SRC, path) }))
      .filter(({ name }) => !NOT_YET.has(name))
      .flatMap(({ path, name }) =>
        [...readFileSync(path, "utf8").matchAll(BARE_LIMIT)].map((m) => `${name}: ${m[0]}`),
      );
    expect(offenders).toEqual([]);
  });

  it("LIMIT +? limits exactly as LIMIT ? does", () => {
    const db = openConnection(":memory:");
    db.exec("CREATE TABLE n (v INTEGER PRIMARY KEY)");
    const insert = db.prepare("INSERT INTO n (v) VALUES (?)");
    for (let v = 1; v <= 20; v++) insert.run(v);
    const bare = db.prepare("SELECT v FROM n ORDER BY v DESC LIMIT ?").pluck();
    const plus = db.prepare("SELECT v FROM n ORDER BY v DESC LIMIT +?").pluck();
    for (const limit of [0, 1, 7, 20, 25, -1]) expect(plus.all(limit)).toEqual(bare.all(limit));
    db.close();
  });
});
