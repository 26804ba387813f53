-- market_price_history's points stored deflated (docs/architecture.md, "The price history,
-- deflated"). The JSON of each market's hours was 44 bytes per fill on the large fixture world
-- (438 MB for 20,000 markets); raw DEFLATE at level 1 keeps a seventh of it. The served text is
-- the same: an answer inflates the row and trims it as before (src/refresh/price-history.ts).
--
-- The rows are copied aside, the table is created again with a BLOB column, and each row is
-- deflated back into it (ALTER TABLE … RENAME is not used: see sql/0010).
CREATE TABLE price_history_text AS
  SELECT market_id, through_hour, point_count, points FROM market_price_history;
DROP TABLE market_price_history;
CREATE TABLE market_price_history (
  market_id    INTEGER PRIMARY KEY REFERENCES markets (id),
  through_hour INTEGER,          -- the newest stored hour; NULL when none is stored yet
  point_count  INTEGER NOT NULL, -- points in `points`
  points       BLOB    NOT NULL  -- raw DEFLATE of the JSON array of {hour, price, volume,
                                 -- trade_count}, oldest first
);
-- @step deflate_price_histories
DROP TABLE price_history_text;
