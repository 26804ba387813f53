import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WHALE_VOLUME_TEXT, WHALE_VOLUME_USD } from "../../src/domain";

const ROOT = new URL("../..", import.meta.url).pathname;
const sqlFiles = readdirSync(join(ROOT, "sql")).filter((f) => f.endsWith(".sql"));

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (path.endsWith(".ts")) yield path;
  }
}

describe("the whale threshold", () => {
  it("is the literal the migrations' partial indexes state", () => {
    // SQLite uses a partial index only for a query whose WHERE repeats the index's literal, so
    // the queries interpolate WHALE_VOLUME_USD and the migrations must hold the same number.
    const literals = sqlFiles.flatMap((file) =>
      [...readFileSync(join(ROOT, "sql", file), "utf8").matchAll(/total_volume\s*>\s*(\d+)/g)].map(
        (m) => ({ file, value: Number(m[1]) }),
      ),
    );
    expect(literals.length).toBeGreaterThanOrEqual(3);
    for (const { file, value } of literals) expect(value, file).toBe(WHALE_VOLUME_USD);
    expect(WHALE_VOLUME_TEXT).toBe("50,000 USD");
  });

  it("is written nowhere else in the code", () => {
    const written = /total_volume\s*[<>]=?\s*\d|\b50_?000\b|50,000 USD/;
    const offenders = [...sourceFiles("src")]
      .filter((file) => !file.endsWith("domain.ts"))
      // Unrelated 50,000s: a tier's monthly cap, an ingest time budget, a year.
      .filter((file) => !/tiers\.ts$|polymarket\/job\.ts$|polymarket\/records\.ts$/.test(file))
      .filter((file) => written.test(readFileSync(join(ROOT, file), "utf8")));
    expect(offenders).toEqual([]);
  });
});
