/**
 * Opens, updates and retires investigations from the latest wallet read models. An
 * investigation's identity is (type, subject, category): its id, creation time and status
 * (open or dismissed, set by an admin) survive every refresh. A case that stops qualifying is
 * kept but marked inactive, so it leaves the API and comes back under the same id if it
 * qualifies again.
 */

import type { Connection } from "../db/open";
import {
  type CaseStats,
  type CaseSubject,
  caseSummary,
  caseTitle,
  evidenceBets,
  MIN_RESOLVED_BETS,
  passesScreen,
  qualify,
  type ResolvedBet,
} from "./candidates";

/** Wallets listed per investigation (wallet_count gives the full number). */
export const INVESTIGATION_WALLETS_LIMIT = 100;

interface Candidate extends CaseSubject {
  category: string;
  stats: CaseStats;
  bets: ResolvedBet[];
  wallets: string[];
}

interface BetRow {
  wallet: string;
  marketId: number;
  side: string;
  entryPrice: number | null;
  usdValue: number;
  won: number;
  entryTs: number;
}

export interface InvestigationCounts {
  candidates: number;
  opened: number;
  open: number;
}

export function refreshInvestigations(conn: Connection, now: number): InvestigationCounts {
  const betsOf = conn.prepare<[string, string], BetRow>(
    `SELECT w.address AS wallet, b.market_id AS marketId, b.side, b.entry_price AS entryPrice,
            b.buy_usd AS usdValue, b.won, b.entry_ts AS entryTs
       FROM wallet_ids w CROSS JOIN wallet_bets b ON b.wallet_id = w.id
      WHERE w.address = +? AND b.category = +? AND b.resolved = 1 AND b.won IS NOT NULL
      ORDER BY b.market_id`,
  );
  const resolvedBets = (wallets: readonly string[], category: string): ResolvedBet[] =>
    wallets.flatMap((w) => betsOf.all(w, category).map((b) => ({ ...b, won: b.won === 1 })));

  const candidates: Candidate[] = [];
  for (const row of walletScreen(conn)) {
    const bets = resolvedBets([row.subject], row.category);
    const stats = qualify({ category: row.category, pnl: row.pnl, baseRate: row.baseRate, bets });
    if (stats) {
      const subject = {
        type: "wallet" as const,
        subject: row.subject,
        clusterId: null,
        walletCount: 1,
      };
      candidates.push({ ...subject, category: row.category, stats, bets, wallets: [row.subject] });
    }
  }
  const membersWithBets = conn.prepare<[string, string], { wallet: string }>(
    `SELECT f.wallet FROM wallet_funding f
      CROSS JOIN wallet_ids w ON w.address = f.wallet
      CROSS JOIN wallet_category_stats s ON s.wallet_id = w.id AND s.category = ?
      WHERE f.funder = ? AND s.resolved_bets > 0`,
  );
  for (const row of clusterScreen(conn)) {
    const wallets = membersWithBets.all(row.category, row.subject).map((m) => m.wallet);
    const bets = resolvedBets(wallets, row.category);
    const stats = qualify({ category: row.category, pnl: row.pnl, baseRate: row.baseRate, bets });
    if (stats) {
      const subject = {
        type: "cluster" as const,
        subject: row.subject,
        clusterId: row.clusterId,
        walletCount: wallets.length,
      };
      candidates.push({ ...subject, category: row.category, stats, bets, wallets });
    }
  }
  return store(conn, candidates, now);
}

interface ScreenRow {
  subject: string;
  clusterId: string | null;
  category: string;
  resolvedBets: number;
  wins: number;
  pnl: number;
  baseRate: number;
}

/**
 * Wallets alone, one category at a time: the category's wallets with at least
 * MIN_RESOLVED_BETS resolved bets, a range of wallet_category_by_resolved (a few dozen of a
 * category's wallets), in the order that index gave before it was keyed on wallet ids
 * (sql/0024): resolved bets, then address. Candidates are stored in this order, and a new
 * investigation's id follows it.
 */
