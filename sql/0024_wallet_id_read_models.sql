-- wallet_category_stats and wallet_timing keyed on wallet_ids.id (docs/architecture.md,
-- "Category records and timing by wallet id (sql/0024)"). Measured with dbstat on the large
-- world, the category table and its seven indexes were 57 bytes per fill: the key (address,
-- category) repeated the wallet's 42-character address in the table and in every index entry.
-- The timing rows were 7 bytes per fill, each holding the answer's JSON (430 bytes a row).
--
-- * wallet_id: the wallet's small integer from wallet_ids (sql/0010). The primary key
--   (wallet_id, category) keeps a wallet's categories in one range, in category order.
-- * address_prefix: the address's first 8 hex digits, after "0x". The rankings order ties by
--   address, and wallet ids are not in address order. Every ranking index ends in the prefix
--   (then the wallet id, from the primary key), so it walks ties in address order; only wallets
--   whose addresses share the 8 digits (about 116 pairs in a million wallets) and whose values
--   tie are sorted by the whole address when read (src/read/prefix-ties.ts). The rankings have
--   long runs of equal values (on the large world, 173,266 sports wallets with no
--   counter-consensus win, 36,868 with a win rate of 0), so sorting whole runs by address would
--   read tens of thousands of rows for a page.
--
-- The rows are copied, not recomputed: the same values under the new key, in wallet id order,
-- so the new table is appended to; its indexes are built after the copy.

CREATE TABLE wallet_category_stats_copy (
  address TEXT NOT NULL, category TEXT NOT NULL, bets INTEGER NOT NULL,
  resolved_bets INTEGER NOT NULL, wins INTEGER NOT NULL, win_rate REAL, global_win_rate REAL,
  edge REAL, pnl REAL NOT NULL, volume REAL NOT NULL, counter_consensus_wins INTEGER NOT NULL,
  PRIMARY KEY (address, category)
) WITHOUT ROWID;
INSERT INTO wallet_category_stats_copy
SELECT address, category, bets, resolved_bets, wins, win_rate, global_win_rate, edge, pnl, volume,
  counter_consensus_wins FROM wallet_category_stats;
DROP TABLE wallet_category_stats;

-- A wallet's record in one category (docs/methodology.md): written by the refresh, read by the
-- category leaderboards, the edge screener, wallet profiles and investigations.
CREATE TABLE wallet_category_stats (
  -- No foreign key: the rows are derived from fills, whose wallet ids exist.
  wallet_id              INTEGER NOT NULL,
  category               TEXT    NOT NULL,
  address_prefix         TEXT    NOT NULL, -- substr(address, 3, 8): the rankings' tie order
  bets                   INTEGER NOT NULL,
  resolved_bets          INTEGER NOT NULL,
  wins                   INTEGER NOT NULL,
  win_rate               REAL,
  global_win_rate        REAL,
  edge                   REAL,             -- category win rate minus global win rate
  pnl                    REAL    NOT NULL,
  volume                 REAL    NOT NULL,
  counter_consensus_wins INTEGER NOT NULL,
  PRIMARY KEY (wallet_id, category)
) WITHOUT ROWID;

-- A row whose address has no wallet id (no fills) cannot exist in a database the refresh wrote;
-- the join leaves it behind.
INSERT INTO wallet_category_stats
SELECT w.id, c.category, substr(w.address, 3, 8), c.bets, c.resolved_bets, c.wins, c.win_rate,
  c.global_win_rate, c.edge, c.pnl, c.volume, c.counter_consensus_wins
  FROM wallet_ids w NOT INDEXED CROSS JOIN wallet_category_stats_copy c ON c.address = w.address;
DROP TABLE wallet_category_stats_copy;

-- The edge screener (src/read/edge-screen.ts): all categories, and within one.
CREATE INDEX wallet_category_by_edge ON wallet_category_stats (edge DESC, address_prefix, category)
  WHERE edge IS NOT NULL;
CREATE INDEX wallet_category_by_category
  ON wallet_category_stats (category, edge DESC, address_prefix);
-- Category leaderboards (src/read/leaderboards.ts): one order per sort within a category;
-- resolved_bets rides along so the min_bets filter is read from the index.
CREATE INDEX wallet_category_by_pnl
  ON wallet_category_stats (category, pnl DESC, address_prefix, resolved_bets);
CREATE INDEX wallet_category_by_volume
  ON wallet_category_stats (category, volume DESC, address_prefix, resolved_bets);
CREATE INDEX wallet_category_by_counter_consensus
  ON wallet_category_stats (category, counter_consensus_wins DESC, address_prefix, resolved_bets);
CREATE INDEX wallet_category_by_win_rate
  ON wallet_category_stats (category, win_rate DESC, address_prefix, resolved_bets)
  WHERE win_rate IS NOT NULL;
-- The category leaderboard's second plan: the wallets of a category with at least min_bets
-- resolved bets (sql/0011).
CREATE INDEX wallet_category_by_resolved ON wallet_category_stats (category, resolved_bets);

-- Timing buckets by wallet id, each bucket's count and wins instead of the answer's JSON
-- (src/analytics/timing.ts, storedTiming): [count, wins] per bucket of TIMING_BUCKETS, flattened,
-- about 30 characters instead of 230 or more. The reader computes each win rate as the refresh
-- did (wins / count), so the answers are the same. A stored win rate is wins / count as a
-- double; times the count, rounded, it gives the wins back exactly (counts are at most 500).
-- INTEGER PRIMARY KEY: the wallet id is the row id, so the table has no separate key.
CREATE TABLE wallet_timing_copy (
  address TEXT PRIMARY KEY,
  buckets TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO wallet_timing_copy SELECT address, buckets FROM wallet_timing;
DROP TABLE wallet_timing;

CREATE TABLE wallet_timing (
  wallet_id INTEGER PRIMARY KEY,
  counts    TEXT    NOT NULL -- JSON [count, wins, count, wins, …] in TIMING_BUCKETS order
);
INSERT INTO wallet_timing (wallet_id, counts)
SELECT w.id,
  (SELECT json_group_array(v ORDER BY k) FROM (
     SELECT 2 * b.key AS k, json_extract(b.value, '$.count') AS v FROM json_each(t.buckets) b
     UNION ALL
     SELECT 2 * b.key + 1,
       CAST(round(coalesce(json_extract(b.value, '$.win_rate'), 0) * json_extract(b.value, '$.count'))
         AS INTEGER)
       FROM json_each(t.buckets) b))
  FROM wallet_ids w NOT INDEXED CROSS JOIN wallet_timing_copy t ON t.address = w.address;
DROP TABLE wallet_timing_copy;
