/**
 * One compaction in its own process for the seal's crash test: `node --import tsx seal-child.ts
 * DB NOW STEP [merge]`. It kills itself with SIGKILL the first time the seal reaches STEP (in its
 * first batch of two markets), which is the state a crash at that point must survive. With
 * `merge`, the history's files are merged after the seal as soon as two are listed.
 */
import { openDb } from "../../src/db/open";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";

const [dbPath, now, killAt, merge] = process.argv.slice(2) as [string, string, SealStep, string?];
const db = openDb(dbPath);
await compactResolvedMarkets(db, Number(now), 90 * 24 * 3_600_000, {
  batch: 2,
  mergePolicy: merge === "merge" ? { smallFills: 1e9, mergedFills: 1e9, mergeAt: 2 } : undefined,
  onStep: (step) => {
    if (step === killAt) process.kill(process.pid, "SIGKILL");
  },
});
process.stdout.write("finished without reaching the step\n");
db.close();
