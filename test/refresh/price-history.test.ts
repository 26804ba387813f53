import { describe, expect, it } from "vitest";
import {
  cutOf,
  isoHour,
  PRICE_HISTORY_POINTS,
  type PriceHour,
  servedHistory,
  storedHistory,
  storedHoursMoved,
  TAIL_HOURS,
} from "../../src/refresh/price-history";

// The stored price history is every point before the market's cut (src/refresh/price-history.ts):
// answers read the hours after it, and the refresh renders the stored part again only when a
// stored hour changes or the cut moves on.

const hour = (h: number, trades = 1): PriceHour => ({
  hour: h,
  close_yes: (h % 97) / 100,
  volume: 10 * trades + h / 8,
  trade_count: trades,
});
const stored = (...hours: PriceHour[]) => new Map(hours.map((h) => [h.hour, h]));
/** Hours 1..n, every other clock hour: trading hours need not be consecutive. */
const hoursUpTo = (n: number) => Array.from({ length: n }, (_, i) => hour(2 * (i + 1)));
const served = (hours: readonly PriceHour[]) =>
  hours.slice(-PRICE_HISTORY_POINTS).map((h) => ({
    hour: isoHour(h.hour),
    price: h.close_yes,
    volume: h.volume,
    trade_count: h.trade_count,
  }));

describe("stored and served price history", () => {
  it("serves the last 720 trading hours from the stored part and the hours after the cut", () => {
    for (const n of [1, 2, 23, 24, 25, 48, 49, 700, 719, 720, 721, 743, 744, 745, 1000]) {
      const hours = hoursUpTo(n);
      const row = storedHistory(hours, n, isoHour);
      expect(row.point_count).toBe(Math.min(cutOf(n), PRICE_HISTORY_POINTS - 1));
      expect(row.through_hour).toBe(cutOf(n) === 0 ? null : hours[cutOf(n) - 1]!.hour);
      // Hours added since the row was rendered, as long as the cut has not moved on.
      for (let added = 0; n - cutOf(n) + added <= TAIL_HOURS; added += 1) {
        const now = hoursUpTo(n + added);
        const tail = now.filter((h) => row.through_hour === null || h.hour > row.through_hour);
        expect(JSON.parse(servedHistory(row, tail)), `${n} + ${added}`).toEqual(served(now));
      }
    }
  });

  it("renders a window from the newest hours alone, given how many the market has", () => {
    const hours = hoursUpTo(2000);
    const newest = hours.slice(-(2000 - cutOf(2000) + PRICE_HISTORY_POINTS - 1));
    expect(storedHistory(newest, 2000, isoHour)).toEqual(storedHistory(hours, 2000, isoHour));
  });

  it("serves a market without a row from its hours, and one that never traded as []", () => {
    expect(servedHistory(undefined, [])).toBe("[]");
    expect(JSON.parse(servedHistory(undefined, hoursUpTo(3)))).toEqual(served(hoursUpTo(3)));
  });
});

describe("storedHoursMoved", () => {
  it("is false when nothing up to the newest stored hour changed", () => {
    expect(storedHoursMoved(stored(), [], 5)).toBe(false);
    expect(storedHoursMoved(stored(hour(1), hour(2)), [hour(1), hour(2)], 2)).toBe(false);
    // Hours after it are read by each answer.
    expect(storedHoursMoved(stored(hour(1), hour(2)), [hour(1), hour(2, 3), hour(4)], 1)).toBe(
      false,
    );
  });

  it("is true when a stored hour changes, goes or joins", () => {
    expect(storedHoursMoved(stored(hour(1), hour(2)), [hour(1, 2), hour(2)], 2)).toBe(true);
    expect(storedHoursMoved(stored(hour(1), hour(2)), [hour(2)], 2)).toBe(true);
    expect(storedHoursMoved(stored(hour(1), hour(3)), [hour(1), hour(2), hour(3)], 3)).toBe(true);
  });
});
