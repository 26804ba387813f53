import { describe, expect, it } from "vitest";
import { type PriceHour, storedHistoryMoved } from "../../src/refresh/price-history";

// The stored price history is every served point but the newest (src/refresh/price-history.ts):
// the refresh renders it again only when that part moves.

const hour = (h: number, trades = 1): PriceHour => ({
  hour: h,
  close_yes: 0.5,
  volume: 10 * trades,
  trade_count: trades,
});
const stored = (...hours: PriceHour[]) => new Map(hours.map((h) => [h.hour, h]));

describe("storedHistoryMoved", () => {
  it("is false when nothing changed or only the newest hour did", () => {
    expect(storedHistoryMoved(stored(), [])).toBe(false);
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(1), hour(2)])).toBe(false);
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(1), hour(2, 3)])).toBe(false);
  });

  it("is true when a new hour begins, an older one changes, or one goes", () => {
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(1), hour(2), hour(3)])).toBe(true);
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(1, 2), hour(2)])).toBe(true);
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(2)])).toBe(true);
    // As many hours as before, but another newest one: the old newest joined the stored part.
    expect(storedHistoryMoved(stored(hour(1), hour(2)), [hour(1), hour(3)])).toBe(true);
  });
});
