import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPrivateFile, openConnection } from "../../src/db/open";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "smartmoney-wal-switch-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** How many new files the two processes race to open; several of 500 met the bug, every run. */
const RACES = 500;

/**
 * Another process opening the same new files at the same moments, as a second `serve` does with
 * a new `<db>.limits` on its first counted call: for each file it waits for this process's
 * go-file, then creates the file and switches it to WAL. Its own failures do not matter here.
 */
function racer(): Promise<number | null> {
  const script = `
    const Database = require("better-sqlite3");
    const fs = require("node:fs");
    const dir = ${JSON.stringify(dir)};
    for (let i = 0; i < ${RACES}; i++) {
      const go = dir + "/go" + i;
      while (!fs.existsSync(go)) {}
      fs.closeSync(fs.openSync(dir + "/f" + i + ".db", "a", 0o600));
      const c = new Database(dir + "/f" + i + ".db");
      try {
        c.pragma("busy_timeout = 5000");
        c.pragma("page_size = 1024");
        c.pragma("journal_mode = WAL");
      } catch {}
      c.close();
    }`;
  const child = spawn(process.execPath, ["-e", script], { cwd: process.cwd(), stdio: "inherit" });
  return new Promise((resolve) => child.on("exit", resolve));
}

describe("opening a new database another process opens at the same moment", () => {
  it("switches it to WAL every time, never failing with SQLITE_BUSY", async () => {
    const exited = racer();
    const failures: string[] = [];
    for (let i = 0; i < RACES; i++) {
      const path = join(dir, `f${i}.db`);
      writeFileSync(join(dir, `go${i}`), "");
      createPrivateFile(path);
      try {
        // SQLite reads the file before it asks for the lock the switch needs, and from inside a
        // read it never waits for a lock: without a wait of our own this threw at once.
        const connection = openConnection(path, { pageSize: 1024 });
        if (connection.pragma("journal_mode", { simple: true }) !== "wal") failures.push(path);
        connection.close();
      } catch (error) {
        failures.push(`${path}: ${(error as Error).message}`);
      }
    }
    expect(await exited).toBe(0);
    expect(failures).toEqual([]);
  }, 60_000);
});
