-- Funding graph and investigations: read models rebuilt by refreshFunding (src/funding/refresh.ts)
-- from transfers, labels and the wallet read models of 0004. Requests only read them, each query
-- walking one of the indexes below with a LIMIT; no request builds a graph.

-- Each unlabelled address's first inbound USDC transfer and, unless that sender is labelled
-- (exchange, platform, proxy_factory), its funder (docs/methodology.md, Funding graph).
CREATE TABLE wallet_funding (
  wallet          TEXT    PRIMARY KEY,
  first_sender    TEXT    NOT NULL,
  first_amount    REAL    NOT NULL,
  first_funded_at INTEGER NOT NULL,
  funder          TEXT             -- first_sender, or NULL when that sender is labelled
) WITHOUT ROWID;
-- A funder's wallets in funding order: cluster members, the cluster graph, the 500-wallet guard.
CREATE INDEX wallet_funding_by_funder ON wallet_funding (funder, first_funded_at, wallet)
  WHERE funder IS NOT NULL;

-- Sybil clusters: two or more wallets sharing a funder. The id is 'clu_' + the lowest member
-- address, so it stays put while members with higher addresses join.
CREATE TABLE sybil_clusters (
  id              TEXT    PRIMARY KEY,
  funder          TEXT    NOT NULL UNIQUE,
  member_count    INTEGER NOT NULL,
  total_volume    REAL,
  total_pnl       REAL,
  resolved_bets   INTEGER NOT NULL,
  wins            INTEGER NOT NULL,
  win_rate        REAL,
  markets_traded  INTEGER,
  first_funded_at INTEGER,
  last_active_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX sybil_clusters_by_members ON sybil_clusters (member_count DESC, id);
CREATE INDEX sybil_clusters_by_volume ON sybil_clusters (total_volume DESC, id);
CREATE INDEX sybil_clusters_by_pnl ON sybil_clusters (total_pnl DESC, id);

-- Typed connections from transfers, one row per (address, type, counterparty, direction), stored
-- from both ends. The key is the serving order, so GET /v1/wallets/{address}/connections reads one range
-- backwards: most confident first, then most recent.
CREATE TABLE wallet_connections (
  address      TEXT    NOT NULL,
  confidence   REAL    NOT NULL,
  last_seen    INTEGER NOT NULL,
  type         TEXT    NOT NULL CHECK (type IN ('funded_by', 'funded', 'exchange_withdrawal',
                 'gas_provider', 'shared_deposit', 'pass_through')),
  counterparty TEXT    NOT NULL,
  direction    TEXT    NOT NULL CHECK (direction IN ('in', 'out', 'both')),
  exchange     TEXT,
  amount       REAL,
  first_seen   INTEGER NOT NULL,
  PRIMARY KEY (address, confidence, last_seen, type, counterparty, direction)
) WITHOUT ROWID;

-- coordinated_timing connections, from trades rather than transfers, so they are rebuilt on
-- their own schedule (every refresh) without rewriting the transfer connections.
CREATE TABLE timing_connections (
  address      TEXT    NOT NULL,
  confidence   REAL    NOT NULL,
  last_seen    INTEGER NOT NULL,
  counterparty TEXT    NOT NULL,
  markets      INTEGER NOT NULL,
  first_seen   INTEGER NOT NULL,
  PRIMARY KEY (address, confidence, last_seen, counterparty)
) WITHOUT ROWID;

-- What the transfer-derived tables were built from, so a refresh with nothing new skips them.
CREATE TABLE funding_state (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

-- Investigations keep their id for their identity (type, subject, category) for ever: a
-- dismissal survives every refresh, and a case that stops qualifying (active = 0) comes back
-- under the same id. The subject of a cluster case is its funder, which does not change when
-- members join (the cluster id may).
CREATE TABLE investigations (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  type          TEXT    NOT NULL CHECK (type IN ('wallet', 'cluster')),
  subject       TEXT    NOT NULL,
  category      TEXT    NOT NULL,
  status        TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'dismissed')),
  active        INTEGER NOT NULL, -- meets the candidate rule at the latest refresh
  cluster_id    TEXT,
  title         TEXT    NOT NULL,
  summary       TEXT    NOT NULL,
  wallet_count  INTEGER NOT NULL,
  resolved_bets INTEGER NOT NULL,
  wins          INTEGER NOT NULL,
  win_rate      REAL    NOT NULL,
  pnl           REAL    NOT NULL,
  base_rate     REAL    NOT NULL,
  edge          REAL    NOT NULL,
  n             INTEGER NOT NULL, -- the test's bets: resolved bets with an entry price
  test_wins     INTEGER NOT NULL,
  expected_wins REAL    NOT NULL,
  p_value       REAL    NOT NULL,
  method        TEXT    NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  UNIQUE (type, subject, category)
);
-- The API's list: open, active cases by p-value, then newest first.
CREATE INDEX investigations_listed ON investigations (p_value, created_at DESC, id DESC)
  WHERE status = 'open' AND active = 1;

CREATE TABLE investigation_wallets (
  investigation_id INTEGER NOT NULL REFERENCES investigations (id),
  rank             INTEGER NOT NULL,
  address          TEXT    NOT NULL,
  role             TEXT    NOT NULL,
  resolved_bets    INTEGER NOT NULL,
  wins             INTEGER NOT NULL,
  win_rate         REAL,
  total_pnl        REAL,
  PRIMARY KEY (investigation_id, rank)
) WITHOUT ROWID;
-- "Is this wallet in an open investigation?" (wallet type, insider signal).
CREATE INDEX investigation_wallets_by_address ON investigation_wallets (address, investigation_id);

CREATE TABLE investigation_evidence (
  investigation_id INTEGER NOT NULL REFERENCES investigations (id),
  rank             INTEGER NOT NULL,
  market_id        INTEGER NOT NULL REFERENCES markets (id),
  side             TEXT    NOT NULL,
  entry_price      REAL,
  usd_value        REAL    NOT NULL,
  won              INTEGER NOT NULL,
  entry_ts         INTEGER NOT NULL,
  PRIMARY KEY (investigation_id, rank)
) WITHOUT ROWID;
