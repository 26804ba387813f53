-- Big fills by time (docs/architecture.md, "Windows of big trades"). GET /v1/trades with a
-- window and min_bet walked fills_by_time newest first and read every fill of the window until
-- it had a page of big ones; at 1M fills a day, 0.4% of them at or over 1,000 USD (the medium
-- world), a page of 25 read about 6,000 rows on the medium world and ten times that on the
-- large one (3.9x the small world's p50). This partial index holds only the fills worth at
-- least 1,000 USD, so such a page is an index range of about its own size.
--
-- usd_value is stored in millionths when exact, else as a REAL (sql/0010), so the predicate
-- tests both forms. src/read/trades.ts (BIG_FILL_PREDICATE) repeats it word for word: SQLite
-- uses a partial index only for a query whose WHERE contains the index's WHERE.
CREATE INDEX fills_big_by_time ON fills (ts)
  WHERE CASE typeof(usd_value) WHEN 'integer' THEN usd_value >= 1000000000 ELSE usd_value >= 1000 END;
