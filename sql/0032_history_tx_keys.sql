-- Which history files may hold a transaction hash (GET /v1/trades/{txHash}; docs/architecture.md,
-- "Where data lives"). A sealed file is in time order, so a hash can be anywhere in it, and
-- without this a lookup read the hash column of every listed file: about 32 bytes for every
-- fill in the history, 11 GB at a year of Polymarket.
--
-- Each file's fills are keyed by their hash's first 4 bytes (big-endian, as an unsigned
-- integer), sorted, and cut into chunks of up to 1,000 keys: `keys` holds a chunk as 4-byte
-- little-endian integers, `first_key` its smallest. A lookup reads, for each file, the one chunk
-- that would hold its key (the last whose first_key is at or below it) and opens only the files
-- whose chunk has it: about 4 bytes a fill, and a few microseconds a file. Two hashes share a key
-- once in 4.3 billion, so a file is opened for nothing about once in 4,000 lookups per million
-- of its fills.
--
-- A file listed before this table has no chunks; a lookup opens it, as it did before.
CREATE TABLE history_tx_keys (
  partition_id INTEGER NOT NULL REFERENCES history_partitions (id) ON DELETE CASCADE,
  first_key    INTEGER NOT NULL,
  keys         BLOB    NOT NULL,
  PRIMARY KEY (partition_id, first_key)
);
