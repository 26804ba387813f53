import { copyFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/open";
import { historyDir, partitions } from "../../src/history/store";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { createTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";
import { fillDisk, tmpfsMounts } from "../helpers/tmpfs";
import { NOW, RETENTION, sealableWorld } from "../history/world";

/**
 * A compaction whose fill history sits on a full disk (a tmpfs mounted at `<db>-history`; root
 * only, else skipped with the reason in the name): it seals nothing, deletes nothing, says why in
 * its summary, a log line and `status`, and the next run after space is freed seals it all.
 */
const disks = tmpfsMounts("history-full");
const why = disks.cannotMount();
let t: TestApp;

beforeAll(() => {
  if (why !== null) return;
  t = createTestApp();
  sealableWorld(t, { old: 4, recent: 1, trades: 400 });
  t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
});
afterAll(() => {
  t?.close();
  disks.cleanUp();
});

describe.skipIf(why !== null)(
  `a compaction on a full history disk${why === null ? "" : ` (skipped: ${why})`}`,
  () => {
    it("keeps every fill in the database, says why in status, and seals once there is room", async () => {
      const path = join(disks.base, "sealing.db");
      copyFileSync(t.config.dbPath, path);
      const dir = disks.mount("history", "64k", historyDir(path));
      fillDisk(join(dir, "filler"));
      const fills = (db: ReturnType<typeof openDb>) =>
        db.reader.prepare("SELECT count(*) FROM fills").pluck().get() as number;

      const db = openDb(path);
      const before = fills(db);
      try {
        const summary = await compactResolvedMarkets(db, NOW, RETENTION);
        expect(summary).toMatchObject({ markets: 0, fills_deleted: 0, markets_waiting: 4 });
        expect(summary.history_error).toBe(
          `the disk holding the fill history (${dir}) is full: 4 markets keep their fills in the database until space is freed`,
        );
        expect(fills(db)).toBe(before);
        expect(partitions(db.reader)).toEqual([]);
        expect(readdirSync(dir)).toEqual(["filler"]);
      } finally {
        db.close();
      }

      const env = {
        SMARTMONEY_DB: path,
        SMARTMONEY_LOG_LEVEL: "silent",
        SMARTMONEY_FILL_RETENTION: `${RETENTION / 3_600_000}h`,
      };
      const status = await runCli(["status"], env);
      expect(status.stdout).toMatch(
        /fill retention +2160h, no market compacted; LAST COMPACTION \S+ FAILED: the disk holding the fill history \(.+\) is full: 4 markets keep their fills/,
      );
      const report = JSON.parse((await runCli(["status", "--json"], env)).stdout);
      expect(report.fill_retention.last_run.history_error).toContain("is full");

      disks.remount(dir, "16m");
      const again = await runCli(
        ["jobs", "run", "compact", "--now", new Date(NOW).toISOString(), "--json"],
        env,
      );
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ markets: 4, history_error: null });
      const sealedDb = openDb(path);
      try {
        const listed = partitions(sealedDb.reader);
        expect(listed.reduce((n, p) => n + p.fills, 0) + fills(sealedDb)).toBe(before);
        expect(fills(sealedDb)).toBeLessThan(before);
      } finally {
        sealedDb.close();
      }
      expect((await runCli(["status"], env)).stdout).not.toContain("FAILED");
    });
  },
);
