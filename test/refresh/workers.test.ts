import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/open";
import { fundingRefreshExtension } from "../../src/funding/refresh";
import { readCoordinatedPairs } from "../../src/funding/timing";
import { createIngest } from "../../src/ingest/ingest";
import { newRowPack, packedValue, packValues } from "../../src/refresh/full-rows";
import { refreshReadModels } from "../../src/refresh/refresh";
import { fullModelsInWorker } from "../../src/refresh/workers/full";
import { incrementalWalletsInWorker } from "../../src/refresh/workers/incremental";
import { checkpointInWorker, coordinatedPairsInWorker } from "../../src/refresh/workers/one-shot";
import { seededTestApp, type TestApp } from "../helpers/app";
import { readModelSnapshot } from "../helpers/read-models";
import { newTrade } from "../helpers/trades";
import { until } from "../helpers/until";

const NOW = Date.parse("2026-11-01T00:00:00.000Z");
const ignore = () => {};

/**
 * The full rebuild's worker thread (src/refresh/model-worker.ts). Every full rebuild in the suite
 * goes through it, so the "incremental equals full" tests hold its rows to the incremental
 * path's; these check how it fails.
 */
describe("a row pack (full-rows.ts)", () => {
  it("gives back every value as it was given, each kind bound as before", () => {
    const values = [
      0,
      -0,
      1.5,
      -2.25e-7,
      Number.MAX_SAFE_INTEGER,
      1_500_000n,
      -9_000_000_000_000_000n,
      0n,
      null,
      "politics",
      "",
      new Uint8Array([1, 2, 3]),
    ];
    const pack = newRowPack(values.length);
    packValues(pack, values);
    expect(pack.length).toBe(values.length);
    const back = values.map((_, at) => packedValue(pack, at));
    expect(back).toEqual(values);
    // -0 stays -0, and an integer stays a BigInt (SQLite stores it as an INTEGER).
    expect(Object.is(back[1], -0)).toBe(true);
    expect(typeof back[5]).toBe("bigint");
  });

  it("refuses what it cannot carry exactly", () => {
    const pack = newRowPack(4);
    expect(() => packValues(pack, [2n ** 53n])).toThrow("beyond 2^53");
    expect(() => packValues(pack, [true])).toThrow("cannot pack a value of type boolean");
    expect(() => packValues(pack, [undefined])).toThrow("cannot pack a value of type undefined");
  });
});

describe("the full rebuild's model worker", () => {
  let t: TestApp;
  beforeAll(async () => {
    ({ t } = await seededTestApp({ now: NOW }));
    // The seed's own refresh ran before its funding graph opened investigations (which make
    // some wallets insiders): one more rebuild, and the next ones write the same rows.
    refreshReadModels(t.db, NOW, { full: true });
  });
  afterAll(() => t?.close());

  it("sends every row of the small world, in more messages than it may leave unread", () => {
    const rows = new Map<string, number>();
    let messages = 0;
    const result = fullModelsInWorker(t.db, NOW, 1, (table, pack) => {
      messages += 1;
      rows.set(table, (rows.get(table) ?? 0) + pack.length);
    });
    // More than MAX_IN_FLIGHT (16) messages: the worker waited for the writer on the way.
    expect(messages).toBeGreaterThan(16);
    const count = (sql: string) => t.db.reader.prepare(sql).pluck().get() as number;
    expect(rows.get("wallet_bets")).toBe(count("SELECT count(*) FROM wallet_bets") * 20);
    expect(rows.get("market_hours")).toBe(count("SELECT count(*) FROM market_hours") * 8);
    expect(result.markets).toBe(count("SELECT count(*) FROM market_stats"));
    expect(result.fillsRead).toBe(2 * count("SELECT count(*) FROM fills"));
  });

  it("stops the worker and throws the writer's error when a write fails, with nothing left behind", async () => {
    const before = readModelSnapshot(t.db.reader);
    let calls = 0;
    expect(() =>
      fullModelsInWorker(t.db, NOW, 1, () => {
        calls += 1;
        if (calls === 3) throw new Error("disk full, say");
      }),
    ).toThrow("disk full, say");
    // The worker was blocked on the writer (16 messages unread at most): it stops and closes its
    // connection, whose read transaction would otherwise keep every checkpoint from finishing.
    await until("the worker's connection to close", () => {
      const [result] = t.db.writer.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
      return result!.busy === 0 ? true : null;
    });
    // And a rebuild after it runs whole.
    refreshReadModels(t.db, NOW, { full: true });
    expect(readModelSnapshot(t.db.reader)).toEqual(before);
  });

  it("fails the rebuild with the worker's own reason, and the read models stay as they were", () => {
    const before = readModelSnapshot(t.db.reader);
    const missing = { ...t.db, path: `${t.db.path}.missing` };
    expect(() => fullModelsInWorker(missing, NOW, 1, ignore)).toThrow(
      /the full rebuild's (wallets|markets) worker failed: .*unable to open database file/,
    );
    expect(() => fullModelsInWorker({ ...t.db, path: ":memory:" }, NOW, 1, ignore)).toThrow(
      "a full rebuild needs a database file",
    );
    expect(readModelSnapshot(t.db.reader)).toEqual(before);
  });
});

