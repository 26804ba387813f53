/**
 * Case replay (docs/methodology.md, "Backtest"): for each market a user names with the time its
 * news broke, the first whale or insider signal the product fired on it before the news, the
 * wallets its signals named, and the lead time. Answers "would it have caught the insider?".
 */

import * as v from "valibot";
import type { Connection } from "../db/open";
import { timestamp } from "../ingest/lines";
import { findMarket, type HistorySignal, signalsBefore } from "./history";

/** One line of a cases file (JSONL): the market by slug or condition id, and when the news broke. */
export const CaseLine = v.strictObject(
  {
    market: v.pipe(
      v.string((i) => `market must be a slug or condition id (got ${i.received})`),
      v.trim(),
      v.nonEmpty("market must not be empty"),
    ),
    news_at: timestamp,
  },
  "must be an object with market and news_at only",
);
export type CaseLine = v.InferOutput<typeof CaseLine>;

export interface CaseReplay {
  market: string;
  news_at: string;
  /** Null when the market is not in the database. */
  slug: string | null;
  found: boolean;
  first_signal: {
    type: HistorySignal["type"];
    wallet: string;
    score: number;
    side: string;
    outcome: string;
    price: number;
    usd: number;
    at: string;
  } | null;
  /** Every wallet a signal on the market named before the news, in the order they first fired. */
  wallets: string[];
  signals_before_news: number;
  /** Hours from the first signal to the news; null without a signal. */
  lead_time_hours: number | null;
}

/** Parses a cases file: one line per case, blank lines ignored; errors name the line. */
export function parseCases(text: string, source: string): CaseLine[] {
  const cases: CaseLine[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i += 1) {
    const line = (lines[i] as string).trim();
    if (line === "") continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new Error(`${source}:${i + 1}: not JSON`);
    }
    const parsed = v.safeParse(CaseLine, json);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      const path = issue.path?.map((p) => String(p.key)).join(".");
      throw new Error(`${source}:${i + 1}: ${path ? `${path} ` : ""}${issue.message}`);
    }
    cases.push(parsed.output);
  }
  if (cases.length === 0) throw new Error(`${source}: no cases`);
  return cases;
}

export function replayCases(db: Connection, cases: readonly CaseLine[]): CaseReplay[] {
  return cases.map((c) => {
    const market = findMarket(db, c.market);
    const base = { market: c.market, news_at: new Date(c.news_at).toISOString() };
    if (market === undefined) {
      return {
        ...base,
        slug: null,
        found: false,
        first_signal: null,
        wallets: [],
        signals_before_news: 0,
        lead_time_hours: null,
      };
    }
    const signals = signalsBefore(db, market.id, c.news_at);
    const first = signals[0];
    return {
      ...base,
      slug: market.slug,
      found: true,
      first_signal:
        first === undefined
          ? null
          : {
              type: first.type,
              wallet: first.wallet,
              score: first.score,
              side: first.side,
              outcome: first.outcome,
              price: first.price,
              usd: first.usd,
              at: new Date(first.ts).toISOString(),
            },
      wallets: [...new Set(signals.map((s) => s.wallet))],
      signals_before_news: signals.length,
      lead_time_hours: first === undefined ? null : (c.news_at - first.ts) / 3_600_000,
    };
  });
}
