import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openConnection, openDb } from "../../src/db/open";
import { historyReplica } from "../../src/history/replica";
import { historyDir, listedFiles, partitions } from "../../src/history/store";
import { compactResolvedMarkets } from "../../src/refresh/retention";
import { parseReplicaUrl, type ReplicaConfig } from "../../src/replication/replica-url";
import { restoreHistory } from "../../src/replication/restore";
import { createTestApp, type TestApp } from "../helpers/app";
import { NOW, RETENTION, sealableWorld } from "./world";

/**
 * The fill history on the replica: a seal puts its file there before it lists it, so a database
 * restored from the replica finds every file it lists (src/history/replica.ts); a replica that
 * refuses leaves the fills where they were.
 */

const CREDENTIALS = { LITESTREAM_ACCESS_KEY_ID: "S3RVER", LITESTREAM_SECRET_ACCESS_KEY: "S3RVER" };

let t: TestApp;
let template: string;
let s3: { port: number; close(): Promise<void> };

beforeAll(async () => {
  t = createTestApp();
  sealableWorld(t, { old: 3, recent: 0, trades: 90 });
  t.db.writer.pragma("wal_checkpoint(TRUNCATE)");
  template = join(t.dir, "template.db");
  copyFileSync(t.config.dbPath, template);

  const S3rver = createRequire(import.meta.url)("s3rver");
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: join(t.dir, "s3rver"),
    configureBuckets: [{ name: "smartmoney" }],
  });
  const address = (await server.run()) as { port: number };
  s3 = { port: address.port, close: () => server.close() };
});
afterAll(async () => {
  await s3.close();
  t.close();
});

const replicaOf = (url: string): ReplicaConfig => {
  const parsed = parseReplicaUrl(url);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
};

describe.each([
  { kind: "file", url: () => `file://${join(t.dir, "replica-folder")}`, env: {} },
  {
    kind: "s3 (s3rver)",
    url: () => `s3://smartmoney/live?endpoint=http://127.0.0.1:${s3.port}&region=us-east-1`,
    env: CREDENTIALS,
  },
])("the history on a $kind replica", ({ kind, url, env }) => {
  it("holds every file a seal lists, and a restore fetches them all", async () => {
    const path = join(t.dir, `sealed-${kind.slice(0, 4)}.db`);
    copyFileSync(template, path);
    const replica = replicaOf(url());
    const db = openDb(path);
    const summary = await compactResolvedMarkets(db, NOW, RETENTION, {
      batch: 1,
      replica: historyReplica(replica, env),
    });
    expect(summary).toMatchObject({ markets: 3, replica_error: null });
    // Three files and their copies in wallet and time order.
    const listed = listedFiles(db.reader).map((p) => p.file);
    db.close();
    expect(listed).toHaveLength(9);

    // A restore of the database elsewhere: every listed file comes back, byte for byte.
    const restoredDir = join(t.dir, `restored-${kind.slice(0, 4)}`);
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const fetched = await restoreHistory(path, restoredDir, replica);
      expect(fetched).toEqual({ ok: true, value: 9 });
    } finally {
      process.env = saved;
    }
    expect(readdirSync(restoredDir).sort()).toEqual([...listed].sort());
    for (const file of listed) {
      expect(
        Buffer.compare(
          readFileSync(join(restoredDir, file)),
          readFileSync(join(historyDir(path), file)),
        ),
      ).toBe(0);
    }

    // A database backed up before sql/0037 lists no copies in time order: its restore fetches
    // the files it lists, and no more.
    const older = join(t.dir, `before-0037-${kind.slice(0, 4)}.db`);
    copyFileSync(path, older);
    const olderDb = openConnection(older);
    olderDb.exec(`DROP INDEX history_partitions_by_time_file;
      ALTER TABLE history_partitions DROP COLUMN time_file;
      ALTER TABLE history_partitions DROP COLUMN time_bytes;`);
    olderDb.close();
    Object.assign(process.env, env);
    try {
      const olderDir = join(t.dir, `restored-before-0037-${kind.slice(0, 4)}`);
      expect(await restoreHistory(older, olderDir, replica)).toEqual({ ok: true, value: 6 });
      expect(readdirSync(olderDir).some((file) => file.startsWith("times-"))).toBe(false);
    } finally {
      process.env = saved;
    }

    // A file no longer listed is deleted (sql/0035); one already gone is no error.
    const files = historyReplica(replica, env);
    const gone = join(t.dir, `gone-${kind.slice(0, 4)}`);
    await files.delete(listed[0]!);
    await files.delete(listed[0]!);
    expect(await files.get(listed[0]!, gone)).toBe(false);
    expect(await files.get(listed[1]!, gone)).toBe(true);
  });
});

describe("a replica that refuses", () => {
  it("leaves the fills in the database, lists nothing, and says why", async () => {
    const path = join(t.dir, "refused.db");
    copyFileSync(template, path);
    const db = openDb(path);
    const before = db.reader.prepare("SELECT count(*) FROM fills").pluck().get();
    const replica = replicaOf(`s3://smartmoney/live?endpoint=http://127.0.0.1:${s3.port}`);
    const summary = await compactResolvedMarkets(db, NOW, RETENTION, {
      batch: 1,
      replica: historyReplica(replica, {
        LITESTREAM_ACCESS_KEY_ID: "nobody",
        LITESTREAM_SECRET_ACCESS_KEY: "wrong",
      }),
    });
    expect(summary.markets).toBe(0);
    expect(summary.markets_waiting).toBe(3);
    expect(summary.replica_error).toMatch(/^s3:\/\/smartmoney\/live\/history: PUT .* HTTP 403/);
    expect(db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(before);
    const wrong = historyReplica(replica, {
      LITESTREAM_ACCESS_KEY_ID: "nobody",
      LITESTREAM_SECRET_ACCESS_KEY: "wrong",
    });
    await expect(wrong.delete("fills-1.parquet")).rejects.toThrow(
      `DELETE http://127.0.0.1:${s3.port}/smartmoney/live/history/fills-1.parquet: HTTP 403`,
    );
    expect(partitions(db.reader)).toEqual([]);
    expect(existsSync(historyDir(path)) ? readdirSync(historyDir(path)) : []).toEqual([]);
    db.close();

    // A restore whose replica lacks a listed file refuses, naming it, and leaves nothing.
    const listedPath = join(t.dir, "lists-a-missing-file.db");
    copyFileSync(template, listedPath);
    const lists = openDb(listedPath);
    await compactResolvedMarkets(lists, NOW, RETENTION, { batch: 3 });
    const [file, copy, times] = listedFiles(lists.reader).map((p) => p.file);
    lists.close();
    const empty = join(t.dir, "empty-replica");
    mkdirSync(empty);
    const dir = join(t.dir, "restored-nothing");
    const result = await restoreHistory(listedPath, dir, replicaOf(`file://${empty}`));
    expect(result).toEqual({
      ok: false,
      reason: `the replica lacks 3 file(s) of the fill history the database lists (${file}, ${copy}, ${times}) at file://${empty}/history`,
    });
    rmSync(dir, { recursive: true, force: true });
  });
});
