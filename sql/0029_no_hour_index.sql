-- The market rankings' windows (trending, movers, moving: marketWindowSql in src/read/markets.ts)
-- now take the markets that may have traded in a window from market_stats.last_trade_at, which the
-- refresh writes with the market's hours, and seek each one's hours by market_hours' key
-- (docs/architecture.md, "Trending"). The index on the hour served only windows under a day,
-- which it helped find their markets no faster than that (the large world: 37 ms against 38 ms
-- for an hour, 76 against 87 ms for six). It held an entry for every hour row, about 7 bytes a
-- fill, and a full rebuild built it again.
-- IF EXISTS: a database rebuilt by hand into an older layout (the migration tests make one) may
-- not have it.
DROP INDEX IF EXISTS market_hours_by_hour;
