-- market_price_history stored up to a cut hour (docs/architecture.md, "The incremental
-- refresh"). 0017 stored each market's history but its newest point, so every new hour of every
-- traded market rendered and rewrote its whole history (up to 65 KB): on the large world, 4,461
-- histories, a third of an incremental refresh after 10,000 trades in a new hour. The cut now
-- falls on every 24th trading hour of the market (src/refresh/price-history.ts, cutOf): the
-- stored part is rendered once per 24 new trading hours or when a stored hour changes, and an
-- answer reads the hours after the cut (at most 24) from market_hours.
--
-- through_hour and point_count come before points, so reading them does not walk the points'
-- overflow pages.
DROP TABLE market_price_history;
CREATE TABLE market_price_history (
  market_id    INTEGER PRIMARY KEY REFERENCES markets (id),
  through_hour INTEGER,          -- the newest stored hour; NULL when none is stored yet
  point_count  INTEGER NOT NULL, -- points in `points`
  points       TEXT    NOT NULL  -- JSON array of {hour, price, volume, trade_count}, oldest first
);

-- Rendered from the stored hours by the same code as the refresh, so existing databases serve
-- the same answer without waiting for one.
-- @step render_price_histories
