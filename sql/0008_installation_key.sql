-- The installation key's check value (src/installation/key.ts). The key itself never enters the
-- database; its id does, so that a process given another key (a restored copy without its
-- key file, a different SMARTMONEY_SECRET_KEY) is refused at start instead of minting a fresh
-- key that cannot decrypt the stored webhook secrets.

CREATE TABLE installation_key (
  singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
  key_id      TEXT    NOT NULL,  -- first 16 hex of HMAC-SHA256(key, fixed label)
  recorded_at INTEGER NOT NULL
);
