/**
 * One compaction in its own process for the seal's crash test: `node --import tsx seal-child.ts
 * DB NOW STEP [seal|merge|seal-merge] [REPLICA]`. It kills itself with SIGKILL the first time the
 * seal reaches STEP, which is the state a crash at that point must survive:
 * - `seal`: in one run's first batch of two markets;
 * - `merge`: it first seals every due market a file each, then runs again: that run starts by
 *   merging them, and is killed there;
 * - `seal-merge`: one run seals every due market a file each, then merges those files, and is
 *   killed there.
 * With REPLICA, a folder, each file is put there before it is listed (src/history/replica.ts).
 */
import { openDb } from "../../src/db/open";
import { historyReplica } from "../../src/history/replica";
import { compactResolvedMarkets, type SealStep } from "../../src/refresh/retention";

const [dbPath, now, killAt, mode, replicaDir] = process.argv.slice(2) as [
  string,
  string,
  SealStep,
  "seal" | "merge" | "seal-merge",
  string?,
];
const RETENTION = 90 * 24 * 3_600_000;
const replica = replicaDir ? historyReplica({ type: "file", path: replicaDir }) : undefined;
const db = openDb(dbPath);
if (mode === "merge") {
  await compactResolvedMarkets(db, Number(now), RETENTION, { batch: 1, mergeTiers: [], replica });
}
await compactResolvedMarkets(db, Number(now), RETENTION, {
  batch: mode === "seal-merge" ? 1 : 2,
  replica,
  onStep: (step) => {
    if (step === killAt) process.kill(process.pid, "SIGKILL");
  },
});
process.stdout.write("finished without reaching the step\n");
db.close();
