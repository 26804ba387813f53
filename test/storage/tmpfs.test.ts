import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { runCli } from "../helpers/cli";
import { fillDisk, tmpfsMounts } from "../helpers/tmpfs";
import { until } from "../helpers/until";
import { address, market, trade, writeJsonl } from "../ingest/builders";

/**
 * A real full disk: a tmpfs a few hundred KB larger than the database, where write(2) fails
 * with ENOSPC and SQLite reports SQLITE_FULL (test/helpers/tmpfs.ts: root only, else skipped
 * with the reason in the name). The deterministic tests beside this one (max_page_count) run
 * everywhere.
 */
const disks = tmpfsMounts("tmpfs");
const { mount, remount } = disks;
const why = disks.cannotMount();
const root = new URL("../..", import.meta.url).pathname;
let server: ChildProcess | null = null;

afterAll(() => {
  server?.kill("SIGKILL");
  disks.cleanUp();
});
const { base } = disks;

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

    it("first start: a key file that cannot be written is not left behind half-written", async () => {
      const keyDisk = mount("key", "4m");
      const path = join(keyDisk, "fresh.db");
      copyFileSync(inject("migratedDb"), path);
      // Held open so its WAL and index exist already: only the key file still needs room.
      const holder = new Database(path);
      holder.pragma("journal_mode = WAL");
      holder.prepare("SELECT count(*) FROM accounts").get();
      const filler = join(keyDisk, "filler");
      try {
        fillDisk(filler);
        const env = { SMARTMONEY_DB: path, SMARTMONEY_LOG_LEVEL: "silent" };
        const res = await runCli(["keys", "list"], env);
        expect(res.code).toBe(1);
        expect(res.stderr).toMatch(/^smartmoney: .*(ENOSPC|no space left on device).*\n$/);
        expect(existsSync(`${path}.key`)).toBe(false);

        rmSync(filler);
        expect((await runCli(["keys", "list"], env)).code).toBe(0);
        expect(existsSync(`${path}.key`)).toBe(true);
      } finally {
        holder.close();
      }
    });

    it("serve: the jobs process meets the full disk, /healthz shows it while reads are answered, and the jobs resume by themselves once space is freed", async () => {
      const serveDisk = mount("serve", "64m");
      const path = join(serveDisk, "serve.db");
      copyFileSync(inject("migratedDb"), path);
      const env = { SMARTMONEY_DB: path, SMARTMONEY_LOG_LEVEL: "silent" };
      const { key } = JSON.parse(
        (await runCli(["keys", "mint", "--tier", "terminal", "--json"], env)).stdout,
      );
      const small = writeJsonl(base, "serve-first.jsonl", [market(1), trade(1), trade(2)]);
      expect((await runCli(["import", small], env)).code).toBe(0);

      const child = spawn(
        process.execPath,
        ["--import", "tsx", "cli/main.ts", "serve", "--port", "0"],
        {
          cwd: root,
          env: {
            ...process.env,
            SMARTMONEY_DB: path,
            SMARTMONEY_LOG_LEVEL: "info",
            SMARTMONEY_REFRESH_CRON: "* * * * * *",
          },
        },
      );
      server = child;
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (d) => (stdout += d));
      child.stderr?.on("data", (d) => (stderr += d));
      const url = await until(
        "the server",
        () => /listening on (http:\/\/\S+)/.exec(stdout)?.[1] ?? null,
      );
      const jobs = await until("the jobs process", () => {
        const match = /"pid":(\d+),"msg":"background jobs started"/.exec(stderr);
        return match ? Number(match[1]) : null;
      });
      await until("the first refresh", () => (/"job":"refresh"/.test(stderr) ? true : null));
      const read = () =>
        fetch(`${url}/v1/trades?wallet=${address(1)}`, {
          headers: { authorization: `Bearer ${key}` },
        });
      expect((await read()).status).toBe(200);
      const health = async () =>
        (await (await fetch(`${url}/healthz`)).json()) as {
          ok: boolean;
          storage: { state: string; since?: string; writers?: string[] };
        };
      expect(await health()).toEqual({ ok: true, storage: { state: "ok" } });

      // New trades for the next refresh, stored while the jobs are held still, then a disk with
      // no room left for the read models they need.
      const lines: Record<string, unknown>[] = [market(1)];
      for (let n = 3; n <= 3_000; n++) {
        lines.push(trade(n, { wallet: `0x${(0xd000000000 + n).toString(16).padStart(40, "0")}` }));
      }
      const more = writeJsonl(base, "serve-more.jsonl", lines);
      process.kill(jobs, "SIGSTOP");
      let imported = await runCli(["import", more], env);
      // Held still in the middle of a write, the jobs would keep the lock: let them finish it.
      for (let tries = 0; tries < 3 && /locked/.test(imported.stderr); tries++) {
        process.kill(jobs, "SIGCONT");
        await new Promise((resolve) => setTimeout(resolve, 300));
        process.kill(jobs, "SIGSTOP");
        imported = await runCli(["import", more], env);
      }
      const filler = join(serveDisk, "filler");
      try {
        expect(imported.code).toBe(0);
        fillDisk(filler);
      } finally {
        process.kill(jobs, "SIGCONT");
      }

      const full = await until("the full state at /healthz", async () => {
        const h = await health();
        return h.storage.state === "full" ? h : null;
      });
      expect(full.ok).toBe(true);
      expect(full.storage.writers).toContain("refresh");
      expect(Date.parse(full.storage.since!)).toBeGreaterThan(Date.now() - 60_000);
      // Reads are answered: from the lease the first read took, or refused as storage_full when
      // their count cannot be stored; never a server error, never a hang.
      const during = await read();
      expect([200, 503]).toContain(during.status);
      if (during.status === 503) {
        expect(((await during.json()) as { error: { code: string } }).error.code).toBe(
          "storage_full",
        );
      }
      // One line from the jobs process. The server logs its own if that read's count met the
      // full disk (a new minute's row in the ledger).
      const fullLines = (writer: string) =>
        stderr
          .split("\n")
          .filter((l) => l.includes('"storage":"full"') && l.includes(`"writer":"${writer}"`));
      // The jobs log asynchronously (src/log.ts), and their report to the server can overtake
      // the line: under the full suite's load /healthz showed the full state before it came.
      await until("the jobs' full line", () => (fullLines("refresh").length > 0 ? true : null));
      expect(fullLines("refresh")).toHaveLength(1);
      if (during.status === 503) {
        // Logged asynchronously: the line may follow the answer by a moment.
        await until("the server's line", () => (fullLines("rate limits").length > 0 ? true : null));
        expect(fullLines("rate limits")).toHaveLength(1);
      }

      rmSync(filler);
      // A refused count clears with the next counted call that is stored.
      expect((await read()).status).toBe(200);
      await until("writes to resume", async () =>
        (await health()).storage.state === "ok" ? true : null,
      );
      // The jobs' log line may reach stderr a moment after their report to the server.
      await until("the jobs' writable line", () =>
        /"storage":"ok".*"msg":"storage writable again: writes resumed"/.test(stderr) ? true : null,
      );
      expect(fullLines("refresh")).toHaveLength(1);
      // Between the two lines the refresh retried on its backoff, not on every tick.
      const rolledBack = stderr.split("\n").filter((l) => l.includes("job rolled back")).length;
      expect(rolledBack).toBeGreaterThanOrEqual(1);
      expect(rolledBack).toBeLessThanOrEqual(4);
      await until("the refresh of the new trades", () => {
        const db = new Database(path, { readonly: true });
        try {
          const n = db.prepare("SELECT count(*) FROM wallet_stats").pluck().get() as number;
          return n >= 3_000 ? n : null;
        } finally {
          db.close();
        }
      });
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
      server = null;
    }, 120_000);
  },
);
