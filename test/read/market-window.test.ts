import { describe, expect, it } from "vitest";
import { marketWindowSql } from "../../src/read/market-rankings";
import { seededTestAppPerFile } from "../helpers/app";

// The market rankings (trending, movers, moving) sum each market's hours over a window
// (src/read/markets.ts, marketWindowSql). Its rows must be what the hours say, read one by one,
// whole or in chunks of market ids: the markets it probes are those whose last trade is not
// before the window, so a window that ends before the latest trades is checked too.

const NOW = Date.parse("2026-11-01T00:00:00.000Z");
const HOUR = 3_600_000;
const world = seededTestAppPerFile({ now: NOW });

interface HourRow {
  market_id: number;
  category: string | null;
  hour: number;
  volume: number;
  whale_volume: number;
  trade_count: number;
  net_flow: number;
  open_yes: number | null;
  close_yes: number | null;
}

/** The window's figures per market from the hour rows, summed in hour order. */
function reference(from: number, to: number, category?: string) {
  const hours = world.t.db.reader
    .prepare(
      `SELECT h.*, m.category FROM market_hours h JOIN markets m ON m.id = h.market_id
        ORDER BY h.market_id, h.hour`,
    )
    .all() as HourRow[];
  const out = new Map<number, Record<string, unknown> & { hours: HourRow[] }>();
  for (const h of hours) {
    if (h.hour < from || h.hour > to || (category !== undefined && h.category !== category))
      continue;
    const m = out.get(h.market_id) ?? { hours: [] };
    m.hours.push(h);
    out.set(h.market_id, m);
  }
  return [...out].map(([id, { hours: inWindow }]) => {
    const before = hours.filter((h) => h.market_id === id && h.hour < from).at(-1);
    return {
      market_id: id,
      volume: inWindow.reduce((sum, h) => sum + h.volume, 0),
      whale_volume: inWindow.reduce((sum, h) => sum + h.whale_volume, 0),
      trade_count: inWindow.reduce((sum, h) => sum + h.trade_count, 0),
      net_flow: inWindow.reduce((sum, h) => sum + h.net_flow, 0),
      open_yes: inWindow[0]!.open_yes,
      close_yes: inWindow.at(-1)!.close_yes,
      close_before: before === undefined ? null : before.close_yes,
    };
  });
}

describe("a window of market hours", () => {
  const current = Math.floor(NOW / HOUR);
  const windows = [0, 1, 5, 23, 24, 100, 168, 2_000];

  it("gives every market that traded in it, as its hours say, whole or in chunks", () => {
    const statements = {
      all: world.t.db.reader.prepare(marketWindowSql().all),
      category: world.t.db.reader.prepare(marketWindowSql().category),
    };
    const category = (
      world.t.db.reader
        .prepare("SELECT category FROM markets WHERE category IS NOT NULL LIMIT 1")
        .get() as { category: string }
    ).category;
    let marketsSeen = 0;
    for (const endsAgo of [0, 48]) {
      const to = current - endsAgo;
      for (const hours of windows) {
        const from = to - hours;
        for (const filter of [undefined, category]) {
          const statement = filter === undefined ? statements.all : statements.category;
          const args = {
            from,
            to,
            first: 0,
            end: Number.MAX_SAFE_INTEGER,
            ...(filter === undefined ? {} : { category: filter }),
          };
          const what = `${hours} h ending ${endsAgo} h ago ${filter ?? ""}`;
          const whole = statement.all(args) as Record<string, number | null>[];
          // Read in chunks of market ids, as a ranking reads a window, the rows are the same.
          const chunked = [];
          for (let first = 0; first < 400; first += 17) {
            chunked.push(...statement.all({ ...args, first, end: first + 17 }));
          }
          expect(chunked, `${what} in chunks`).toEqual(whole);
          const expected = reference(from, to, filter);
          expect(
            whole.map((m) => m.market_id),
            what,
          ).toEqual(expected.map((m) => m.market_id));
          whole.forEach((m, i) => {
            const e = expected[i]!;
            // Sums agree up to rounding (SQLite's sum is compensated); the rest exactly.
            for (const column of ["volume", "whale_volume", "net_flow"] as const) {
              expect(m[column]).toBeCloseTo(e[column], 6);
            }
            expect([m.trade_count, m.open_yes, m.close_yes, m.close_before]).toEqual([
              e.trade_count,
              e.open_yes,
              e.close_yes,
              e.close_before,
            ]);
          });
          marketsSeen += whole.length;
        }
      }
    }
    // The windows are not all empty: the small world's last days trade.
    expect(marketsSeen).toBeGreaterThan(100);
  });
});
