-- The category leaderboard's second plan (src/read/leaderboards.ts): the wallets of a category
-- with at least min_bets resolved bets, found directly rather than by walking a whole ranking
-- index. With the default min_bets (20), a few dozen of a category's tens of thousands of
-- wallets qualify; walking the ranking index to find them looked up every wallet of the
-- category (about 110 ms per request on the medium world, growing with it).
CREATE INDEX wallet_category_by_resolved ON wallet_category_stats (category, resolved_bets);
