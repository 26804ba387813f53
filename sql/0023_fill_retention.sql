-- Fill retention (SMARTMONEY_FILL_RETENTION; docs/architecture.md, "Fill retention"). A market
-- resolved before the retention window is compacted: its fills are deleted, except those a
-- signal names, and its rows in the read models derived from them (wallet_bets, market_stats,
-- market_hours, market_price_history) are frozen as they were.
--
-- * markets.compacted_at: when the market was compacted; NULL for every market that keeps all
--   its fills. Fills for a compacted market are refused by every ingest path. The refresh leaves
--   a compacted market's rows alone, and the full rebuild copies them aside and back instead of
--   recomputing them (src/refresh/full.ts): those rows are now the only record of its fills, so
--   a migration that reshapes these tables must copy them, never drop them for a refresh to
--   rebuild.
-- * Fills a signal names (signals.trade_id) stay in `fills`, so the signal's trade stays in trade
--   pages, but no read model counts them any more: their bet is frozen.
-- * compaction_runs: each compaction that compacted markets, for `smartmoney status`.

ALTER TABLE markets ADD COLUMN compacted_at INTEGER;

CREATE TABLE compaction_runs (
  id          INTEGER PRIMARY KEY,
  started_at  INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  summary     TEXT    NOT NULL -- JSON: the window, markets compacted, fills deleted and kept
);
