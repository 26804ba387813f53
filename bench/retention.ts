/**
 * What fill retention saves (docs/operations.md, "Disk and memory for Polymarket's volume"): on a
 * copy of a fixture world, the used bytes per object (dbstat) before and after compacting the
 * markets resolved before the window, the free pages that leaves, and the file after VACUUM.
 * With --verify, a full rebuild before the compaction and one after it are compared table by
 * table (wallet_timing is expected to differ: docs/operations.md, "Fill retention"), and timed.
 * The history's bytes a sealed fill are given per copy (market, wallet and time order) and per
 * column (Parquet's compressed column chunks, from DuckDB's parquet_metadata).
 *
 *   npm run bench:retention -- [--world small|medium] [--retention 720h] [--verify]
 */
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDb } from "../src/db/open";
import { parseDuration } from "../src/duration";
import { sqlString, withEngine } from "../src/history/engine";
import { historyDir, historyTotals, partitions } from "../src/history/store";
import { migrate } from "../src/migrations/migrate";
import { refreshReadModels } from "../src/refresh/refresh";
import { compactResolvedMarkets } from "../src/refresh/retention";
import { READ_MODEL_TABLES } from "../test/helpers/read-models";
import { copyToDisk } from "./lib/copy";
import { objectSizes } from "./lib/dbstat";
import { recordResults } from "./lib/results";
import { isScale, worldFor } from "./lib/world";

