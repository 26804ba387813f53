-- A copy of each sealed file in wallet order (docs/operations.md, "Fill retention and the fill
-- history"): a file is in market order, so a wallet's fills are spread over its row groups; its
-- copy holds the same rows sorted by (wallet, ts, id), and a wallet's page reads the few row
-- groups that hold the wallet. The copy is listed beside its file, in the same row: written and
-- synced first, listed in the same transaction as the file (a seal), or later in one UPDATE (a
-- file sealed before this schema). NULL: no copy yet; the file itself is read.
ALTER TABLE history_partitions ADD COLUMN wallet_file TEXT;   -- its name in <db>-history/
ALTER TABLE history_partitions ADD COLUMN wallet_bytes INTEGER;
CREATE UNIQUE INDEX history_partitions_by_wallet_file ON history_partitions (wallet_file);
