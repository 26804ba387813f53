/**
 * One compaction in its own process for the seal's crash test: `node --import tsx seal-child.ts
 * DB NOW STEP`. It kills itself with SIGKILL the first time the seal reaches STEP (in its
 * first batch of two markets), which is the state a crash at that point must survive.
 */
import { openDb } from "../../src/db/open";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";

const [dbPath, now, killAt] = process.argv.slice(2) as [string, string, SealStep];
const db = openDb(dbPath);
await compactResolvedMarkets(db, Number(now), 90 * 24 * 3_600_000, {
  batch: 2,
  onStep: (step) => {
    if (step === killAt) process.kill(process.pid, "SIGKILL");
  },
});
process.stdout.write("finished without reaching the step\n");
db.close();
