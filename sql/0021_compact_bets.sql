-- wallet_bets stored compactly (docs/architecture.md, "The read models' layout"): 92% of the
-- fixture worlds' bets hold one fill, so a bet row was nearly a second copy of a fill, with its
-- amounts as 8-byte REALs and three timestamps of 6 bytes each. The served columns keep their
-- names and values as VIRTUAL generated columns, so every reader is unchanged; what is stored:
--   side_code          0 for YES, 1 for NO (SQLite stores 0 and 1 in no bytes)
--   *_units            an amount in millionths when that is exact, else the value itself
--                      (the fill store's rule, sql/0010 and src/ingest/fill-codec.ts)
--   entry_offset,      entry_ts and last_ts as milliseconds after first_ts (0 for most bets,
--   last_offset        which SQLite stores in no bytes)
-- The rows are copied aside and back (ALTER TABLE … RENAME is not used: see sql/0010).
CREATE TABLE bets_before_0021 AS SELECT * FROM wallet_bets ORDER BY wallet_id, market_id;
DROP TABLE wallet_bets;
CREATE TABLE wallet_bets (
  -- No foreign key on the wallet: bets are derived from fills, whose wallet ids exist, and a
  -- check per row would cost a lookup per bet written by every refresh.
  wallet_id         INTEGER NOT NULL,
  market_id         INTEGER NOT NULL REFERENCES markets (id),
  category          TEXT,
  side              TEXT GENERATED ALWAYS AS (CASE side_code WHEN 0 THEN 'YES' ELSE 'NO' END)
                      VIRTUAL,
  -- volume-weighted BUY price on the side; NULL without buys
  entry_price       REAL GENERATED ALWAYS AS (CASE typeof(entry_price_units)
                      WHEN 'integer' THEN entry_price_units / 1e6 ELSE entry_price_units END)
                      VIRTUAL,
  -- BUY USD on the side
  buy_usd           REAL GENERATED ALWAYS AS (CASE typeof(buy_usd_units)
                      WHEN 'integer' THEN buy_usd_units / 1e6 ELSE buy_usd_units END) VIRTUAL,
  -- all USD traded in this market, both outcomes and sides
  volume            REAL GENERATED ALWAYS AS (CASE typeof(volume_units)
                      WHEN 'integer' THEN volume_units / 1e6 ELSE volume_units END) VIRTUAL,
  -- BUY YES + SELL NO USD
  yes_flow          REAL GENERATED ALWAYS AS (CASE typeof(yes_flow_units)
                      WHEN 'integer' THEN yes_flow_units / 1e6 ELSE yes_flow_units END) VIRTUAL,
  -- BUY NO + SELL YES USD
  no_flow           REAL GENERATED ALWAYS AS (CASE typeof(no_flow_units)
                      WHEN 'integer' THEN no_flow_units / 1e6 ELSE no_flow_units END) VIRTUAL,
  -- shares held now (ledger)
  yes_shares        REAL GENERATED ALWAYS AS (CASE typeof(yes_shares_units)
                      WHEN 'integer' THEN yes_shares_units / 1e6 ELSE yes_shares_units END)
                      VIRTUAL,
  no_shares         REAL GENERATED ALWAYS AS (CASE typeof(no_shares_units)
                      WHEN 'integer' THEN no_shares_units / 1e6 ELSE no_shares_units END)
                      VIRTUAL,
  trade_count       INTEGER NOT NULL,
  two_sided         INTEGER NOT NULL, -- money on both the YES and the NO direction (market-maker test)
  first_ts          INTEGER NOT NULL,
  -- first BUY on the side, else the first fill
  entry_ts          INTEGER GENERATED ALWAYS AS (first_ts + entry_offset) VIRTUAL,
  last_ts           INTEGER GENERATED ALWAYS AS (first_ts + last_offset) VIRTUAL,
  resolved          INTEGER NOT NULL,
  won               INTEGER,          -- NULL while the market is open
  pnl_base          REAL    NOT NULL, -- realised PnL minus the cost of the shares still held
  move_24h          REAL,             -- the side's price 24 h after entry minus entry price
  side_code         INTEGER NOT NULL CHECK (side_code IN (0, 1)),
  entry_price_units,
  buy_usd_units     NOT NULL,
  volume_units      NOT NULL,
  yes_flow_units    NOT NULL,
  no_flow_units     NOT NULL,
  yes_shares_units  NOT NULL,
  no_shares_units   NOT NULL,
  entry_offset      INTEGER NOT NULL CHECK (entry_offset >= 0),
  last_offset       INTEGER NOT NULL CHECK (last_offset >= 0),
  PRIMARY KEY (wallet_id, market_id)
) WITHOUT ROWID;
-- @step compact_bets
DROP TABLE bets_before_0021;
CREATE INDEX wallet_bets_by_market ON wallet_bets (market_id, side, buy_usd DESC);
