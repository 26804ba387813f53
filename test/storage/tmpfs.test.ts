import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statfsSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { runCli } from "../helpers/cli";
import { market, trade, writeJsonl } from "../ingest/builders";

/**
 * A real full disk: a tmpfs a few hundred KB larger than the database, where write(2) fails
 * with ENOSPC and SQLite reports SQLITE_FULL. Mounting needs root (or CAP_SYS_ADMIN); elsewhere
 * (CI as a normal user, containers without the capability) these tests are skipped, and the
 * name says why. The deterministic tests beside this one (max_page_count) run everywhere.
 */
const base = mkdtempSync(join(tmpdir(), "smartmoney-tmpfs-"));
const mounted: string[] = [];

function mount(name: string, size: string): string {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });
  mounted.push(dir);
  return dir;
}

function remount(dir: string, size: string): void {
  execFileSync("mount", ["-o", `remount,size=${size}`, dir], { stdio: "pipe" });
}

/** Why mounting cannot be tried here, or null when it works. */
function cannotMount(): string | null {
  if (process.platform !== "linux") return `not Linux (${process.platform})`;
  if (process.getuid?.() !== 0) return "not running as root: mounting a tmpfs needs it";
  try {
    const dir = mount("probe", "64k");
    execFileSync("umount", [dir], { stdio: "pipe" });
    mounted.pop();
    return null;
  } catch (error) {
    return `mount -t tmpfs is not allowed here (${String((error as Error).message).split("\n")[0]})`;
  }
}

const why = cannotMount();
afterAll(() => {
  for (const dir of mounted.reverse()) {
    try {
      execFileSync("umount", ["-l", dir], { stdio: "pipe" });
    } catch {
      // already gone
    }
  }
  rmSync(base, { recursive: true, force: true });
});

const free = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

function counts(path: string): Record<string, number> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'",
      )
      .pluck()
      .all() as string[];
    const out: Record<string, number> = {};
    for (const name of tables) {
      out[name] = db.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number;
    }
    out.integrity_ok = db.pragma("integrity_check", { simple: true }) === "ok" ? 1 : 0;
    return out;
  } finally {
    db.close();
  }
}

describe.skipIf(why !== null)(
  `on a real full filesystem${why === null ? "" : ` (skipped: ${why})`}`,
  () => {
    let disk: string;
    let dbPath: string;
    const cli = (args: string[]) =>
      runCli(args, { SMARTMONEY_DB: dbPath, SMARTMONEY_LOG_LEVEL: "silent" });

    beforeAll(async () => {
      const migrated = inject("migratedDb");
      disk = mount("db", "64m");
      dbPath = join(disk, "full.db");
      copyFileSync(migrated, dbPath);
      // A first import makes the key file, the WAL and its index while there is room.
      const first = writeJsonl(base, "first.jsonl", [market(1), trade(1)]);
      expect((await cli(["import", first])).code).toBe(0);
    });

    it("import: ENOSPC refuses the file whole with one line, and it imports once space is freed", async () => {
      const lines: Record<string, unknown>[] = [market(1)];
      for (let n = 2; n <= 20_000; n++) lines.push(trade(n));
      const file = writeJsonl(base, "big.jsonl", lines);
      // Leave about 300 KB: far less than the file needs.
      const used = 64 * 1024 * 1024 - free(disk);
      remount(disk, `${Math.ceil((used + 300 * 1024) / 4096) * 4}k`);
      const before = counts(dbPath);

      const full = await cli(["import", file]);
      expect(full.code).toBe(1);
      expect(full.stderr.trim().split("\n")).toEqual([
        `smartmoney: ${file}: refused, the disk holding the database is full (SQLITE_FULL); nothing was imported from it: free space and import it again`,
      ]);
      expect(counts(dbPath)).toEqual(before);

      remount(disk, "64m");
      const again = await cli(["import", file]);
      expect(again.code).toBe(0);
      expect(counts(dbPath).trades).toBe(before.trades! + 19_999);
    });

    it("backup: a destination that fills up leaves no partial copy and one line", async () => {
      const small = mount("backups", "128k");
      const target = join(small, "copy.db");
      const res = await cli(["backup", target]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(
        new RegExp(
          `^smartmoney: backup to ${target} failed: the disk holding it is full \\((SQLITE_FULL|SQLITE_IOERR_WRITE|ENOSPC)\\); the partial copy was removed and the database is unchanged\\n$`,
        ),
      );
      expect(readdirSync(small)).toEqual([]);
      expect(existsSync(`${target}.key`)).toBe(false);
    });
  },
);
