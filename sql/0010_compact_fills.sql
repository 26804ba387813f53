-- A compact fill store (docs/architecture.md, "The fill store"). Measured with dbstat on the
-- fixture worlds, the text layout stored each fill about three times over (a table and two
-- covering indexes), each copy repeating a 42-character wallet and a 66-character hash.
--
-- * wallet_ids: each address once; fills and their indexes carry a small integer.
-- * fills.tx_hash: the 32 bytes of the hash, not 66 characters of hex. Most transactions carry
--   one or two fills, so a separate transaction table (a row and a unique index per hash) would
--   cost more than it saves. Uniqueness of (tx_hash, log_index) is kept by the ingest path (one
--   lookup per fill through fills_by_tx, whose key is the hash's first 8 bytes).
-- * kind: bit 0 is the outcome (0 YES, 1 NO), bit 1 the side (0 BUY, 1 SELL); 0 and 1 take no
--   bytes in a record.
-- * price, size, usd_value: an INTEGER is the value in millionths (exact for every value with at
--   most six decimals, which is what the fixtures and Polymarket's micro-unit amounts give), a
--   REAL is the value itself (anything else). The columns have no declared type, so SQLite
--   keeps whichever was written; the trades view decodes both.
-- * Indexes hold keys only (plus the rowid): no covering index copies the table.
--
-- The `trades` view keeps the old shape (hex strings, YES/NO, BUY/SELL, decimal values) for
-- every reader; the bulk path (src/ingest/ingest.ts) writes fills directly.

CREATE TABLE wallet_ids (
  id      INTEGER PRIMARY KEY,
  address TEXT    NOT NULL UNIQUE CHECK (length(address) = 42)
);

CREATE TABLE fills (
  id        INTEGER PRIMARY KEY,
  tx_hash   BLOB    NOT NULL CHECK (length(tx_hash) = 32),
  log_index INTEGER NOT NULL CHECK (log_index >= 0),
  wallet_id INTEGER NOT NULL REFERENCES wallet_ids (id),
  market_id INTEGER NOT NULL REFERENCES markets (id),
  kind      INTEGER NOT NULL CHECK (kind BETWEEN 0 AND 3),
  price     NOT NULL,
  size      NOT NULL,
  usd_value NOT NULL,
  ts        INTEGER NOT NULL,
  CHECK (CASE typeof(price) WHEN 'integer' THEN price BETWEEN 0 AND 1000000
         ELSE price >= 0 AND price <= 1 END),
  CHECK (size > 0),
  CHECK (usd_value >= 0)
);

-- @step copy_fills

CREATE INDEX fills_by_tx ON fills (substr(tx_hash, 1, 8), log_index);
CREATE INDEX fills_by_wallet ON fills (wallet_id, market_id, ts);
CREATE INDEX fills_by_market ON fills (market_id, ts);
CREATE INDEX fills_by_time ON fills (ts);

-- signals.trade_id referred to the old table: rebuilt to refer to fills (the migration runs
-- with foreign keys off and checks them all before it commits). Copied out and back rather than
-- renamed: ALTER TABLE RENAME opens the connection's temporary database, which then refuses the
-- temp_store changes the full refresh makes inside its transaction.
CREATE TABLE signals_copy AS SELECT * FROM signals;
DROP TABLE signals;
DROP TABLE trades;
CREATE TABLE signals (
  id          INTEGER PRIMARY KEY,
  type        TEXT    NOT NULL CHECK (type IN ('whale', 'insider')),
  wallet      TEXT    NOT NULL,               -- lowercase address
  -- The wallet's type when the signal fired: the payload describes the moment, not today.
  wallet_type TEXT,
  market_id   INTEGER NOT NULL REFERENCES markets (id),
  trade_id    INTEGER NOT NULL REFERENCES fills (id),
  score       REAL    NOT NULL,
  bet_value   REAL    NOT NULL,               -- USD
  side        TEXT    NOT NULL CHECK (side IN ('BUY', 'SELL')),
  outcome     TEXT    NOT NULL,
  price       REAL    NOT NULL,
  explanation TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  UNIQUE (type, trade_id)
);
INSERT INTO signals SELECT id, type, wallet, wallet_type, market_id, trade_id, score, bet_value,
  side, outcome, price, explanation, created_at FROM signals_copy ORDER BY id;
DROP TABLE signals_copy;
CREATE INDEX signals_by_wallet ON signals (wallet, created_at);
CREATE INDEX signals_by_created ON signals (created_at);
CREATE INDEX signals_insider_by_wallet ON signals (wallet, score) WHERE type = 'insider';

CREATE VIEW trades (id, tx_hash, log_index, wallet, market_id, outcome, side, price, size,
  usd_value, ts) AS
SELECT f.id, '0x' || lower(hex(f.tx_hash)), f.log_index, w.address, f.market_id,
  CASE WHEN f.kind & 1 THEN 'NO' ELSE 'YES' END,
  CASE WHEN f.kind & 2 THEN 'SELL' ELSE 'BUY' END,
  CASE typeof(f.price) WHEN 'integer' THEN f.price / 1e6 ELSE f.price END,
  CASE typeof(f.size) WHEN 'integer' THEN f.size / 1e6 ELSE f.size END,
  CASE typeof(f.usd_value) WHEN 'integer' THEN f.usd_value / 1e6 ELSE f.usd_value END,
  f.ts
FROM fills f JOIN wallet_ids w ON w.id = f.wallet_id;

-- Rows written to the view in the old shape (tools, tests) are encoded as the ingest path
-- encodes them, and a fill already stored is skipped, as the old unique key did.
CREATE TRIGGER trades_insert INSTEAD OF INSERT ON trades
BEGIN
  SELECT RAISE(ABORT, 'trade: tx_hash must be 0x and 64 lowercase hex digits')
   WHERE length(NEW.tx_hash) <> 66 OR NEW.tx_hash GLOB '*[^0-9a-fx]*';
  SELECT RAISE(ABORT, 'trade: outcome must be YES or NO, side BUY or SELL')
   WHERE NEW.outcome NOT IN ('YES', 'NO') OR NEW.side NOT IN ('BUY', 'SELL');
  SELECT RAISE(ABORT, 'trade: price must be in [0, 1], size above 0, usd_value at least 0')
   WHERE NOT (NEW.price >= 0 AND NEW.price <= 1 AND NEW.size > 0 AND NEW.usd_value >= 0);
  INSERT INTO wallet_ids (address) VALUES (NEW.wallet) ON CONFLICT DO NOTHING;
  INSERT INTO fills (id, tx_hash, log_index, wallet_id, market_id, kind, price, size, usd_value, ts)
  SELECT NEW.id, unhex(substr(NEW.tx_hash, 3)), NEW.log_index,
    (SELECT id FROM wallet_ids WHERE address = NEW.wallet), NEW.market_id,
    (NEW.outcome = 'NO') + 2 * (NEW.side = 'SELL'),
    CASE WHEN abs(NEW.price) < 9e9 AND CAST(round(NEW.price * 1e6) AS INTEGER) / 1e6 = NEW.price
      THEN CAST(round(NEW.price * 1e6) AS INTEGER) ELSE NEW.price END,
    CASE WHEN abs(NEW.size) < 9e9 AND CAST(round(NEW.size * 1e6) AS INTEGER) / 1e6 = NEW.size
      THEN CAST(round(NEW.size * 1e6) AS INTEGER) ELSE NEW.size END,
    CASE WHEN abs(NEW.usd_value) < 9e9
       AND CAST(round(NEW.usd_value * 1e6) AS INTEGER) / 1e6 = NEW.usd_value
      THEN CAST(round(NEW.usd_value * 1e6) AS INTEGER) ELSE NEW.usd_value END,
    NEW.ts
  WHERE NOT EXISTS (SELECT 1 FROM fills
    WHERE substr(tx_hash, 1, 8) = substr(unhex(substr(NEW.tx_hash, 3)), 1, 8)
      AND log_index = NEW.log_index AND tx_hash = unhex(substr(NEW.tx_hash, 3)));
END;