function walletScreen(conn: Connection): ScreenRow[] {
  const categories = conn
    .prepare<[], { category: string; baseRate: number }>(
      "SELECT category, base_rate AS baseRate FROM category_base_rates WHERE base_rate IS NOT NULL",
    )
    .all();
  const inCategory = conn.prepare<[string, number], Omit<ScreenRow, "baseRate">>(
    `SELECT w.address AS subject, NULL AS clusterId, c.category, c.resolved_bets AS resolvedBets,
            c.wins, c.pnl
       FROM wallet_category_stats c INDEXED BY wallet_category_by_resolved
       CROSS JOIN wallet_ids w ON w.id = c.wallet_id
      WHERE c.category = +? AND c.pnl > 0 AND c.resolved_bets >= +?
      ORDER BY c.resolved_bets, w.address`,
  );
  return categories.flatMap(({ category, baseRate }) =>
    inCategory
      .all(category, MIN_RESOLVED_BETS)
      .map((row) => ({ ...row, baseRate }))
      .filter((r) => passesScreen(r.resolvedBets, r.wins, r.pnl, r.baseRate)),
  );
}

/**
 * Clusters taken together: their members' category records summed. CROSS JOIN keeps SQLite
 * walking from the clusters to their members instead of scanning every wallet's categories.
 */
function clusterScreen(conn: Connection): ScreenRow[] {
  const rows = conn
    .prepare<[number], ScreenRow>(
      `SELECT c.funder AS subject, c.id AS clusterId, s.category,
              SUM(s.resolved_bets) AS resolvedBets, SUM(s.wins) AS wins, SUM(s.pnl) AS pnl,
              r.base_rate AS baseRate
         FROM sybil_clusters c
         CROSS JOIN wallet_funding f ON f.funder = c.funder
         CROSS JOIN wallet_ids w ON w.address = f.wallet
         CROSS JOIN wallet_category_stats s ON s.wallet_id = w.id
         JOIN category_base_rates r ON r.category = s.category
        WHERE r.base_rate IS NOT NULL
        GROUP BY c.funder, s.category
       HAVING SUM(s.resolved_bets) >= ? AND SUM(s.pnl) > 0`,
    )
    .all(MIN_RESOLVED_BETS);
  return rows.filter((r) => passesScreen(r.resolvedBets, r.wins, r.pnl, r.baseRate));
}

interface ExistingRow {
  id: number;
  active: number;
  resolved_bets: number;
  wins: number;
  wallet_count: number;
  p_value: number;
}

