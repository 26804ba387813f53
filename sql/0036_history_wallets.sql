-- Which listed files hold each wallet's sealed fills, and when it traded there (docs/operations.md,
-- "Fill retention and the fill history"): a wallet's trade pages pick their files from these rows,
-- one seek, where they joined every bet of the wallet to history_markets (a whale's thousands: 17%
-- of a wallet page's CPU on the large world). The seal writes a file's rows from its markets'
-- frozen bets in the transaction that lists it; a merge writes the merged file's from the old
-- files' rows and drops those in the transaction that swaps them; a rewrite keeps its file's id.
CREATE TABLE history_wallets (
  wallet_id    INTEGER NOT NULL,
  partition_id INTEGER NOT NULL REFERENCES history_partitions (id),
  first_ts     INTEGER NOT NULL,  -- the wallet's first and last fill in the file's markets, ms
  last_ts      INTEGER NOT NULL,
  fills        INTEGER NOT NULL,  -- its fills there (its bets' trade counts)
  PRIMARY KEY (wallet_id, partition_id)
) WITHOUT ROWID;
CREATE INDEX history_wallets_by_partition ON history_wallets (partition_id);

INSERT INTO history_wallets (wallet_id, partition_id, first_ts, last_ts, fills)
SELECT b.wallet_id, hm.partition_id, min(b.first_ts), max(b.last_ts), sum(b.trade_count)
  FROM history_markets hm JOIN wallet_bets b INDEXED BY wallet_bets_by_market ON b.market_id = hm.market_id
 GROUP BY b.wallet_id, hm.partition_id;
