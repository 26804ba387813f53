import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface SqlFile {
  name: string;
  sql: string;
}

/**
 * The migrations in sql/, in name order. The binary build swaps this module for one with the
 * files embedded as strings (build/build-binary.ts), so the executable needs nothing beside it.
 */
export function sqlFiles(): SqlFile[] {
  const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "sql");
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .map((name) => ({ name, sql: readFileSync(join(dir, name), "utf8") }));
}