function store(conn: Connection, candidates: Candidate[], now: number): InvestigationCounts {
  const find = conn.prepare<[string, string, string], ExistingRow>(
    `SELECT id, active, resolved_bets, wins, wallet_count, p_value FROM investigations
      WHERE type = ? AND subject = ? AND category = ?`,
  );
  const insert = conn.prepare(
    `INSERT INTO investigations (type, subject, category, status, active, cluster_id, title, summary,
       wallet_count, resolved_bets, wins, win_rate, pnl, base_rate, edge, n, test_wins,
       expected_wins, p_value, method, created_at, updated_at)
     VALUES (@type, @subject, @category, 'open', 1, @clusterId, @title, @summary, @walletCount,
       @resolvedBets, @wins, @winRate, @pnl, @baseRate, @edge, @n, @testWins, @expectedWins,
       @pValue, @method, @now, @now)`,
  );
  const update = conn.prepare(
    `UPDATE investigations SET active = 1, cluster_id = @clusterId, title = @title,
       summary = @summary, wallet_count = @walletCount, resolved_bets = @resolvedBets, wins = @wins,
       win_rate = @winRate, pnl = @pnl, base_rate = @baseRate, edge = @edge, n = @n,
       test_wins = @testWins, expected_wins = @expectedWins, p_value = @pValue, method = @method,
       updated_at = CASE WHEN @changed THEN @now ELSE updated_at END
     WHERE id = @id`,
  );
  const details = detailStatements(conn);
  const seen = new Set<number>();
  let opened = 0;
  for (const c of candidates) {
    const values = {
      type: c.type,
      subject: c.subject,
      category: c.category,
      clusterId: c.clusterId,
      title: caseTitle(c, c.category, c.stats),
      summary: caseSummary(c, c.category, c.stats),
      walletCount: c.walletCount,
      ...c.stats,
      now,
    };
    const existing = find.get(c.type, c.subject, c.category);
    let id: number;
    if (existing) {
      id = existing.id;
      const changed =
        existing.active === 0 ||
        existing.resolved_bets !== c.stats.resolvedBets ||
        existing.wins !== c.stats.wins ||
        existing.wallet_count !== c.walletCount ||
        existing.p_value !== c.stats.pValue;
      update.run({ ...values, id, changed: changed ? 1 : 0 });
    } else {
      id = Number(insert.run(values).lastInsertRowid);
      opened++;
    }
    seen.add(id);
    storeDetails(details, id, c);
  }
  const active = conn.prepare("SELECT id FROM investigations WHERE active = 1").all() as {
    id: number;
  }[];
  const retire = conn.prepare("UPDATE investigations SET active = 0, updated_at = ? WHERE id = ?");
  for (const { id } of active) if (!seen.has(id)) retire.run(now, id);
  const open = conn
    .prepare("SELECT COUNT(*) AS n FROM investigations WHERE status = 'open' AND active = 1")
    .get() as { n: number };
  return { candidates: candidates.length, opened, open: open.n };
}

type DetailStatements = ReturnType<typeof detailStatements>;

function detailStatements(conn: Connection) {
  return {
    clearWallets: conn.prepare("DELETE FROM investigation_wallets WHERE investigation_id = ?"),
    clearEvidence: conn.prepare("DELETE FROM investigation_evidence WHERE investigation_id = ?"),
    pnlOf: conn.prepare<[string], { total_pnl: number | null }>(
      "SELECT total_pnl FROM wallet_stats WHERE address = ?",
    ),
    insertWallet: conn.prepare(
      `INSERT INTO investigation_wallets
         (investigation_id, rank, address, role, resolved_bets, wins, win_rate, total_pnl)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertBet: conn.prepare(
      `INSERT INTO investigation_evidence
         (investigation_id, rank, market_id, side, entry_price, usd_value, won, entry_ts)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

/** The case's wallets (most resolved bets first) and its evidence bets, rewritten. */
function storeDetails(st: DetailStatements, id: number, c: Candidate): void {
  st.clearWallets.run(id);
  st.clearEvidence.run(id);
  const perWallet = new Map<string, { resolved: number; wins: number }>();
  for (const w of c.wallets) perWallet.set(w, { resolved: 0, wins: 0 });
  for (const b of c.bets) {
    const tally = perWallet.get(b.wallet);
    if (!tally) continue;
    tally.resolved++;
    if (b.won) tally.wins++;
  }
  const ranked = [...perWallet.entries()]
    .sort(([a, x], [b, y]) => y.resolved - x.resolved || y.wins - x.wins || (a < b ? -1 : 1))
    .slice(0, INVESTIGATION_WALLETS_LIMIT);
  const role = c.type === "wallet" ? "subject" : "member";
  ranked.forEach(([address, t], rank) => {
    const winRate = t.resolved > 0 ? t.wins / t.resolved : null;
    const pnl = st.pnlOf.get(address)?.total_pnl ?? null;
    st.insertWallet.run(id, rank, address, role, t.resolved, t.wins, winRate, pnl);
  });
  evidenceBets(c.bets).forEach((b, rank) => {
    st.insertBet.run(
      id,
      rank,
      b.marketId,
      b.side,
      b.entryPrice,
      b.usdValue,
      b.won ? 1 : 0,
      b.entryTs,
    );
  });
}
