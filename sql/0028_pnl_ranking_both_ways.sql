-- The PnL leaderboard's ascending order walks wallet_stats_by_pnl (0004) backwards, and SQLite
-- sorts each run of equal PnL by address as it goes (docs/architecture.md, "One PnL ranking,
-- walked both ways"). The second index kept the same entries in the other order: every wallet
-- whose PnL a refresh moved (most of those it recomputes: their open positions are marked at the
-- new prices) moved in both, and on the large world it held 11.4 MB.
-- IF EXISTS: a database rebuilt by hand into an older layout (the migration tests make one) may
-- not have it.
DROP INDEX IF EXISTS wallet_stats_by_pnl_asc;
