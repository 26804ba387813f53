-- What an incremental refresh needs so that it can touch only what changed (src/refresh/refresh.ts):
--
-- * wallet_bets stores a bet's PnL without its mark: pnl_base = realised − cost of the shares
--   still held. PnL at a price is pnl_base + yes_shares × YES price + no_shares × NO price (the
--   payout, 1 or 0, once the market resolved), so a price move no longer rewrites every holder's
--   rows. Readers mark positions at market_stats' last trade prices.
-- * wallet_stats.refreshed_at: when the wallet's row was computed, which is also the moment its
--   open positions were marked (the as-of of its ledger PnL). log10_p_value keeps the exact
--   wins-versus-prices result, reused while the wallet's resolved bets stay the same.
-- * market_stats keeps each outcome's last trade price, the marks above.
-- * dirty_markets.changed: the market's outcome or facts changed (not merely new trades), so
--   every bet in it is recomputed.
-- * refresh_runs.max_trade_id: trades with a larger id are the ones the next run has not seen.
--
-- The read models are derived data: they are dropped and rebuilt in full by the next refresh.

DROP TABLE wallet_bets;
CREATE TABLE wallet_bets (
  wallet        TEXT    NOT NULL,
  market_id     INTEGER NOT NULL REFERENCES markets (id),
  category      TEXT,
  side          TEXT    NOT NULL CHECK (side IN ('YES', 'NO')),
  entry_price   REAL,             -- volume-weighted BUY price on the side; NULL without buys
  buy_usd       REAL    NOT NULL, -- BUY USD on the side
  volume        REAL    NOT NULL, -- all USD traded in this market, both outcomes and sides
  yes_flow      REAL    NOT NULL, -- BUY YES + SELL NO USD
  no_flow       REAL    NOT NULL, -- BUY NO + SELL YES USD
  yes_shares    REAL    NOT NULL, -- shares held now (ledger)
  no_shares     REAL    NOT NULL,
  trade_count   INTEGER NOT NULL,
  two_sided     INTEGER NOT NULL, -- money on both the YES and the NO direction (market-maker test)
  first_ts      INTEGER NOT NULL,
  entry_ts      INTEGER NOT NULL, -- first BUY on the side, else the first fill
  last_ts       INTEGER NOT NULL,
  resolved      INTEGER NOT NULL,
  won           INTEGER,          -- NULL while the market is open
  pnl_base      REAL    NOT NULL, -- realised PnL minus the cost of the shares still held
  move_24h      REAL,             -- the side's price 24 h after entry minus entry price
  PRIMARY KEY (wallet, market_id)
) WITHOUT ROWID;
CREATE INDEX wallet_bets_by_market ON wallet_bets (market_id, side, buy_usd DESC);
CREATE INDEX wallet_bets_by_wallet_recent ON wallet_bets (wallet, last_ts);

ALTER TABLE wallet_stats ADD COLUMN refreshed_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallet_stats ADD COLUMN log10_p_value REAL;

ALTER TABLE market_stats ADD COLUMN last_yes_trade REAL;
ALTER TABLE market_stats ADD COLUMN last_no_trade REAL;

ALTER TABLE dirty_markets ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;

ALTER TABLE refresh_runs ADD COLUMN max_trade_id INTEGER;

-- Without a watermark the next refresh is a full rebuild, which refills wallet_bets.
DELETE FROM wallet_stats;
UPDATE refresh_runs SET max_trade_id = NULL;

-- Fills by (wallet, market) and by market, each in time order, covering every column the
-- refresh reads: an incremental refresh recomputes a bet from one pair's fills, and a full
-- rebuild streams all trades twice in these orders. Reading whole index entries in order, not
-- the table row behind each, keeps a full rebuild of 10 million trades from turning into 20
-- million random reads of an 8 GB table.
CREATE INDEX trades_by_wallet_market
  ON trades (wallet, market_id, ts, id, outcome, side, price, size, usd_value);
DROP INDEX trades_by_market;
CREATE INDEX trades_by_market
  ON trades (market_id, ts, id, wallet, outcome, side, price, size, usd_value);

-- A wallet's highest insider score (its type), one seek per wallet the refresh recomputes
-- instead of a walk over all its signals.
CREATE INDEX signals_insider_by_wallet ON signals (wallet, score) WHERE type = 'insider';
