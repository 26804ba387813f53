-- Bookkeeping of the live Polymarket ingester (src/ingest/polymarket/): how each stage fares,
-- the records it set aside, the time ranges it knows it missed, and market facts the core
-- tables have no column for.

-- One row per stage (markets, stream, tail, fills, transfers, funding, resolutions,
-- leaderboard): each runs, fails and backs off on its own.
CREATE TABLE ingest_stages (
  stage                TEXT    PRIMARY KEY,
  last_run_at          INTEGER,
  last_success_at      INTEGER,
  last_error           TEXT,
  last_error_at        INTEGER,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  errors_total         INTEGER NOT NULL DEFAULT 0,
  -- While a stage backs off after failures, rounds skip it until this time.
  next_attempt_at      INTEGER
);

-- Upstream records that did not validate: kept with the reason, skipped, never blocking their
-- page again. record_key (a hash of the record) stores a record served again only once.
CREATE TABLE ingest_quarantine (
  id          INTEGER PRIMARY KEY,
  stage       TEXT    NOT NULL,
  location    TEXT    NOT NULL,
  reason      TEXT    NOT NULL,
  record      TEXT    NOT NULL,
  record_key  TEXT    NOT NULL,
  at          INTEGER NOT NULL,
  UNIQUE (stage, record_key)
);

-- Time ranges of fills a source could not read (e.g. the data API's offset cap after a long
-- outage). filled_at is set when a deeper source (chain logs) has covered the range.
CREATE TABLE ingest_gaps (
  id          INTEGER PRIMARY KEY,
  source      TEXT    NOT NULL,
  from_ts     INTEGER NOT NULL,
  to_ts       INTEGER NOT NULL,
  reason      TEXT    NOT NULL,
  detected_at INTEGER NOT NULL,
  filled_at   INTEGER,
  CHECK (from_ts <= to_ts)
);
CREATE INDEX ingest_gaps_open ON ingest_gaps (to_ts) WHERE filled_at IS NULL;

-- Outcome names as Polymarket shows them ("Up"/"Down", two teams) beside our YES (index 0)
-- and NO (index 1).
CREATE TABLE market_outcomes (
  market_id INTEGER PRIMARY KEY REFERENCES markets (id),
  yes_name  TEXT    NOT NULL,
  no_name   TEXT    NOT NULL
);

-- Markets that closed without a winner (a 50/50 split or a cancellation): they leave the set
-- awaiting resolution and never resolve YES or NO.
CREATE TABLE market_voids (
  market_id INTEGER PRIMARY KEY REFERENCES markets (id),
  reason    TEXT    NOT NULL CHECK (reason IN ('split', 'cancelled')),
  closed_at INTEGER
);

-- Wallets whose funding before their first fill was read (inbound collateral transfers back to
-- the funding horizon): each wallet once, when first seen.
CREATE TABLE wallet_funding_scans (
  wallet        TEXT    PRIMARY KEY,
  first_fill_at INTEGER NOT NULL,
  scanned_at    INTEGER NOT NULL
);
