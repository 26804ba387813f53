/**
 * Runs one import in its own process for the crash test: `node --import tsx import-child.ts DB
 * FILE`. Prints "progress ROWS" as it goes so the test can kill it mid-file. The page cache is
 * made small so the transaction spills uncommitted pages into the WAL before it is killed,
 * which is the state a crash must survive.
 */
import { systemClock } from "../../src/clock";
import { openDb } from "../../src/db/open";
import { importJsonl } from "../../src/ingest/import";
import { fileSource } from "../../src/ingest/sources";

const [dbPath, file] = process.argv.slice(2) as [string, string];
const db = openDb(dbPath);
db.writer.pragma("cache_size = -2000");
const result = await importJsonl({ db, clock: systemClock }, fileSource(file), {
  onProgress: (p) => process.stdout.write(`progress ${p.rows}\n`),
});
process.stdout.write(`done ${result.ok}\n`);
db.close();
