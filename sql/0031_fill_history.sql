-- The fill history (docs/architecture.md, "Where data lives"): fills a compaction moves out of
-- `fills` are sealed into immutable Parquet files in the folder beside the database
-- (`<db>-history/`), one file a compaction batch, instead of being deleted.
--
-- * history_partitions: the manifest. A file is part of the history exactly when its row is
--   here: the row is written in the same transaction that deletes the file's fills from `fills`,
--   so every fill is in exactly one place. A file without a row (a seal killed before its commit)
--   is no part of the history and the next seal removes it.
-- * history_markets: the file holding each sealed market's fills (no row while the market keeps
--   its fills in `fills`, or when its compaction sealed none of them).
CREATE TABLE history_partitions (
  id         INTEGER PRIMARY KEY,
  file       TEXT    NOT NULL UNIQUE,  -- its name in <db>-history/
  fills      INTEGER NOT NULL,
  bytes      INTEGER NOT NULL,
  min_ts     INTEGER NOT NULL,
  max_ts     INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE history_markets (
  market_id    INTEGER PRIMARY KEY REFERENCES markets (id),
  partition_id INTEGER NOT NULL REFERENCES history_partitions (id)
) WITHOUT ROWID;
