-- Webhooks: endpoints, the signals they are told about, follows and lists (the dashboard
-- channel), and the delivery outbox with its attempt log. Times are epoch milliseconds.

CREATE TABLE webhook_endpoints (
  id               TEXT    PRIMARY KEY,       -- wh_ + 24 hex
  account_id       INTEGER NOT NULL REFERENCES accounts (id),
  -- 'dashboard': alert.followed_wallet for followed wallets; 'api': signal.* matching the filters
  channel          TEXT    NOT NULL CHECK (channel IN ('dashboard', 'api')),
  callback_url     TEXT    NOT NULL,
  min_score        INTEGER CHECK (min_score IS NULL OR min_score BETWEEN 0 AND 100),
  score_type       TEXT    CHECK (score_type IS NULL OR score_type IN ('whale', 'insider')),
  category         TEXT,
  secret_encrypted TEXT    NOT NULL,          -- never the plaintext (src/webhooks/secrets.ts)
  created_at       INTEGER NOT NULL,
  -- Soft delete: past deliveries keep pointing at the endpoint they went to.
  deleted_at       INTEGER
);
CREATE INDEX webhook_endpoints_by_account
  ON webhook_endpoints (account_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX webhook_endpoints_by_channel
  ON webhook_endpoints (channel) WHERE deleted_at IS NULL;

-- One row per fired signal; its id is the integer alert id of the payloads.
CREATE TABLE signals (
  id          INTEGER PRIMARY KEY,
  type        TEXT    NOT NULL CHECK (type IN ('whale', 'insider')),
  wallet      TEXT    NOT NULL,               -- lowercase address
  -- The wallet's type when the signal fired: the payload describes the moment, not today.
  wallet_type TEXT,
  market_id   INTEGER NOT NULL REFERENCES markets (id),
  trade_id    INTEGER NOT NULL REFERENCES trades (id),
  score       REAL    NOT NULL,
  bet_value   REAL    NOT NULL,               -- USD
  side        TEXT    NOT NULL CHECK (side IN ('BUY', 'SELL')),
  outcome     TEXT    NOT NULL,
  price       REAL    NOT NULL,
  explanation TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  UNIQUE (type, trade_id)
);
CREATE INDEX signals_by_wallet ON signals (wallet, created_at);
CREATE INDEX signals_by_created ON signals (created_at);

-- Wallets an account follows directly.
CREATE TABLE follows (
  account_id INTEGER NOT NULL REFERENCES accounts (id),
  wallet     TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, wallet)
) WITHOUT ROWID;
CREATE INDEX follows_by_wallet ON follows (wallet);

-- Named lists of wallets. A list without an owner is the operator's, shared by all.
CREATE TABLE lists (
  id         INTEGER PRIMARY KEY,
  slug       TEXT    NOT NULL UNIQUE,
  account_id INTEGER REFERENCES accounts (id),
  created_at INTEGER NOT NULL
);

CREATE TABLE list_members (
  list_id  INTEGER NOT NULL REFERENCES lists (id),
  wallet   TEXT    NOT NULL,
  added_at INTEGER NOT NULL,
  PRIMARY KEY (list_id, wallet)
) WITHOUT ROWID;
CREATE INDEX list_members_by_wallet ON list_members (wallet);

-- Lists an account follows: every member counts as followed, via "list:<slug>".
CREATE TABLE list_follows (
  account_id INTEGER NOT NULL REFERENCES accounts (id),
  list_id    INTEGER NOT NULL REFERENCES lists (id),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, list_id)
) WITHOUT ROWID;
CREATE INDEX list_follows_by_list ON list_follows (list_id);

-- The outbox: written in the same transaction as its signal, drained by the delivery job.
CREATE TABLE deliveries (
  id               TEXT    PRIMARY KEY,       -- dlv_ + 24 hex; X-Service-Delivery-Id
  signal_id        INTEGER NOT NULL REFERENCES signals (id),
  endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id),
  event            TEXT    NOT NULL
                   CHECK (event IN ('alert.followed_wallet', 'signal.whale', 'signal.insider')),
  followed_via     TEXT,                      -- 'wallet' or 'list:<slug>' on alert.followed_wallet
  status           TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
  attempts         INTEGER NOT NULL DEFAULT 0, -- in the current round (a replay starts a new one)
  next_attempt_at  INTEGER,                   -- set while pending
  -- A claimed delivery is leased; a process that dies mid-attempt loses it when the lease ends.
  lease_until      INTEGER,
  last_status_code INTEGER,
  last_error       TEXT,
  created_at       INTEGER NOT NULL,
  delivered_at     INTEGER,
  -- At most one delivery of a signal to an endpoint, whoever enqueues it and how often.
  UNIQUE (signal_id, endpoint_id)
);
-- The drainer's claim: due pending deliveries, per endpoint so one endpoint cannot hog it.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_pending_by_endpoint
  ON deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_leased_by_endpoint
  ON deliveries (endpoint_id, lease_until) WHERE status = 'pending';
-- Recent deliveries of an endpoint, newest first, optionally by status.
CREATE INDEX deliveries_by_endpoint ON deliveries (endpoint_id, created_at, id);
CREATE INDEX deliveries_by_endpoint_status ON deliveries (endpoint_id, status, created_at, id);
-- The operator's views: newest first overall and by status (replay --dead).
CREATE INDEX deliveries_by_created ON deliveries (created_at, id);
CREATE INDEX deliveries_by_status ON deliveries (status, created_at, id);

CREATE TABLE delivery_attempts (
  id               INTEGER PRIMARY KEY,
  delivery_id      TEXT    NOT NULL REFERENCES deliveries (id),
  attempt          INTEGER NOT NULL,          -- 1.. within its round
  started_at       INTEGER NOT NULL,
  duration_ms      INTEGER NOT NULL,
  status_code      INTEGER,
  error            TEXT,
  response_excerpt TEXT
);
CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts (delivery_id, id);
