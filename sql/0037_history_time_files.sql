-- A copy of each sealed file in time order (docs/operations.md, "Fill retention and the fill
-- history"): a file is in market order, so its row groups each span their markets' lifetimes and
-- a page of the trades window (every market, newest first) scans every one of them; its copy
-- holds the same rows sorted by (ts, id), and the page reads the row group or two around its
-- time. Listed beside its file, as the copy in wallet order is (sql/0034). NULL: no copy yet; the
-- file itself is read.
ALTER TABLE history_partitions ADD COLUMN time_file TEXT;   -- its name in <db>-history/
ALTER TABLE history_partitions ADD COLUMN time_bytes INTEGER;
CREATE UNIQUE INDEX history_partitions_by_time_file ON history_partitions (time_file);
