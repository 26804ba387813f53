-- Timing buckets are stored only for wallets with a resolved trade (docs/architecture.md, "The
-- read models' layout"). Most wallets have none, and their row held the same 230 characters of
-- empty buckets: after a 1M-fill import into the medium world, wallet_timing was 81 MB, 40 bytes
-- per fill. Readers answer the empty buckets for a wallet without a row, as they did before the
-- first refresh. This literal is the empty answer (a test checks; sql/0024 stores counts since).
DELETE FROM wallet_timing
 WHERE buckets = '[{"label":"<1h","count":0,"win_rate":null},{"label":"1-6h","count":0,"win_rate":null},{"label":"6-24h","count":0,"win_rate":null},{"label":"1-7d","count":0,"win_rate":null},{"label":"7-30d","count":0,"win_rate":null},{"label":">30d","count":0,"win_rate":null}]';
