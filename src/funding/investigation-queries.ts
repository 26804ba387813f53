/**
 * Investigations as the API and the CLI see them. The API serves open cases that qualify at the
 * latest refresh, by p-value then newest first; the CLI sees every case and sets the status.
 */

import type * as v from "valibot";
import type { Db } from "../db/open";
import type { Outcome } from "../domain";
import { fail, ok, type Result } from "../result";
import type { InvestigationSchema, InvestigationSummarySchema } from "../schemas/funding";

export const INVESTIGATION_STATUSES = ["open", "dismissed"] as const;
export type InvestigationStatus = (typeof INVESTIGATION_STATUSES)[number];
export const INVESTIGATION_TYPES = ["wallet", "cluster"] as const;
export type InvestigationType = (typeof INVESTIGATION_TYPES)[number];

export type InvestigationSummary = v.InferOutput<typeof InvestigationSummarySchema>;

export type Investigation = v.InferOutput<typeof InvestigationSchema>;

/** What the CLI lists: the summary plus what only an admin needs. */
export interface InvestigationListing extends InvestigationSummary {
  subject: string;
  /** Meets the candidate rule at the latest refresh (only those are served). */
  qualifies: boolean;
}

/** Keyset position: the (p_value, created_at, id) of the last row of the previous page. */
export type InvestigationKey = [pValue: number, createdAt: number, id: number];

export interface InvestigationFilter {
  category?: string;
  type?: InvestigationType;
}

interface Row {
  id: number;
  type: InvestigationType;
  subject: string;
  category: string;
  title: string;
  status: InvestigationStatus;
  active: number;
  summary: string;
  wallet_count: number;
  resolved_bets: number;
  win_rate: number;
  base_rate: number;
  edge: number;
  n: number;
  test_wins: number;
  expected_wins: number;
  p_value: number;
  method: string;
  created_at: number;
  updated_at: number;
}