describe("coordinated timing read in a worker thread", () => {
  let t: TestApp;
  beforeAll(async () => {
    ({ t } = await seededTestApp({ now: NOW }));
  });
  afterAll(() => t?.close());

  const checkpointed = () =>
    until("no reader left in the WAL", () => {
      const [result] = t.db.writer.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
      return result!.busy === 0 ? true : null;
    });

  it("reads the same pairs as the writer's thread would", () => {
    const here = readCoordinatedPairs(t.db.reader);
    expect(here.length).toBeGreaterThan(0);
    expect(coordinatedPairsInWorker(t.db).take()).toEqual(here);
  });

  it("gives the pairs once, and a refresh through the extension stores them", async () => {
    const pending = coordinatedPairsInWorker(t.db);
    pending.take();
    expect(() => pending.take()).toThrow("already taken");
    const expected = t.db.reader
      .prepare("SELECT * FROM timing_connections ORDER BY address, counterparty")
      .all();
    expect(expected.length).toBeGreaterThan(0);
    t.db.writer.exec("DELETE FROM timing_connections");
    // A full refresh with the funding graph's extension, as the app has it: it starts the
    // worker once the read models are committed and takes its pairs.
    let started = 0;
    const funding = fundingRefreshExtension((db) => {
      started += 1;
      return coordinatedPairsInWorker(db);
    });
    const summary = refreshReadModels(t.db, NOW, { full: true, extensions: [funding] });
    expect(summary.extensions.funding).toMatchObject({ coordinated_timing: "rebuilt" });
    expect(started).toBe(1);
    // The rebuild's commit left its pages in the WAL, and a worker copied them back: every
    // frame, as no reader held an older snapshot.
    const copied = summary.wal_checkpoint as { log: number; checkpointed: number };
    expect(copied.log).toBeGreaterThan(100);
    expect(copied.checkpointed).toBe(copied.log);
    // The copy is a phase of its own in the summary.
    expect(summary.phases).toHaveProperty("wal_checkpoint", expect.any(Number));
    // The next run is within the hour: no worker, the pairs stay.
    const next = refreshReadModels(t.db, NOW, { extensions: [funding] });
    expect(next.extensions.funding).toMatchObject({ coordinated_timing: "unchanged" });
    expect(next.wal_checkpoint).toBeUndefined(); // an incremental run commits as usual
    expect(started).toBe(1);
    expect(
      t.db.reader.prepare("SELECT * FROM timing_connections ORDER BY address, counterparty").all(),
    ).toEqual(expected);
    await checkpointed();
  });

  it("fails with the worker's reason, and a cancelled worker lets go of the database", async () => {
    const missing = coordinatedPairsInWorker({ ...t.db, path: `${t.db.path}.missing` });
    expect(() => missing.take()).toThrow(
      /the coordinated-timing worker failed: .*unable to open database file/,
    );
    expect(() => checkpointInWorker({ ...t.db, path: `${t.db.path}.missing` }).take()).toThrow(
      /the WAL checkpoint worker failed: .*no database at/,
    );
    coordinatedPairsInWorker(t.db).cancel();
    await checkpointed();
    // With no database file, the pairs are read on this thread.
    expect(coordinatedPairsInWorker({ ...t.db, path: ":memory:" }).take()).toEqual(
      readCoordinatedPairs(t.db.reader),
    );
  });
});

