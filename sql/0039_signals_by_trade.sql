-- signals.trade_id references fills (id), so every deleted fill (a compaction seals a batch of
-- markets' fills, then deletes them: docs/operations.md, "Fill retention and the fill history")
-- makes SQLite look for a signal naming it. UNIQUE (type, trade_id) starts with the type, so the
-- look-up read every signal: on the large world (2,725 signals) deleting a batch's 187k fills
-- took 20 s, 8.9 s of it the deletes themselves, and it grew with every signal recorded.
CREATE INDEX signals_by_trade ON signals (trade_id);
