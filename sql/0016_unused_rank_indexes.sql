-- Three rankings of every wallet that no query reads: the whale leaderboards rank by win rate,
-- z-score and bets through the partial whale indexes of sql/0006, and nothing else orders
-- wallet_stats by these columns (src/read/leaderboards.ts names the index each ranking walks).
-- Each cost every refresh that changed a wallet's figures one more B-tree update, and about
-- 3 bytes per fill on disk (10 MB each on the large world).
DROP INDEX IF EXISTS wallet_stats_by_win_rate;
DROP INDEX IF EXISTS wallet_stats_by_z;
DROP INDEX IF EXISTS wallet_stats_by_bets;
