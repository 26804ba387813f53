-- Fill retention (SMARTMONEY_FILL_RETENTION; docs/architecture.md, "Fill retention"). A market
-- resolved before the retention window is compacted: its fills are deleted, except those a
-- signal names, and what the read models derived from them is kept as frozen archive rows.
--
-- * markets.compacted_at: when the market was compacted; NULL for every market that keeps all
--   its fills. Fills for a compacted market are refused by every ingest path.
-- * archived_bets, archived_market_stats, archived_market_hours: the compacted market's
--   wallet_bets, market_stats and market_hours rows as they were when it was compacted. They are
--   a source, like fills: the full rebuild copies them back into the read models (merging the
--   bets into each wallet's stream in wallet id order) instead of recomputing them, and the
--   incremental refresh leaves those read-model rows alone.
-- * Fills a signal names (signals.trade_id) stay in `fills`, so the signal's trade stays in trade
--   pages, but no read model counts them any more: their bet is in archived_bets.
-- * compaction_runs: each compaction run's summary, for the log and `smartmoney status`.

ALTER TABLE markets ADD COLUMN compacted_at INTEGER;

CREATE TABLE archived_bets (
  wallet_id     INTEGER NOT NULL,
  market_id     INTEGER NOT NULL REFERENCES markets (id),
  category      TEXT,
  side          TEXT    NOT NULL CHECK (side IN ('YES', 'NO')),
  entry_price   REAL,
  buy_usd       REAL    NOT NULL,
  volume        REAL    NOT NULL,
  yes_flow      REAL    NOT NULL,
  no_flow       REAL    NOT NULL,
  yes_shares    REAL    NOT NULL,
  no_shares     REAL    NOT NULL,
  trade_count   INTEGER NOT NULL,
  two_sided     INTEGER NOT NULL,
  first_ts      INTEGER NOT NULL,
  entry_ts      INTEGER NOT NULL,
  last_ts       INTEGER NOT NULL,
  resolved      INTEGER NOT NULL,
  won           INTEGER,
  pnl_base      REAL    NOT NULL,
  move_24h      REAL,
  PRIMARY KEY (wallet_id, market_id)
) WITHOUT ROWID;

CREATE TABLE archived_market_stats (
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
  implied_wallets    INTEGER,
  last_yes_trade     REAL,
  last_no_trade      REAL
);

CREATE TABLE archived_market_hours (
  market_id    INTEGER NOT NULL REFERENCES markets (id),
  hour         INTEGER NOT NULL,
  volume       REAL    NOT NULL,
  whale_volume REAL    NOT NULL,
  trade_count  INTEGER NOT NULL,
  net_flow     REAL    NOT NULL,
  open_yes     REAL,
  close_yes    REAL,
  PRIMARY KEY (market_id, hour)
) WITHOUT ROWID;

CREATE TABLE compaction_runs (
  id          INTEGER PRIMARY KEY,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  summary     TEXT    NOT NULL -- JSON: the window, markets compacted, fills deleted and kept
);
