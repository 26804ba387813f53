-- Wallet search and the serving orders of the wallet endpoints and leaderboards that the indexes
-- of 0004 do not cover. Every list the API pages walks one of these (or a 0004 index) in its
-- serving order, so a page is an index seek plus at most `limit` rows, never a sort.

-- Name search (GET /v1/wallets/search): an FTS5 trigram index over platform names, which answers
-- case-insensitive substring queries of three or more characters from the index. Filled from
-- wallet_stats by refreshWalletSearch (src/refresh/wallet-search.ts) during the refresh. The
-- FTS rowid is the id below; a full rebuild numbers wallets by total volume, largest first, so
-- reading matches in rowid order meets the biggest wallets first.
CREATE TABLE wallet_search_rows (
  id      INTEGER PRIMARY KEY,
  address TEXT    NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE wallet_search USING fts5 (platform_name, tokenize = 'trigram');

-- GET /v1/wallets/{address}/correlated: the wallet's bets active in the last 30 days.
CREATE INDEX wallet_bets_by_wallet_recent ON wallet_bets (wallet, last_ts);

-- Whales leaderboard (total volume > 50,000 USD; the literal must match the query's). Sorting by
-- volume walks 0004's wallet_stats_by_volume. resolved_bets rides along so the
-- min_resolved_bets filter is read from the index.
CREATE INDEX wallet_stats_whales_by_win_rate ON wallet_stats (win_rate DESC, address, resolved_bets)
  WHERE total_volume > 50000 AND win_rate IS NOT NULL;
CREATE INDEX wallet_stats_whales_by_z ON wallet_stats (z_score DESC, address, resolved_bets)
  WHERE total_volume > 50000 AND z_score IS NOT NULL;
CREATE INDEX wallet_stats_whales_by_bets ON wallet_stats (total_bets DESC, address, resolved_bets)
  WHERE total_volume > 50000;

-- PnL leaderboard ascending (0004's wallet_stats_by_pnl serves descending); ties by address
-- ascending in both directions.
CREATE INDEX wallet_stats_by_pnl_asc ON wallet_stats (total_pnl, address, resolved_bets)
  WHERE pnl_source <> 'none';

-- Category leaderboards: one order per sort within a category.
CREATE INDEX wallet_category_by_pnl ON wallet_category_stats (category, pnl DESC, address, resolved_bets);
CREATE INDEX wallet_category_by_volume ON wallet_category_stats (category, volume DESC, address, resolved_bets);
CREATE INDEX wallet_category_by_counter_consensus
  ON wallet_category_stats (category, counter_consensus_wins DESC, address, resolved_bets);
CREATE INDEX wallet_category_by_win_rate
  ON wallet_category_stats (category, win_rate DESC, address, resolved_bets) WHERE win_rate IS NOT NULL;
