-- A market's fills may be in several files of the fill history: an import adds a file for a
-- market already there when a later dump brings more of its past fills (src/ingest/
-- past-markets.ts). Keyed by market and file, so a market's files are one seek. The rows are
-- copied aside and back (ALTER TABLE … RENAME is not used: see sql/0010).
CREATE TABLE history_markets_before_0041 AS SELECT market_id, partition_id FROM history_markets;
DROP TABLE history_markets;
CREATE TABLE history_markets (
  market_id    INTEGER NOT NULL REFERENCES markets (id),
  partition_id INTEGER NOT NULL REFERENCES history_partitions (id),
  PRIMARY KEY (market_id, partition_id)
) WITHOUT ROWID;
INSERT INTO history_markets (market_id, partition_id)
SELECT market_id, partition_id FROM history_markets_before_0041;
DROP TABLE history_markets_before_0041;
