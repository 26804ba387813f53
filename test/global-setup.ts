import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { openDb } from "../src/db/open";
import { migrate } from "../src/migrations/migrate";

declare module "vitest" {
  export interface ProvidedContext {
    /** A database with every migration applied, checkpointed into its one file (read only). */
    migratedDb: string;
  }
}

/**
 * Once per run, before any worker starts: the migrated database that test apps start from a copy
 * of (test/helpers/app.ts), instead of each running every migration again. Removed after the run.
 */
export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-template-"));
  const path = join(dir, "migrated.db");
  const db = openDb(path);
  try {
    migrate(db.writer);
    db.writer.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  project.provide("migratedDb", path);
  return () => rmSync(dir, { recursive: true, force: true });
}
