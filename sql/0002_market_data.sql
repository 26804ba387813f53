-- Market data: markets, fills, funding transfers, wallet facts and address labels, plus the
-- bookkeeping the ingest path and the incremental analytics refresh share.
-- Times are Unix epoch milliseconds (INTEGER); addresses and hashes are stored lowercase.

CREATE TABLE markets (
  id               INTEGER PRIMARY KEY,
  slug             TEXT    NOT NULL UNIQUE CHECK (length(slug) > 0),
  title            TEXT,
  -- politics | crypto | sports | culture | economics | breaking-news, or another source's text
  category         TEXT,
  condition_id     TEXT    NOT NULL UNIQUE CHECK (length(condition_id) > 0),
  end_date         INTEGER,
  created_at       INTEGER,
  resolved_outcome TEXT    CHECK (resolved_outcome IN ('YES', 'NO')),
  resolved_at      INTEGER,
  -- An outcome without its time (or the reverse) would make "hours before resolution" undefined.
  CHECK ((resolved_outcome IS NULL) = (resolved_at IS NULL))
);
CREATE INDEX markets_by_category ON markets (category, id);
CREATE INDEX markets_by_resolution ON markets (resolved_at) WHERE resolved_at IS NOT NULL;

-- One row per fill, keyed on chain by (tx_hash, log_index). The unique index also serves
-- GET /v1/trades/{txHash}: its prefix is tx_hash, and log_index orders the fills within it.
CREATE TABLE trades (
  id        INTEGER PRIMARY KEY,
  tx_hash   TEXT    NOT NULL CHECK (length(tx_hash) = 66),
  log_index INTEGER NOT NULL CHECK (log_index >= 0),
  wallet    TEXT    NOT NULL CHECK (length(wallet) = 42),
  market_id INTEGER NOT NULL REFERENCES markets (id),
  outcome   TEXT    NOT NULL CHECK (outcome IN ('YES', 'NO')),
  side      TEXT    NOT NULL CHECK (side IN ('BUY', 'SELL')),
  price     REAL    NOT NULL CHECK (price >= 0 AND price <= 1),
  size      REAL    NOT NULL CHECK (size > 0),
  usd_value REAL    NOT NULL CHECK (usd_value >= 0),
  ts        INTEGER NOT NULL,
  UNIQUE (tx_hash, log_index)
);
CREATE INDEX trades_by_wallet ON trades (wallet, ts, id);
CREATE INDEX trades_by_market ON trades (market_id, ts, id);
CREATE INDEX trades_by_time ON trades (ts, id);

-- Funding and gas movements between addresses (the sybil and connection graphs).
CREATE TABLE transfers (
  id           INTEGER PRIMARY KEY,
  tx_hash      TEXT    NOT NULL CHECK (length(tx_hash) = 66),
  log_index    INTEGER NOT NULL CHECK (log_index >= 0),
  from_address TEXT    NOT NULL CHECK (length(from_address) = 42),
  to_address   TEXT    NOT NULL CHECK (length(to_address) = 42),
  token        TEXT    NOT NULL CHECK (token IN ('USDC', 'POL')),
  amount       REAL    NOT NULL CHECK (amount > 0),
  ts           INTEGER NOT NULL,
  UNIQUE (tx_hash, log_index)
);
CREATE INDEX transfers_by_to ON transfers (to_address, ts);
CREATE INDEX transfers_by_from ON transfers (from_address, ts);

-- Facts a source states about a wallet (platform display name, the platform's own PnL figure).
-- A wallet that only trades has no row here: trades are the record of activity.
CREATE TABLE wallets (
  address            TEXT PRIMARY KEY CHECK (length(address) = 42),
  platform_name      TEXT,
  platform_pnl       REAL,
  platform_pnl_as_of INTEGER,
  created_at         INTEGER
) WITHOUT ROWID;

CREATE TABLE labels (
  address TEXT PRIMARY KEY CHECK (length(address) = 42),
  kind    TEXT NOT NULL CHECK (kind IN ('exchange', 'platform', 'proxy_factory')),
  name    TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX labels_by_kind ON labels (kind, address);

-- Cursors and small facts the ingesters keep between runs (e.g. the last block or page seen).
CREATE TABLE ingest_state (
  key        TEXT    PRIMARY KEY,
  value      TEXT    NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- What changed since the analytics refresh last ran. Filled in the same transaction as the new
-- trades or resolutions that touch them (src/ingest/ingest.ts), consumed and cleared by the
-- refresh job, so a crash between the two can only make the refresh redo work, never skip it.
CREATE TABLE dirty_wallets (
  address TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE TABLE dirty_markets (
  market_id INTEGER PRIMARY KEY REFERENCES markets (id)
);

-- Keys seen in the file being imported, to find a wallet or label given twice in one file
-- without holding every key in memory. Written and emptied inside the import's own transaction,
-- so it is empty whenever no import is running.
CREATE TABLE import_seen (
  key  TEXT    PRIMARY KEY,
  line INTEGER NOT NULL
) WITHOUT ROWID;
