/**
 * One compaction in its own process for the seal's crash test: `node --import tsx seal-child.ts
 * DB NOW STEP [merge|seal] [REPLICA]`. It kills itself with SIGKILL the first time the seal
 * reaches STEP (in its first batch of two markets), which is the state a crash at that point must
 * survive. With `merge`, it first seals every due market a file each, then runs again: that run
 * starts by merging them, and is killed there. With REPLICA, a folder, each file is put there
 * before it is listed (src/history/replica.ts).
 */
import { openDb } from "../../src/db/open";
import { historyReplica } from "../../src/history/replica";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";

const [dbPath, now, killAt, merge, replicaDir] = process.argv.slice(2) as [
  string,
  string,
  SealStep,
  string?,
  string?,
];
const RETENTION = 90 * 24 * 3_600_000;
const replica = replicaDir ? historyReplica({ type: "file", path: replicaDir }) : undefined;
const db = openDb(dbPath);
if (merge === "merge") {
  await compactResolvedMarkets(db, Number(now), RETENTION, { batch: 1, replica });
}
await compactResolvedMarkets(db, Number(now), RETENTION, {
  batch: 2,
  replica,
  onStep: (step) => {
    if (step === killAt) process.kill(process.pid, "SIGKILL");
  },
});
process.stdout.write("finished without reaching the step\n");
db.close();