describe("WAL checkpoints in a worker thread", () => {
  let t: TestApp;
  beforeAll(async () => {
    ({ t } = await seededTestApp({ now: NOW }));
  });
  afterAll(() => t?.close());

  const autocheckpoint = () => t.db.writer.pragma("wal_autocheckpoint", { simple: true });

  it("a detached checkpoint copies the WAL back on its own", async () => {
    // The seed's refresh left one of its own: waited for, as closing would.
    for (const work of t.db.background) work.wait();
    t.db.background.clear();
    t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
    const restore = autocheckpoint();
    t.db.writer.pragma("wal_autocheckpoint = 0");
    try {
      const before = statSync(t.db.path).size;
      t.db.writer.exec(`CREATE TABLE ballast (x BLOB);
        WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
        INSERT INTO ballast SELECT randomblob(4000) FROM n;`);
      // The pages are in the WAL only: the database file has not grown.
      expect(statSync(t.db.path).size).toBe(before);
      checkpointInWorker(t.db).detach();
      // The database knows of it: closing waits for it.
      expect(t.db.background.size).toBe(1);
      // Nothing here copies them (no checkpoint on this connection): the worker does.
      await until("the database file to hold the new pages", () =>
        statSync(t.db.path).size >= before + 500 * 4000 ? true : null,
      );
      const [work] = t.db.background;
      await until("the worker to end", () => (work!.ended() ? true : null));
      // Ended work is dropped when more is added.
      checkpointInWorker(t.db).detach();
      expect(t.db.background.size).toBe(1);
      expect(t.db.background.has(work!)).toBe(false);
      for (const pending of t.db.background) pending.wait();
    } finally {
      t.db.writer.exec("DROP TABLE IF EXISTS ballast");
      t.db.writer.pragma(`wal_autocheckpoint = ${restore}`);
    }
  });

  it("closing the database waits for its detached checkpoint, and folds the WAL in", () => {
    const dir = mkdtempSync(join(tmpdir(), "smartmoney-detached-"));
    try {
      const db = openDb(join(dir, "x.db"));
      db.writer.pragma("wal_autocheckpoint = 0");
      db.writer.exec(`CREATE TABLE ballast (x BLOB);
        WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
        INSERT INTO ballast SELECT randomblob(4000) FROM n;`);
      const empty = statSync(join(dir, "x.db")).size;
      checkpointInWorker(db).detach();
      // Closed while the worker copies (once the file starts to grow): close's own checkpoint
      // would find the worker's in its way.
      const deadline = Date.now() + 10_000;
      while (statSync(join(dir, "x.db")).size === empty && Date.now() < deadline);
      db.close();
      // The worker's checkpoint did not keep close's own from folding the WAL in: the file alone
      // holds every row (a copy of it is complete).
      expect(existsSync(join(dir, "x.db-wal")) ? statSync(join(dir, "x.db-wal")).size : 0).toBe(0);
      const copy = openDb(join(dir, "x.db"));
      expect(copy.reader.prepare("SELECT count(*) FROM ballast").pluck().get()).toBe(20000);
      copy.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives the writer its checkpoints back after a run copied by workers, whatever happens", () => {
    const before = autocheckpoint();
    expect(before).toBeGreaterThan(0);
    const full = refreshReadModels(t.db, NOW, { full: true });
    expect(full.wal_checkpoint).toBeDefined();
    expect(autocheckpoint()).toBe(before);
    // The run is recorded before the writer's checkpoints resume.
    const last = t.db.writer
      .prepare("SELECT kind, summary FROM refresh_runs ORDER BY id DESC LIMIT 1")
      .get() as { kind: string; summary: string };
    expect(last.kind).toBe("full");
    expect(JSON.parse(last.summary).wal_checkpoint).toEqual(full.wal_checkpoint);
    // An extension that fails after the run's commit: the setting comes back all the same.
    const failing = {
      name: "failing",
      run: () => {
        throw new Error("an extension's failure");
      },
    };
    expect(() => refreshReadModels(t.db, NOW, { full: true, extensions: [failing] })).toThrow(
      "an extension's failure",
    );
    expect(autocheckpoint()).toBe(before);
  });
});

describe("the incremental refresh's wallet worker", () => {
  let t: TestApp;
  beforeAll(async () => {
    ({ t } = await seededTestApp({ now: NOW }));
  });
  afterAll(() => t?.close());

  /** Trades by some of the world's wallets in some of its markets, a minute after `at`. */
  const newTrades = (at: number) => {
    const wallets = t.db.reader
      .prepare("SELECT address FROM wallet_stats ORDER BY address LIMIT 40")
      .pluck()
      .all() as string[];
    const markets = t.db.reader
      .prepare("SELECT id FROM markets WHERE resolved_outcome IS NULL ORDER BY id LIMIT 7")
      .pluck()
      .all() as number[];
    t.db.writer.transaction(() => {
      createIngest(t.db, t.clock).insertTrades(
        wallets.map((wallet, i) =>
          newTrade(
            wallet,
            markets[i % markets.length]!,
            i % 3 ? "YES" : "NO",
            "BUY",
            0.42,
            10 + i,
            at + i,
          ),
        ),
      );
    })();
  };

  it("fails the refresh with the worker's reason, and nothing of the run is kept", () => {
    newTrades(NOW + 1_000);
    const before = readModelSnapshot(t.db.reader);
    const runs = () => t.db.reader.prepare("SELECT count(*) FROM refresh_runs").pluck().get();
    const runsBefore = runs();
    const missing = { ...t.db, path: `${t.db.path}.missing` };
    expect(() => refreshReadModels(missing, NOW + 60_000, { walletsInWorkerFrom: 0 })).toThrow(
      /the incremental refresh's wallet worker failed: .*unable to open database file/,
    );
    expect(readModelSnapshot(t.db.reader)).toEqual(before);
    expect(runs()).toBe(runsBefore);
  });

  it("stops the worker when the writer fails, and lets go of the database", async () => {
    const changes = {
      pairs: new Map(),
      timingChanged: new Set<string>(),
      wallets: new Set<string>(),
    };
    for (const address of t.db.reader.prepare("SELECT address FROM wallet_stats").pluck().all()) {
      changes.wallets.add(address as string);
    }
    expect(changes.wallets.size).toBeGreaterThan(1_000);
    let stored = 0;
    expect(() =>
      incrementalWalletsInWorker(t.db, NOW, changes, new Map(), () => {
        stored += 1;
        throw new Error("the disk is full");
      }),
    ).toThrow("the disk is full");
    expect(stored).toBe(1);
    await until("no reader left in the WAL", () => {
      const [result] = t.db.writer.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
      return result!.busy === 0 ? true : null;
    });
  });

  it("gives what the writer's thread gives for the same run", () => {
    newTrades(NOW + 120_000);
    const copy = `${t.db.path}.copy`;
    t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
    copyFileSync(t.db.path, copy);
    const other = openDb(copy);
    try {
      const here = refreshReadModels(other, NOW + 180_000, {
        walletsInWorkerFrom: Number.POSITIVE_INFINITY,
      });
      const there = refreshReadModels(t.db, NOW + 180_000, { walletsInWorkerFrom: 0 });
      expect(there.wallets).toBe(here.wallets);
      expect(there.wallets).toBeGreaterThan(0);
      expect(readModelSnapshot(t.db.reader)).toEqual(readModelSnapshot(other.reader));
    } finally {
      other.close();
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
    }
  });
});
