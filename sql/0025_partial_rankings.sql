-- Rankings that hold only the rows their queries can return (docs/architecture.md, "Rankings
-- sized to their queries"). Each index entry a refresh moves dirties a page; on the large world an
-- incremental refresh after 10,000 trades rewrote 47k category rows of the wallets it touched, and
-- moved each in every ranking whose column changed.
--
-- * The category leaderboards (src/read/leaderboards.ts) rank wallets with at least min_bets
--   resolved bets in the category, and min_bets is at least 1: a row without resolved bets is never
--   ranked. On the large world 333k of the 1.1M category rows have none (a third of the rows a
--   refresh touches: categories where the wallet holds only open bets, whose PnL moves with every
--   price). win_rate's ranking already leaves them out (no win rate without resolved bets).
-- * wallet_stats_by_volume serves only the whale leaderboard, whose wallets have a total volume
--   over 50,000 USD (the literal must match the query's, as sql/0006's whale rankings do).
DROP INDEX wallet_category_by_pnl;
DROP INDEX wallet_category_by_volume;
DROP INDEX wallet_category_by_counter_consensus;
CREATE INDEX wallet_category_by_pnl
  ON wallet_category_stats (category, pnl DESC, address_prefix, resolved_bets)
  WHERE resolved_bets > 0;
CREATE INDEX wallet_category_by_volume
  ON wallet_category_stats (category, volume DESC, address_prefix, resolved_bets)
  WHERE resolved_bets > 0;
CREATE INDEX wallet_category_by_counter_consensus
  ON wallet_category_stats (category, counter_consensus_wins DESC, address_prefix, resolved_bets)
  WHERE resolved_bets > 0;

DROP INDEX wallet_stats_by_volume;
CREATE INDEX wallet_stats_by_volume ON wallet_stats (total_volume DESC, address)
  WHERE total_volume > 50000;
