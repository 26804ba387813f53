import { copyFileSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, openDb } from "../../src/db/open";
import { historyReplica } from "../../src/history/replica";
import { listedFiles, partitions } from "../../src/history/store";
import {
  compactResolvedMarkets,
  REPLICA_DELETE_AFTER_MS,
  type SealStep,
} from "../../src/refresh/retention";
import type { ReplicaConfig } from "../../src/replication/replica-url";
import { restoreHistory } from "../../src/replication/restore";
import { createTestApp, type TestApp } from "../helpers/app";
import { compactionKilledAt, NOW, RETENTION, sealableWorld, withoutCopies } from "./world";

/**
 * The history's files on the replica that no row lists any longer (merged or rewritten away), or
 * never did (put by a seal killed before it committed), are deleted from it once no restore
 * within Litestream's retention can list them (sql/0035), and a listed file never is.
 */

const HOUR = 3_600_000;

let t: TestApp;
let template: string;

beforeAll(() => {
  t = createTestApp();
  sealableWorld(t, { old: 5, recent: 1, trades: 300 });
  t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  template = join(t.dir, "template.db");
  copyFileSync(t.config.dbPath, template);
});
afterAll(() => t.close());

/** A copy of the unsealed world and an empty replica folder for it. */
function worldCopy(name: string): {
  path: string;
  folder: string;
  replica: ReplicaConfig;
  onReplica(): string[];
} {
  const path = join(t.dir, `${name}.db`);
  copyFileSync(template, path);
  const folder = join(t.dir, `${name}-replica`);
  return {
    path,
    folder,
    replica: { type: "file", path: folder },
    onReplica: () =>
      existsSync(join(folder, "history")) ? readdirSync(join(folder, "history")).sort() : [],
  };
}

const listed = (db: Db) =>
  listedFiles(db.reader)
    .map((p) => p.file)
    .sort();

const records = (db: Db) =>
  db.reader.prepare("SELECT file FROM history_replica_unlisted ORDER BY file").pluck().all();

/** The database at `path` as a restore of this moment gives it: a copy, checkpointed. */
function snapshot(db: Db, path: string): string {
  db.writer.pragma("wal_checkpoint(TRUNCATE)");
  copyFileSync(db.path, path);
  return path;
}

/** Fetches what the database at `path` lists from the replica, as `smartmoney restore` does. */
async function restoresWhole(path: string, replica: ReplicaConfig): Promise<void> {
  const dir = `${path}-history`;
  rmSync(dir, { recursive: true, force: true });
  const fetched = await restoreHistory(path, dir, replica);
  expect(fetched.ok, fetched.ok ? "" : fetched.reason).toBe(true);
  rmSync(dir, { recursive: true, force: true });
}

