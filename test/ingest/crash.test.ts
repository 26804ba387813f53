import { spawn } from "node:child_process";
import { createWriteStream, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it } from "vitest";
import { importJsonl } from "../../src/ingest/import";
import { fileSource } from "../../src/ingest/sources";
import { createTestApp, type TestApp } from "../helpers/app";
import { market, trade, transfer, wallet, writeJsonl } from "./builders";

let t: TestApp;
beforeEach(() => {
  t = createTestApp();
});
afterEach(() => t.close());

const TABLES = ["markets", "trades", "transfers", "wallets", "labels", "dirty_wallets"];
const snapshot = () =>
  Object.fromEntries(
    TABLES.map((table) => [table, t.db.reader.prepare(`SELECT * FROM ${table} ORDER BY 1`).all()]),
  );

async function writeBigFile(path: string, trades: number): Promise<void> {
  const out = createWriteStream(path);
  let chunk = `${JSON.stringify(market(1))}\n${JSON.stringify(market(2))}\n`;
  for (let i = 0; i < trades; i++) {
    chunk += `${JSON.stringify(trade(1000 + i))}\n`;
    if (i % 97 === 0) chunk += `${JSON.stringify(transfer(1000 + i))}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
      chunk = "";
    }
  }
  out.end(chunk);
  await new Promise((r) => out.once("finish", r));
}

/** Starts the import in a child process and SIGKILLs it once it reports `killAt` rows. */
function importAndKill(dbPath: string, file: string, killAt: number) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("./import-child.ts", import.meta.url)), dbPath, file],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += String(d);
  });
  return new Promise<{ rows: number; signal: NodeJS.Signals | null; walBytes: number }>(
    (resolve, reject) => {
      let rows = 0;
      let walBytes = 0;
      child.stdout.setEncoding("utf8").on("data", (text: string) => {
        for (const match of text.matchAll(/progress (\d+)/g)) rows = Number(match[1]);
        if (rows >= killAt && walBytes === 0) {
          walBytes = statSync(`${dbPath}-wal`).size;
          child.kill("SIGKILL");
        }
      });
      child.on("error", reject);
      child.on("exit", (code, signal) => {
        if (signal === null) reject(new Error(`child exited ${code} before the kill: ${stderr}`));
        else resolve({ rows, signal, walBytes });
      });
    },
  );
}

it("leaves the database exactly as it was when the import is killed mid-file", async () => {
  // Something stored beforehand, which must survive untouched.
  const seed = writeJsonl(t.dir, "seed.jsonl", [
    market(1),
    wallet(1),
    ...Array.from({ length: 20 }, (_, i) => trade(i)),
    transfer(1),
  ]);
  const seeded = await importJsonl({ db: t.db, clock: t.clock }, fileSource(seed));
  expect(seeded.ok).toBe(true);
  const before = snapshot();

  const big = join(t.dir, "big.jsonl");
  const total = 150_000;
  await writeBigFile(big, total);
  const killed = await importAndKill(t.config.dbPath, big, 60_000);

  expect(killed.signal).toBe("SIGKILL");
  expect(killed.rows).toBeGreaterThanOrEqual(60_000);
  expect(killed.rows).toBeLessThan(total);
  // The transaction had already written uncommitted pages to the WAL: the hard case.
  expect(killed.walBytes).toBeGreaterThan(1_000_000);

  expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");
  expect(t.db.writer.pragma("integrity_check", { simple: true })).toBe("ok");
  expect(snapshot()).toEqual(before);
  expect(t.db.reader.prepare("SELECT count(*) FROM import_seen").pluck().get()).toBe(0);

  // And the database takes the next import normally.
  const next = await importJsonl(
    { db: t.db, clock: t.clock },
    fileSource(writeJsonl(t.dir, "next.jsonl", [market(1), trade(5000)])),
  );
  expect(next.ok && next.value.counts.trade.new).toBe(1);
});

it("leaves an empty store's fill indexes in place when its import is killed mid-file", async () => {
  // Into an empty store the import drops fills_by_tx and fills_by_time inside its transaction
  // and builds them after the load (src/ingest/deferred-fill-indexes.ts).
  const indexes = () =>
    t.db.reader
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'fills'")
      .all();
  const before = indexes();
  expect(before.map((i) => (i as { name: string }).name)).toEqual(
    expect.arrayContaining(["fills_by_tx", "fills_by_time"]),
  );
  const big = join(t.dir, "big.jsonl");
  await writeBigFile(big, 150_000);
  const killed = await importAndKill(t.config.dbPath, big, 60_000);
  expect(killed.signal).toBe("SIGKILL");
  expect(killed.walBytes).toBeGreaterThan(1_000_000);

  expect(t.db.writer.pragma("integrity_check", { simple: true })).toBe("ok");
  expect(indexes()).toEqual(before);
  expect(t.db.reader.prepare("SELECT count(*) FROM fills").pluck().get()).toBe(0);
  const next = await importJsonl(
    { db: t.db, clock: t.clock },
    fileSource(writeJsonl(t.dir, "next.jsonl", [market(1), trade(5000), trade(5000)])),
  );
  expect(next.ok).toBe(false);
  if (!next.ok) expect(next.errors[0]?.reason).toMatch(/duplicate trade: .* also on line 2$/);
});
