-- Accounts, API keys and the rate-limit ledger.
-- Times are Unix epoch milliseconds (INTEGER) throughout the schema.

CREATE TABLE accounts (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL UNIQUE,
  tier          TEXT    NOT NULL CHECK (tier IN ('free', 'terminal', 'terminal_pro')),
  -- An operator's override of the tier's limits (accounts set-limits); NULL = the tier's own.
  hourly_limit  INTEGER CHECK (hourly_limit IS NULL OR hourly_limit >= 0),
  monthly_limit INTEGER CHECK (monthly_limit IS NULL OR monthly_limit >= 0),
  created_at    INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id          TEXT    PRIMARY KEY,             -- key_ + 16 hex: safe to show and log
  account_id  INTEGER NOT NULL REFERENCES accounts (id),
  kind        TEXT    NOT NULL CHECK (kind IN ('api', 'mcp')),
  key_hash    BLOB    NOT NULL UNIQUE,         -- SHA-256 of the key; the key itself is never stored
  hint        TEXT    NOT NULL,                -- prefix and last 4 characters, for key lists
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);
CREATE INDEX api_keys_by_account ON api_keys (account_id);

-- Calls admitted per account and minute (minute = floor(epoch ms / 60000)). The rolling windows
-- are sums over this ledger; the server keeps running sums in memory and flushes here.
CREATE TABLE rate_minutes (
  account_id INTEGER NOT NULL REFERENCES accounts (id),
  minute     INTEGER NOT NULL,
  calls      INTEGER NOT NULL,
  PRIMARY KEY (account_id, minute)
) WITHOUT ROWID;
