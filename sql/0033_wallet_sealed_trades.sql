-- The trades a wallet made in compacted markets, for its timing buckets (docs/methodology.md,
-- "Wallet timing": its last 500 trades in resolved markets). Fill retention moves a compacted
-- market's fills into the Parquet history (sql/0031), out of the refresh's reach; without these
-- rows, the buckets lost every trade sealed away.
--
-- `trades`: the wallet's most recent 500 such trades in (ts, id) order, each two float64s
-- (little-endian): ts, and fill id × 16 + (timing bucket + 1) × 2 + 1 if it won (the bucket is
-- fixed once the market has resolved). No more are needed: a trade beyond a wallet's 500 most
-- recent sealed ones cannot be among its 500 most recent overall. At most 8,000 bytes a wallet.
CREATE TABLE wallet_sealed_trades (
  wallet_id INTEGER PRIMARY KEY REFERENCES wallet_ids (id),
  trades    BLOB    NOT NULL
);
