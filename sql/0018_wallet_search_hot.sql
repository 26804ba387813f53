-- The hot name index (docs/architecture.md, "Wallet search: the hot name index"). A name search
-- reads the trigram matches of sql/0006's index in id order, largest volume group first (sql/0015),
-- and stops after a page. What that costs grew with the world: the index of the large world is
-- several FTS5 segments (an incremental refresh adds more, and its deletions leave tombstones in
-- them), each looked up for each trigram. wallet_search_hot holds the same entries, under the same
-- ids, for the wallets of the largest volume groups only: every id below the one in
-- wallet_search_hot_end, which ends the group of the 2,000th id (src/refresh/wallet-search.ts,
-- HOT_WALLETS). A search reads it first and goes on in the full index from that id only when the
-- hot wallets do not settle its page. The expression choosing the end is HOT_END_SQL there, word
-- for word (a test checks); the refresh keeps both tables in step.
CREATE VIRTUAL TABLE wallet_search_hot USING fts5 (platform_name, tokenize = 'trigram');
CREATE TABLE wallet_search_hot_end (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  id  INTEGER NOT NULL -- ids below it are hot: the end of a volume group's span of ids
);
-- One segment: what a full refresh leaves (refreshWalletSearch).
INSERT INTO wallet_search (wallet_search) VALUES ('optimize');
INSERT INTO wallet_search_hot_end (one, id)
SELECT 1, coalesce((max(id) / 4194304 + 1) * 4194304, 0) FROM (SELECT id FROM wallet_search_rows ORDER BY id LIMIT 2000);
INSERT INTO wallet_search_hot (rowid, platform_name)
SELECT rowid, platform_name FROM wallet_search
 WHERE rowid < (SELECT id FROM wallet_search_hot_end);
INSERT INTO wallet_search_hot (wallet_search_hot) VALUES ('optimize');