const say = (line: string) => console.error(line);
const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      world: { type: "string", default: "medium" },
      retention: { type: "string", default: "720h" },
      verify: { type: "boolean", default: false },
    },
  });
  if (!isScale(values.world) || values.world === "large") {
    throw new Error("--world: small or medium");
  }
  const retention = parseDuration(values.retention);
  if (retention === undefined)
    throw new Error(`--retention: "${values.retention}" is not a duration`);
  const world = await worldFor({ scale: values.world, say });
  if (existsSync(`${world.dbPath}-wal`) && statSync(`${world.dbPath}-wal`).size > 0) {
    throw new Error(`${world.dbPath} has a WAL: close whatever has it open`);
  }
  const scratch = mkdtempSync(join(tmpdir(), "smartmoney-bench-retention-"));
  const path = join(scratch, "world.db");
  copyToDisk(world.dbPath, path);
  if (existsSync(`${world.dbPath}.key`)) copyFileSync(`${world.dbPath}.key`, `${path}.key`);
  try {
    const db = openDb(path);
    migrate(db.writer);
    // The world's refresh ran with older code when it was built: one at its time, so that
    // every fill is counted before compaction.
    const rebuildBefore = refreshReadModels(db, world.now, {
      full: world.staleModels || values.verify,
    });
    const tableHash = () =>
      Object.fromEntries(
        READ_MODEL_TABLES.map(([table, order]) => {
          const hash = createHash("sha256");
          for (const row of db.writer
            .prepare(`SELECT * FROM ${table} ORDER BY ${order}`)
            .raw()
            .iterate()) {
            hash.update(JSON.stringify(row));
          }
          return [table, hash.digest("hex")];
        }),
      );
    const before = values.verify ? tableHash() : null;
    db.writer.pragma("wal_checkpoint(TRUNCATE)");
    const fileBefore = statSync(path).size;
    const sizesBefore = objectSizes(path);
    // What VACUUM alone gives, without compaction: the baseline of the VACUUM after it.
    const baseline = join(scratch, "vacuumed.db");
    db.writer.prepare("VACUUM INTO ?").run(baseline);
    const fileVacuumedBefore = statSync(baseline).size;
    rmSync(baseline);
    // Bytes the fill store's rows take in their pages, without the pages' free space.
    const fillPayload = () =>
      db.writer
        .prepare(
          `SELECT sum(pgsize - unused) FROM dbstat
            WHERE name IN ('fills', 'fills_by_tx', 'fills_by_wallet', 'fills_by_market',
                           'fills_by_time', 'fills_big_by_time')`,
        )
        .pluck()
        .get() as number;
    const payloadBefore = fillPayload();
    const counts = db.writer
      .prepare("SELECT count(*) AS markets, sum(resolved_at IS NOT NULL) AS resolved FROM markets")
      .get() as { markets: number; resolved: number };
    const fillsBefore = db.writer.prepare("SELECT count(*) FROM fills").pluck().get() as number;
    const summary = await compactResolvedMarkets(db, world.now, retention);
    const history = historyTotals(db.writer);
    const copies = await bytesByColumn(path);
    db.writer.pragma("wal_checkpoint(TRUNCATE)");
    const sizesAfter = objectSizes(path);
    const pageSize = db.writer.pragma("page_size", { simple: true }) as number;
    const freeBytes = (db.writer.pragma("freelist_count", { simple: true }) as number) * pageSize;
    const fileAfter = statSync(path).size;
    const payloadAfter = fillPayload();
    let verified: Record<string, boolean> | null = null;
    let rebuildAfter: ReturnType<typeof refreshReadModels> | null = null;
    if (before) {
      rebuildAfter = refreshReadModels(db, world.now, { full: true });
      const after = tableHash();
      verified = Object.fromEntries(READ_MODEL_TABLES.map(([t]) => [t, before[t] === after[t]]));
    }
    db.writer.exec("VACUUM");
    db.writer.pragma("wal_checkpoint(TRUNCATE)");
    const fileVacuumed = statSync(path).size;
    db.close();
    const objectsOf = (s: ReturnType<typeof objectSizes>) =>
      Object.fromEntries(s.objects.slice(0, 12).map((o) => [o.name, mb(o.bytes)]));
    const report = {
      world: values.world,
      retention: values.retention,
      markets: counts.markets,
      resolved_markets: counts.resolved,
      fills_before: fillsBefore,
      compaction: summary,
      history: {
        files: history.partitions,
        fills: history.fills,
        mb: mb(history.bytes),
        bytes_per_fill: history.fills > 0 ? +(history.bytes / history.fills).toFixed(1) : null,
        ...copies,
      },
      used_mb: { before: mb(sizesBefore.usedBytes), after: mb(sizesAfter.usedBytes) },
      objects_mb: { before: objectsOf(sizesBefore), after: objectsOf(sizesAfter) },
      file_mb: {
        before: mb(fileBefore),
        before_vacuumed: mb(fileVacuumedBefore),
        after: mb(fileAfter),
        after_vacuum: mb(fileVacuumed),
      },
      fill_store_payload_mb: { before: mb(payloadBefore), after: mb(payloadAfter) },
      free_mb_after: mb(freeBytes),
      full_rebuild_equal: verified,
      full_rebuild_ms: rebuildAfter && {
        before: rebuildBefore.duration_ms,
        after: rebuildAfter.duration_ms,
        phases_before: rebuildBefore.phases,
        phases_after: rebuildAfter.phases,
      },
    };
    console.log(JSON.stringify(report, null, 2));
    recordResults("retention", report);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Bytes a sealed fill in each copy of the history (`market`: the sealed files, `wallet` and
 * `time`: their copies in wallet and time order), the whole file's and each column's compressed
 * chunks'.
 */
async function bytesByColumn(dbPath: string) {
  const db = openDb(dbPath);
  const listed = partitions(db.reader);
  db.close();
  const fills = listed.reduce((n, p) => n + p.fills, 0);
  if (fills === 0) return {};
  const per = (bytes: number) => +(bytes / fills).toFixed(2);
  const dir = historyDir(dbPath);
  return withEngine({ memoryMb: 256 }, async (duck) => {
    const copy = async (files: string[]) => {
      const paths = files.map((f) => sqlString(join(dir, f))).join(", ");
      const columns = await duck.runAndReadAll(
        `SELECT path_in_schema, sum(total_compressed_size)::DOUBLE
           FROM parquet_metadata([${paths}]) GROUP BY 1 ORDER BY 2 DESC`,
      );
      return {
        bytes_per_fill: per(files.reduce((n, f) => n + statSync(join(dir, f)).size, 0)),
        columns: Object.fromEntries(
          columns.getRowsJS().map(([name, bytes]) => [String(name), per(Number(bytes))]),
        ),
      };
    };
    const wallet = listed.flatMap((p) => (p.wallet_file === null ? [] : [p.wallet_file]));
    const time = listed.flatMap((p) => (p.time_file === null ? [] : [p.time_file]));
    return {
      market: await copy(listed.map((p) => p.file)),
      wallet: wallet.length > 0 ? await copy(wallet) : null,
      time: time.length > 0 ? await copy(time) : null,
    };
  });
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
