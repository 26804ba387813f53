-- Wallet search by volume (docs/architecture.md, "Wallet search by volume"). The name index of
-- sql/0006 numbered wallets by volume at each full rebuild and appended the wallets an
-- incremental refresh added, so a search read the first 200 matches in that order and ranked
-- them by volume: 200 wallets read, looked up and sorted for a page of 10 once a name fragment
-- is common (most are on the large world). Ids now carry the wallet's volume group, so matches
-- arrive largest first at all times and a search stops after a page of them. This renumbers an
-- existing index as a full refresh does (src/refresh/wallet-search.ts, refreshWalletSearch); the
-- group expression is VOLUME_GROUP_SQL there, word for word (a test checks).
DELETE FROM wallet_search;
DELETE FROM wallet_search_rows;
INSERT INTO wallet_search_rows (id, address)
SELECT (2147483647 - grp) * 4194304
         + row_number() OVER (PARTITION BY grp ORDER BY total_volume DESC, address) - 1,
       address
  FROM (SELECT address, total_volume,
               min(CAST(log2(1 + max(total_volume, 0)) * 33554432 AS INTEGER), 2147483647) AS grp
          FROM wallet_stats WHERE platform_name IS NOT NULL);
INSERT INTO wallet_search (rowid, platform_name)
SELECT r.id, s.platform_name FROM wallet_search_rows r JOIN wallet_stats s ON s.address = r.address;
