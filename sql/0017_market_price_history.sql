-- GET /v1/markets/{slug}'s price_history, stored serialized per market (docs/architecture.md,
-- "The request path"). Built per answer from market_hours it was most of the answer's cost on
-- the medium world: 720 hourly rows read, 720 dates formatted and the array serialized, about
-- 1 ms of CPU. The stored array leaves out the newest point, which every refresh after a trade
-- changes: the refresh renders it again only when a new hour begins or an older one changes
-- (src/refresh/price-history.ts), and an answer reads it and the market's newest hour. A market
-- that never traded has no row.
CREATE TABLE market_price_history (
  market_id INTEGER PRIMARY KEY REFERENCES markets (id),
  points    TEXT    NOT NULL -- JSON array of {hour, price, volume, trade_count}, oldest first,
                             -- without the newest
);

-- Rendered by sql/0019, which gives the table its present shape: the rendering step writes that
-- shape, so it runs there.
