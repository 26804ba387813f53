-- Read models: everything the API serves that needs aggregation, built by the refresh job
-- (src/jobs/refresh.ts) so that no request aggregates raw trades. A refresh rewrites them inside
-- one write transaction: readers (WAL) see the previous complete state until it commits.

-- One row per (wallet, market): the bet of docs/methodology.md, Bets, with its ledger PnL.
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
  pnl           REAL    NOT NULL, -- realised + settlement + mark
  move_24h      REAL,             -- the side's price 24 h after entry minus entry price
  PRIMARY KEY (wallet, market_id)
) WITHOUT ROWID;
CREATE INDEX wallet_bets_by_market ON wallet_bets (market_id, side, buy_usd DESC);

-- One row per wallet that ever traded: every WalletStats field, the score and the type.
CREATE TABLE wallet_stats (
  address               TEXT PRIMARY KEY,
  platform_name         TEXT,
  trade_count           INTEGER NOT NULL,
  total_bets            INTEGER NOT NULL,
  resolved_bets         INTEGER NOT NULL,
  wins                  INTEGER NOT NULL,
  win_rate              REAL,
  bayesian_win_rate     REAL,
  total_volume          REAL    NOT NULL,
  ledger_pnl            REAL    NOT NULL,
  total_pnl             REAL,             -- the routed figure (pnl_source)
  pnl_source            TEXT    NOT NULL CHECK (pnl_source IN ('platform_api', 'ledger', 'none')),
  pnl_as_of             INTEGER,
  markets_traded        INTEGER NOT NULL,
  expected_wins         REAL    NOT NULL,
  p_value               REAL,
  z_score               REAL,
  counter_consensus_wins INTEGER NOT NULL,
  smart_money_score     REAL    NOT NULL,
  confidence            REAL    NOT NULL,
  breakdown             TEXT    NOT NULL, -- JSON: each signal's points
  wallet_type           TEXT    NOT NULL,
  first_trade_at        INTEGER NOT NULL,
  last_trade_at         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX wallet_stats_by_volume ON wallet_stats (total_volume DESC, address);
CREATE INDEX wallet_stats_by_win_rate ON wallet_stats (win_rate DESC, address);
CREATE INDEX wallet_stats_by_z ON wallet_stats (z_score DESC, address);
CREATE INDEX wallet_stats_by_bets ON wallet_stats (total_bets DESC, address);
CREATE INDEX wallet_stats_by_pnl ON wallet_stats (total_pnl DESC, address) WHERE pnl_source <> 'none';
CREATE INDEX wallet_stats_by_name ON wallet_stats (platform_name) WHERE platform_name IS NOT NULL;

CREATE TABLE wallet_category_stats (
  address                TEXT    NOT NULL,
  category               TEXT    NOT NULL,
  bets                   INTEGER NOT NULL,
  resolved_bets          INTEGER NOT NULL,
  wins                   INTEGER NOT NULL,
  win_rate               REAL,
  global_win_rate        REAL,
  edge                   REAL,             -- category win rate minus global win rate
  pnl                    REAL    NOT NULL,
  volume                 REAL    NOT NULL,
  counter_consensus_wins INTEGER NOT NULL,
  PRIMARY KEY (address, category)
) WITHOUT ROWID;
CREATE INDEX wallet_category_by_edge ON wallet_category_stats (edge DESC, address, category)
  WHERE edge IS NOT NULL;
CREATE INDEX wallet_category_by_category ON wallet_category_stats (category, edge DESC, address);

CREATE TABLE wallet_timing (
  address TEXT PRIMARY KEY,
  buckets TEXT NOT NULL -- JSON [{label, count, win_rate}]
) WITHOUT ROWID;

-- Per market: the last prices and the 30-day whale sentiment and implied probability.
CREATE TABLE market_stats (
  market_id          INTEGER PRIMARY KEY REFERENCES markets (id),
  volume             REAL    NOT NULL,
  trade_count        INTEGER NOT NULL,
  unique_wallets     INTEGER NOT NULL,
  last_yes_price     REAL,
  last_trade_at      INTEGER,
  sentiment          TEXT,
  yes_ratio          REAL,
  yes_volume         REAL,
  no_volume          REAL,
  total_whale_volume REAL,
  unique_whales      INTEGER,
  yes_implied_prob   REAL,
  no_implied_prob    REAL,
  implied_edge       REAL,
  implied_samples    INTEGER,
  implied_wallets    INTEGER
);

-- Hourly buckets per market: trending, moving, movers and price history read these.
CREATE TABLE market_hours (
  market_id    INTEGER NOT NULL REFERENCES markets (id),
  hour         INTEGER NOT NULL, -- floor(ts / 3,600,000)
  volume       REAL    NOT NULL,
  whale_volume REAL    NOT NULL,
  trade_count  INTEGER NOT NULL,
  net_flow     REAL    NOT NULL, -- YES flow minus NO flow, USD
  open_yes     REAL,             -- first and last YES-equivalent price in the hour
  close_yes    REAL,
  PRIMARY KEY (market_id, hour)
) WITHOUT ROWID;
CREATE INDEX market_hours_by_hour ON market_hours (hour, market_id);

CREATE TABLE category_base_rates (
  category      TEXT PRIMARY KEY,
  resolved_bets INTEGER NOT NULL,
  wins          INTEGER NOT NULL,
  base_rate     REAL
) WITHOUT ROWID;

-- Each refresh run: when, what it did. The latest finished_at is the as-of of ledger PnL.
CREATE TABLE refresh_runs (
  id          INTEGER PRIMARY KEY,
  kind        TEXT    NOT NULL CHECK (kind IN ('full', 'incremental')),
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  summary     TEXT    NOT NULL
);
