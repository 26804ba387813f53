-- Fill ids never go back. fills.id is an INTEGER PRIMARY KEY, which SQLite gives as max(id) + 1:
-- once a compaction had deleted the fills with the highest ids, a new fill took an id a sealed
-- fill holds in the history (two trades under one id on a page), and one at or below the
-- refresh's watermark, so the incremental refresh never counted it. A compaction raises this
-- floor past every fill it deletes, and insertTrades gives no fill an id below it.
CREATE TABLE fill_id_floor (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  next_id INTEGER NOT NULL
);
-- Every sealed fill was counted by a refresh (a compaction waits for that), so the largest
-- watermark bounds their ids without reading the history's files.
INSERT INTO fill_id_floor (one, next_id)
SELECT 1, 1 + max(
  coalesce((SELECT max(id) FROM fills), 0),
  coalesce((SELECT max(max_trade_id) FROM refresh_runs), 0),
  coalesce((SELECT max(trade_id) FROM signals), 0)
);