function toSummary(row: Row): InvestigationSummary {
  return {
    id: row.id,
    type: row.type,
    category: row.category,
    title: row.title,
    status: row.status,
    wallet_count: row.wallet_count,
    resolved_bets: row.resolved_bets,
    win_rate: row.win_rate,
    edge: row.edge,
    p_value: row.p_value,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

interface EvidenceRow {
  market_slug: string;
  market_title: string | null;
  side: Outcome;
  entry_price: number | null;
  usd_value: number;
  outcome: Outcome | null;
  won: number;
  entry_ts: number;
  resolved_at: number | null;
}

const HOUR_MS = 3_600_000;
const SERVED = "status = 'open' AND active = 1";

export type InvestigationQueries = ReturnType<typeof createInvestigationQueries>;

export function createInvestigationQueries(db: Db) {
  const r = db.reader;
  // p-value ascending, then newest first; the keyset continues strictly after the last row.
  const page = r.prepare<Record<string, unknown>, Row>(
    `SELECT * FROM investigations
      WHERE ${SERVED}
        AND (@category IS NULL OR category = @category)
        AND (@type IS NULL OR type = @type)
        AND (@keyP IS NULL OR p_value > @keyP
             OR (p_value = @keyP AND (created_at < @keyCreated
                 OR (created_at = @keyCreated AND id < @keyId))))
      ORDER BY p_value, created_at DESC, id DESC
      LIMIT +@limit`,
  );
  const byId = r.prepare<[number], Row>("SELECT * FROM investigations WHERE id = ?");
  const walletsOf = r.prepare<[number], Investigation["wallets"][number]>(
    `SELECT address, role, resolved_bets, wins, win_rate, total_pnl FROM investigation_wallets
      WHERE investigation_id = +? ORDER BY rank`,
  );
  const evidenceOf = r.prepare<[number], EvidenceRow>(
    `SELECT m.slug AS market_slug, m.title AS market_title, e.side, e.entry_price, e.usd_value,
            m.resolved_outcome AS outcome, e.won, e.entry_ts, m.resolved_at
       FROM investigation_evidence e JOIN markets m ON m.id = e.market_id
      WHERE e.investigation_id = +? ORDER BY e.rank`,
  );
  const listAll = r.prepare<{ status: string | null }, Row>(
    `SELECT * FROM investigations WHERE (@status IS NULL OR status = @status)
      ORDER BY active DESC, p_value, created_at DESC, id DESC LIMIT 1000`,
  );
  const setStatus = db.writer.prepare<[InvestigationStatus, number, number]>(
    "UPDATE investigations SET status = ?, updated_at = ? WHERE id = ?",
  );
  const openFor = r.prepare<[string], { n: number }>(
    `SELECT COUNT(*) AS n FROM investigation_wallets w JOIN investigations i ON i.id = w.investigation_id
      WHERE w.address = ? AND i.status = 'open' AND i.active = 1`,
  );

  function detail(row: Row): Investigation {
    return {
      ...toSummary(row),
      summary: row.summary,
      wallets: walletsOf.all(row.id),
      evidence: evidenceOf.all(row.id).map((e) => ({
        market_slug: e.market_slug,
        market_title: e.market_title,
        side: e.side,
        entry_price: e.entry_price,
        usd_value: e.usd_value,
        outcome: e.outcome,
        won: e.won === 1,
        hours_before_resolution:
          e.resolved_at === null
            ? null
            : Math.round(((e.resolved_at - e.entry_ts) / HOUR_MS) * 10) / 10,
      })),
      stats: {
        n: row.n,
        wins: row.test_wins,
        expected_wins: row.expected_wins,
        win_rate: row.win_rate,
        base_rate: row.base_rate,
        edge: row.edge,
        p_value: row.p_value,
        method: row.method,
      },
    };
  }

  return {
    /** Open, qualifying cases; one row more than `limit` comes back as `more`. */
    page(
      filter: InvestigationFilter,
      limit: number,
      after?: InvestigationKey,
    ): { rows: InvestigationSummary[]; more: boolean; keys: InvestigationKey[] } {
      const rows = page.all({
        category: filter.category ?? null,
        type: filter.type ?? null,
        keyP: after?.[0] ?? null,
        keyCreated: after?.[1] ?? null,
        keyId: after?.[2] ?? null,
        limit: limit + 1,
      });
      const shown = rows.slice(0, limit);
      return {
        rows: shown.map(toSummary),
        more: rows.length > limit,
        keys: shown.map((row) => [row.p_value, row.created_at, row.id]),
      };
    },

    /** A case the API may serve: open and qualifying; anything else is not found. */
    served(id: number): Investigation | undefined {
      const row = byId.get(id);
      return row && row.status === "open" && row.active === 1 ? detail(row) : undefined;
    },

    /** Any case, whatever its status (the CLI's `show`). */
    any(id: number): (Investigation & { subject: string; qualifies: boolean }) | undefined {
      const row = byId.get(id);
      return row
        ? { ...detail(row), subject: row.subject, qualifies: row.active === 1 }
        : undefined;
    },

    /** Every case with the status (all when null), the qualifying ones first; at most 1,000. */
    list(status: InvestigationStatus | null): InvestigationListing[] {
      return listAll
        .all({ status })
        .map((row) => ({ ...toSummary(row), subject: row.subject, qualifies: row.active === 1 }));
    },

    /** Sets an admin's verdict; the refresh never changes it. */
    setStatus(id: number, status: InvestigationStatus, now: number): Result<InvestigationSummary> {
      const row = byId.get(id);
      if (!row) return fail(`no investigation with id ${id}`);
      if (row.status === status) return fail(`investigation ${id} is already ${status}`);
      setStatus.run(status, now, id);
      const updated = byId.get(id) as Row;
      return ok(toSummary(updated));
    },

    /** Whether the wallet is one of the wallets of an open, qualifying investigation. */
    inOpenInvestigation(address: string): boolean {
      return (openFor.get(address.toLowerCase())?.n ?? 0) > 0;
    },
  };
}
