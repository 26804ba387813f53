-- wallet_bets keyed on wallet_ids.id (docs/architecture.md, "The read models' layout"). Measured
-- with dbstat on the medium world, the bets were the largest object of the database: 258 bytes
-- per fill with their two indexes, because the table and both indexes repeated the wallet's
-- 42-character address in every row.
--
-- * wallet_id: the wallet's small integer from wallet_ids (sql/0010) instead of its address.
--   The primary key (wallet_id, market_id) clusters a wallet's bets, so "the bets of a wallet"
--   is one range of the table.
-- * wallet_bets_by_wallet_recent is gone: the correlated-wallets query reads the wallet's range
--   of the table and filters on last_ts (a wallet has at most a few thousand bets), instead of
--   keeping a second copy of every key.
-- * The full rebuild writes the table in key order (it walks fills_by_wallet in wallet_id order),
--   so the rows are appended, never inserted into the middle of a page.
--
-- The bets are copied, not recomputed: the same values under the new key. The old rows are
-- first copied aside with their primary key (an append, in key order), then copied back wallet
-- by wallet in id order, so neither copy sorts: an ORDER BY over the large world's nine million
-- bets made the migration's sorter (temp_store is MEMORY) grow to 1.9 GB.

CREATE TABLE wallet_bets_copy (
  wallet TEXT NOT NULL, market_id INTEGER NOT NULL, category TEXT, side TEXT NOT NULL,
  entry_price REAL, buy_usd REAL NOT NULL, volume REAL NOT NULL, yes_flow REAL NOT NULL,
  no_flow REAL NOT NULL, yes_shares REAL NOT NULL, no_shares REAL NOT NULL,
  trade_count INTEGER NOT NULL, two_sided INTEGER NOT NULL, first_ts INTEGER NOT NULL,
  entry_ts INTEGER NOT NULL, last_ts INTEGER NOT NULL, resolved INTEGER NOT NULL, won INTEGER,
  pnl_base REAL NOT NULL, move_24h REAL,
  PRIMARY KEY (wallet, market_id)
) WITHOUT ROWID;
INSERT INTO wallet_bets_copy SELECT * FROM wallet_bets;
DROP TABLE wallet_bets;

-- One row per (wallet, market): the bet of docs/methodology.md, Bets, with its ledger PnL.
CREATE TABLE wallet_bets (
  -- No foreign key: bets are derived from fills, whose wallet ids exist, and a check per row
  -- would cost a lookup per bet written by every refresh.
  wallet_id     INTEGER NOT NULL,
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
  PRIMARY KEY (wallet_id, market_id)
) WITHOUT ROWID;

INSERT INTO wallet_bets
SELECT w.id, b.market_id, b.category, b.side, b.entry_price, b.buy_usd, b.volume, b.yes_flow,
  b.no_flow, b.yes_shares, b.no_shares, b.trade_count, b.two_sided, b.first_ts, b.entry_ts,
  b.last_ts, b.resolved, b.won, b.pnl_base, b.move_24h
  FROM wallet_ids w NOT INDEXED CROSS JOIN wallet_bets_copy b ON b.wallet = w.address;
DROP TABLE wallet_bets_copy;

-- Holders of a market's side by size (GET /v1/markets/{slug}), the refresh's "bets in a market".
CREATE INDEX wallet_bets_by_market ON wallet_bets (market_id, side, buy_usd DESC);