describe("the replica's files no longer listed", () => {
  it("are deleted once past Litestream's retention, and a restore within it finds every file", async () => {
    const world = worldCopy("merged");
    const replica = historyReplica(world.replica);
    const db = openDb(world.path);
    try {
      const t0 = Date.parse("2026-11-20T08:00:00.000Z");
      // Five files and their copies in wallet and time order, each put before it was listed.
      const sealed = await compactResolvedMarkets(db, NOW, RETENTION, {
        batch: 1,
        mergeTiers: [],
        replica,
        clock: () => t0,
      });
      expect(sealed).toMatchObject({ markets: 5, replica_error: null });
      const before = listed(db);
      expect(before).toHaveLength(15);
      expect(world.onReplica()).toEqual(before);
      expect(records(db)).toEqual([]);
      // The database as a restore of the moment before the merge gives it.
      const beforeMerge = snapshot(db, join(t.dir, "before-merge.db"));

      // Merged two hours later: the fifteen old files are unlisted, and recorded so.
      const mergedAt = t0 + 2 * HOUR;
      const merged = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => mergedAt,
      });
      expect(merged).toMatchObject({ files_merged: 5, replica_files_deleted: 0 });
      const after = listed(db);
      expect(after).toHaveLength(3);
      expect(records(db)).toEqual(before);
      expect(world.onReplica()).toEqual([...before, ...after].sort());

      // A day after the merge, within Litestream's retention: a restore as of before the merge
      // lists the old files, so they stay.
      const withinRetention = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => mergedAt + 24 * HOUR,
      });
      expect(withinRetention).toMatchObject({ replica_files_deleted: 0, replica_error: null });
      expect(world.onReplica()).toEqual([...before, ...after].sort());
      await restoresWhole(beforeMerge, world.replica);

      // A listed file recorded as unlisted (no run records one) is still never deleted.
      db.writer
        .prepare("INSERT INTO history_replica_unlisted (file, at) VALUES (?, ?)")
        .run(after[0], t0);
      const past = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => mergedAt + REPLICA_DELETE_AFTER_MS + 1,
      });
      expect(past).toMatchObject({ replica_files_deleted: 15, replica_error: null });
      expect(world.onReplica()).toEqual(after);
      expect(records(db)).toEqual([after[0]]);
      await restoresWhole(snapshot(db, join(t.dir, "after-merge.db")), world.replica);
    } finally {
      db.close();
    }
  });

  it("include the files a rewrite swapped out, deleted past the retention", async () => {
    const world = worldCopy("rewritten");
    const replica = historyReplica(world.replica);
    const db = openDb(world.path);
    try {
      const t0 = Date.parse("2026-11-20T08:00:00.000Z");
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2, replica, clock: () => t0 });
      // As sealed before sql/0034: no copies (theirs stay on the replica here).
      const copies = withoutCopies(db, ["wallet", "time"]);
      const old = listed(db);
      expect(old).toHaveLength(3);
      const rewritten = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => t0 + HOUR,
      });
      expect(rewritten).toMatchObject({ files_rewritten: 3, replica_error: null });
      expect(records(db)).toEqual(old);
      const now = listed(db);
      expect(world.onReplica()).toEqual([...old, ...copies, ...now].sort());
      await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => t0 + HOUR + 24 * HOUR,
      });
      expect(world.onReplica()).toEqual([...old, ...copies, ...now].sort());
      const past = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica,
        clock: () => t0 + HOUR + REPLICA_DELETE_AFTER_MS + 1,
      });
      expect(past.replica_files_deleted).toBe(3);
      expect(world.onReplica()).toEqual([...copies, ...now].sort());
      expect(records(db)).toEqual([]);
    } finally {
      db.close();
    }
  });

  it("hold a copy in time order added to a file sealed before sql/0037 before it is listed", async () => {
    const world = worldCopy("time-copies");
    const replica = historyReplica(world.replica);
    const db = openDb(world.path);
    try {
      await compactResolvedMarkets(db, NOW, RETENTION, { batch: 2, replica });
      // As sealed at schema 36 (the copies in time order stay on the replica here, unlisted).
      withoutCopies(db, ["time"]);
      const added = await compactResolvedMarkets(db, NOW, RETENTION, { replica });
      expect(added).toMatchObject({ time_copies_written: 3, replica_error: null });
      const copies = db.reader
        .prepare("SELECT time_file FROM history_partitions")
        .pluck()
        .all() as string[];
      for (const copy of copies) expect(world.onReplica()).toContain(copy);
      expect(records(db)).toEqual([]);
      await restoresWhole(snapshot(db, join(t.dir, "time-copies.db")), world.replica);
    } finally {
      db.close();
    }
  });

  it("are never listed once a run has taken them for deletion", async () => {
    const world = worldCopy("taken");
    const base = historyReplica(world.replica);
    const db = openDb(world.path);
    try {
      // A run deleting the orphans takes each record (its time set to 0) before it deletes the
      // file: a seal stalled past the retention between its put and its commit then refuses.
      const taking = {
        ...base,
        put: async (file: string, localPath: string) => {
          await base.put(file, localPath);
          db.writer.prepare("UPDATE history_replica_unlisted SET at = 0 WHERE file = ?").run(file);
        },
      };
      const summary = await compactResolvedMarkets(db, NOW, RETENTION, { replica: taking });
      expect(summary).toMatchObject({ markets: 0, markets_waiting: 5 });
      expect(partitions(db.reader)).toEqual([]);
      expect(records(db)).toEqual(world.onReplica());
      const past = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica: base,
        clock: () => Date.now() + REPLICA_DELETE_AFTER_MS + 1,
      });
      expect(past.markets).toBe(5);
      expect(world.onReplica()).toEqual(listed(db));
      expect(records(db)).toEqual([]);
    } finally {
      db.close();
    }
  });

  it("are kept, with their records, while the replica refuses to delete them", async () => {
    const world = worldCopy("refusing");
    const replica = historyReplica(world.replica);
    const db = openDb(world.path);
    try {
      const t0 = Date.parse("2026-11-20T08:00:00.000Z");
      // Sealed a file a market, then merged, by two runs.
      const sealOnly = { batch: 1, mergeTiers: [], replica, clock: () => t0 };
      await compactResolvedMarkets(db, NOW, RETENTION, sealOnly);
      await compactResolvedMarkets(db, NOW, RETENTION, { replica, clock: () => t0 });
      expect(records(db)).toHaveLength(15);
      const later = () => t0 + REPLICA_DELETE_AFTER_MS + 1;
      const refusing = {
        ...replica,
        delete: async (file: string) => {
          throw new Error(`no delete for ${file}`);
        },
      };
      const refused = await compactResolvedMarkets(db, NOW, RETENTION, {
        replica: refusing,
        clock: later,
      });
      expect(refused.replica_files_deleted).toBe(0);
      expect(refused.replica_error).toMatch(/^file:\/\/.*\/history: no delete for /);
      expect(records(db)).toHaveLength(15);
      expect(world.onReplica()).toHaveLength(18);
      const retried = await compactResolvedMarkets(db, NOW, RETENTION, { replica, clock: later });
      expect(retried).toMatchObject({ replica_files_deleted: 15, replica_error: null });
      expect(world.onReplica()).toEqual(listed(db));
      expect(records(db)).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe("a seal or merge killed with the replica", () => {
  it.each([
    "written",
    "in-transaction",
    "committed",
    "merge-written",
    "merge-committed",
  ] as SealStep[])(
    "at %s leaves no file on the replica past the retention, and deletes no listed one",
    async (step) => {
      const world = worldCopy(`killed-${step}`);
      compactionKilledAt(world.path, step, {
        merge: step.startsWith("merge-") ? "next-run" : undefined,
        replicaDir: world.folder,
      });
      const replica = historyReplica(world.replica);
      const db = openDb(world.path);
      try {
        // Put but not listed when killed before the commit, or unlisted by the merge it
        // committed: recorded, so not left forever.
        const orphans = world.onReplica().filter((file) => !listed(db).includes(file));
        const expectedOrphans =
          {
            "in-transaction": 3,
            "merge-written": 3,
            "merge-committed": 15,
          }[step as string] ?? 0;
        expect(orphans).toHaveLength(expectedOrphans);
        for (const file of orphans) expect(records(db)).toContain(file);
        // The database as a restore of the moment of the kill gives it.
        const atKill = snapshot(db, join(t.dir, `at-${step}.db`));

        // The next runs, within the retention, finish the work and delete nothing.
        const start = Date.now();
        for (let run = 0; run < 2; run++) {
          const summary = await compactResolvedMarkets(db, NOW, RETENTION, {
            batch: 2,
            replica,
            clock: () => start + 24 * HOUR,
          });
          expect(summary).toMatchObject({ replica_files_deleted: 0, replica_error: null });
        }
        expect(partitions(db.reader)).toHaveLength(step.startsWith("merge-") ? 1 : 3);
        for (const file of [...orphans, ...listed(db)]) expect(world.onReplica()).toContain(file);
        await restoresWhole(atKill, world.replica);

        // Past the retention: the replica holds the listed files, and only them.
        const past = await compactResolvedMarkets(db, NOW, RETENTION, {
          replica,
          clock: () => start + 24 * HOUR + REPLICA_DELETE_AFTER_MS + 1,
        });
        expect(past.replica_error).toBeNull();
        expect(past.replica_files_deleted).toBeGreaterThanOrEqual(expectedOrphans);
        expect(world.onReplica()).toEqual(listed(db));
        expect(records(db)).toEqual([]);
        await restoresWhole(snapshot(db, join(t.dir, `after-${step}.db`)), world.replica);
      } finally {
        db.close();
      }
    },
    60_000,
  );
});
