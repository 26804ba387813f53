-- market_hours' amounts and prices stored in millionths when that is exact (docs/architecture.md,
-- "Hours stored compactly"), as wallet_bets' since 0021 and the fills' since 0010. The served
-- columns keep their names and values as VIRTUAL generated columns, so every reader is unchanged.
-- The rows are copied aside and back in key order (ALTER TABLE … RENAME is not used: sql/0010).
CREATE TABLE hours_before_0022 AS SELECT * FROM market_hours ORDER BY market_id, hour;
DROP TABLE market_hours;
CREATE TABLE market_hours (
  market_id          INTEGER NOT NULL REFERENCES markets (id),
  hour               INTEGER NOT NULL, -- floor(ts / 3,600,000)
  volume             REAL GENERATED ALWAYS AS (CASE typeof(volume_units)
                       WHEN 'integer' THEN volume_units / 1e6 ELSE volume_units END) VIRTUAL,
  whale_volume       REAL GENERATED ALWAYS AS (CASE typeof(whale_volume_units)
                       WHEN 'integer' THEN whale_volume_units / 1e6 ELSE whale_volume_units END)
                       VIRTUAL,
  trade_count        INTEGER NOT NULL,
  -- YES flow minus NO flow, USD
  net_flow           REAL GENERATED ALWAYS AS (CASE typeof(net_flow_units)
                       WHEN 'integer' THEN net_flow_units / 1e6 ELSE net_flow_units END) VIRTUAL,
  -- first and last YES-equivalent price in the hour
  open_yes           REAL GENERATED ALWAYS AS (CASE typeof(open_yes_units)
                       WHEN 'integer' THEN open_yes_units / 1e6 ELSE open_yes_units END) VIRTUAL,
  close_yes          REAL GENERATED ALWAYS AS (CASE typeof(close_yes_units)
                       WHEN 'integer' THEN close_yes_units / 1e6 ELSE close_yes_units END) VIRTUAL,
  volume_units       NOT NULL,
  whale_volume_units NOT NULL,
  net_flow_units     NOT NULL,
  open_yes_units,
  close_yes_units,
  PRIMARY KEY (market_id, hour)
) WITHOUT ROWID;
-- @step compact_market_hours
DROP TABLE hours_before_0022;
CREATE INDEX market_hours_by_hour ON market_hours (hour, market_id);
