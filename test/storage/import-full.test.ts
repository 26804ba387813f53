import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Connection } from "../../src/db/open";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { market, trade, transfer, wallet, writeJsonl } from "../ingest/builders";

/**
 * A full disk, made deterministic: SQLite answers SQLITE_FULL once a connection's
 * max_page_count is reached, exactly as it does when write(2) fails with ENOSPC. The limit is a
 * setting of each connection, so every writer connection the CLI opens on the test's database
 * gets it as it switches to WAL (src/db/open.ts). Patched on better-sqlite3's class rather than
 * mocked per module: vitest reuses workers across files (vitest.config.ts), so the CLI's modules
 * may already be loaded with the real ones.
 */
const cap = { pages: 0 };
const realPragma = Database.prototype.pragma;
beforeAll(() => {
  Database.prototype.pragma = function capped(this: Database.Database, source, options) {
    const result = realPragma.call(this, source, options);
    if (cap.pages > 0 && this.name === t.config.dbPath && source === "journal_mode = WAL") {
      realPragma.call(this, `max_page_count = ${cap.pages}`);
    }
    return result;
  } as typeof realPragma;
});
afterAll(() => {
  Database.prototype.pragma = realPragma;
});

let t: TestApp;
beforeAll(() => {
  t = createTestApp();
});
afterAll(() => t.close());

const cli = (args: string[]) =>
  runCli(args, { SMARTMONEY_DB: t.config.dbPath, SMARTMONEY_LOG_LEVEL: "silent" });

/** Every table's row count: what "exactly as before" means for the data. */
function rowCounts(c: Connection): Record<string, number> {
  const tables = c
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .pluck()
    .all() as string[];
  return Object.fromEntries(
    tables.map((name) => [
      name,
      c.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number,
    ]),
  );
}

/** A file big enough that it cannot fit in the pages the database already has free. */
function bigFile(name: string): string {
  const lines: Record<string, unknown>[] = [market(1), market(2)];
  for (let n = 0; n < 40; n++) lines.push(wallet(n));
  for (let n = 1_001; n <= 7_000; n++) {
    lines.push(trade(n, { wallet: `0x${(0xb000000000 + n).toString(16).padStart(40, "0")}` }));
  }
  for (let n = 1; n <= 200; n++) lines.push(transfer(n));
  return writeJsonl(t.dir, name, lines);
}

describe("smartmoney import on a full disk", () => {
  it("exits 1 with one line naming the full disk, leaves the database as it was, and imports the file once there is room", async () => {
    const first = writeJsonl(t.dir, "first.jsonl", [market(1), trade(1), trade(2)]);
    expect((await cli(["import", first])).code).toBe(0);

    const file = bigFile("big.jsonl");
    const before = rowCounts(t.db.reader);
    const pages = t.db.reader.pragma("page_count", { simple: true }) as number;
    const free = t.db.reader.pragma("freelist_count", { simple: true }) as number;
    // The file needs far more than the free pages: it cannot fit without the file growing.
    expect(free).toBeLessThan(200);
    cap.pages = pages;

    const full = await cli(["import", file]);
    expect(full.code).toBe(1);
    expect(full.stdout).toBe("");
    expect(full.stderr.trim().split("\n")).toEqual([
      `smartmoney: ${file}: refused, the disk holding the database is full (SQLITE_FULL); nothing was imported from it: free space and import it again`,
    ]);
    expect(rowCounts(t.db.reader)).toEqual(before);
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(t.db.reader.pragma("foreign_key_check")).toEqual([]);

    // A second file after the full one is not tried: it would roll back alike.
    const second = writeJsonl(t.dir, "second.jsonl", [market(3), trade(9_001)]);
    const both = await cli(["import", "--json", file, second]);
    expect(both.code).toBe(1);
    const reports = JSON.parse(both.stdout) as {
      file: string;
      disk_full: boolean;
      reason: string;
    }[];
    expect(reports.map((r) => [r.disk_full, r.reason])).toEqual([
      [true, expect.stringContaining("the disk holding the database is full")],
      [false, `${second}: not tried, the disk is full`],
    ]);
    expect(rowCounts(t.db.reader)).toEqual(before);

    // Space freed: the same file imports whole.
    cap.pages = 0;
    const again = await cli(["import", file, second]);
    expect(again.code).toBe(0);
    const trades = () => t.db.reader.prepare("SELECT count(*) FROM trades").pluck().get();
    expect(trades()).toBe(2 + 6_000 + 1);
    expect(rowCounts(t.db.reader)).not.toEqual(before);
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
  });

  it("ends any other command that meets a full disk on one line, its write rolled back", async () => {
    // No free pages left: the first write that needs a page more meets the cap.
    t.db.writer.exec("VACUUM");
    cap.pages = t.db.reader.pragma("page_count", { simple: true }) as number;
    const accounts = () => t.db.reader.prepare("SELECT count(*) FROM accounts").pluck().get();
    const account = (n: number) => `${"a".repeat(56)}-${n}`;
    const mint = (n: number) => cli(["keys", "mint", "--tier", "free", "--account", account(n)]);
    let res = { code: 0, stdout: "", stderr: "" };
    let minted = 0;
    while (res.code === 0 && minted < 500) {
      res = await mint(minted);
      if (res.code === 0) minted++;
    }
    cap.pages = 0;
    expect(res.stderr).toBe(
      "smartmoney: the disk holding the database is full (SQLITE_FULL): nothing was written; free space and run the command again\n",
    );
    expect(res.code).toBe(1);
    // The failed mint left neither its account nor its key.
    const count = accounts() as number;
    expect(
      t.db.reader
        .prepare("SELECT count(*) FROM accounts WHERE name = ?")
        .pluck()
        .get(account(minted)),
    ).toBe(0);
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
    const retried = await mint(minted);
    expect(retried.code).toBe(0);
    expect(accounts()).toBe(count + 1);
  });
});
