-- The fill history's files on the replica that no listed row names (docs/operations.md,
-- "Replicate"): a file a merge or rewrite unlisted, recorded in the transaction that unlists it,
-- and a file about to be put there, recorded before the put and dropped in the transaction that
-- lists it (so a seal killed between the two, or whose batch went stale, leaves its record). A
-- database restored as of any moment within Litestream's retention lists files unlisted since,
-- so each is deleted from the replica only once `at` is older than that retention and a margin
-- (src/refresh/retention.ts, REPLICA_DELETE_AFTER_MS), and its row then dropped.
CREATE TABLE history_replica_unlisted (
  file TEXT    PRIMARY KEY,  -- its name in <db>-history/ and on the replica
  at   INTEGER NOT NULL      -- when it stopped being (or was put without being) listed, ms
) WITHOUT ROWID;
