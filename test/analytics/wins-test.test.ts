import { describe, expect, it } from "vitest";
import { logUpperNormalTail, upperNormalTail } from "../../src/analytics/normal";
import {
  EXACT_MAX_BETS,
  exactLogUpperTail,
  saddlepointLogUpperTail,
  walletWinsTest,
  winsVersusPrices,
  winsZScore,
} from "../../src/analytics/wins-test";
import { seeded } from "./fills";

/** The independent reference: sum the probability of every one of the 2^n win/loss patterns. */
function bruteForceUpperTail(prices: readonly number[], k: number): number {
  const n = prices.length;
  let total = 0;
  for (let mask = 0; mask < 1 << n; mask++) {
    let wins = 0;
    let probability = 1;
    for (let i = 0; i < n; i++) {
      const won = (mask >> i) & 1;
      wins += won;
      probability *= won ? prices[i]! : 1 - prices[i]!;
    }
    if (wins >= k) total += probability;
  }
  return total;
}

const relativeError = (approx: number, exact: number) => Math.abs(approx - exact) / exact;

describe("wins-versus-prices test, exact", () => {
  it("matches hand-computed figures", () => {
    expect(winsVersusPrices([0.5, 0.5], 2).pValue).toBeCloseTo(0.25, 14);
    expect(winsVersusPrices([0.5, 0.5], 1).pValue).toBeCloseTo(0.75, 14);
    expect(winsVersusPrices([0.5, 0.5], 0).pValue).toBe(1);
    const t = winsVersusPrices([0.2, 0.6], 1);
    expect(t.pValue).toBeCloseTo(1 - 0.8 * 0.4, 14); // 0.68
    expect(t.expectedWins).toBeCloseTo(0.8, 14);
    expect(t.variance).toBeCloseTo(0.16 + 0.24, 14);
    expect(t.z).toBeCloseTo((1 - 0.8) / Math.sqrt(0.4), 12);
    expect(t.method).toBe("exact");
  });

  it("agrees with brute-force enumeration of all 2^n outcomes for n ≤ 16", () => {
    const random = seeded(7);
    for (const n of [1, 2, 5, 9, 13, 16]) {
      const prices = Array.from({ length: n }, () => 0.01 + 0.98 * random());
      for (let k = 0; k <= n; k++) {
        const reference = bruteForceUpperTail(prices, k);
        const exact = Math.exp(exactLogUpperTail(prices, k));
        expect(relativeError(exact, reference)).toBeLessThan(1e-11);
        expect(relativeError(winsVersusPrices(prices, k).pValue, reference)).toBeLessThan(1e-11);
      }
    }
  });

  it("stays exact for long shots that all won (p far below 1e-300)", () => {
    // 400 bets at 0.05, all won: P = 0.05^400; 399 won: P = 0.05^400 × (1 + 400 × 19).
    const prices = Array<number>(400).fill(0.05);
    const all = winsVersusPrices(prices, 400);
    expect(all.log10PValue).toBeCloseTo(400 * Math.log10(0.05), 9); // −520.41
    expect(all.pValue).toBeGreaterThan(0);
    expect(all.pValue).toBe(Number.MIN_VALUE);
    const allButOne = winsVersusPrices(prices, 399);
    expect(allButOne.log10PValue).toBeCloseTo(400 * Math.log10(0.05) + Math.log10(7601), 9);
    // Mixed prices: Σ log10 p for a clean sweep.
    const mixed = Array.from({ length: 300 }, (_, i) => [0.02, 0.05, 0.1][i % 3]!);
    const sweep = mixed.reduce((sum, p) => sum + Math.log10(p), 0);
    expect(winsVersusPrices(mixed, 300).log10PValue).toBeCloseTo(sweep, 9);
  });

  it("returns a p-value inside [0, 1] and a log10 that never is −Infinity", () => {
    const random = seeded(11);
    for (let trial = 0; trial < 40; trial++) {
      const n = 1 + Math.floor(random() * 200);
      const prices = Array.from({ length: n }, () => random());
      const wins = Math.floor(random() * (n + 1));
      const t = winsVersusPrices(prices, wins);
      expect(t.pValue).toBeGreaterThan(0);
      expect(t.pValue).toBeLessThanOrEqual(1);
      expect(Number.isFinite(t.log10PValue)).toBe(true);
    }
  });

  it("clamps prices of 0 and 1 so every outcome stays possible", () => {
    const t = winsVersusPrices([0, 1, 0], 3);
    expect(t.log10PValue).toBeCloseTo(2 * Math.log10(0.001) + Math.log10(0.999), 9);
    expect(t.expectedWins).toBeCloseTo(0.001 + 0.999 + 0.001, 12);
  });

  it("has nothing to test without bets and refuses impossible win counts", () => {
    expect(winsVersusPrices([], 0)).toMatchObject({ n: 0, pValue: 1, log10PValue: 0, z: null });
    expect(() => winsVersusPrices([0.5], 2)).toThrow(RangeError);
    expect(() => winsVersusPrices([0.5], 0.5)).toThrow(RangeError);
  });
});

describe("wins-versus-prices test, large n", () => {
  // Two betting styles: prices spread over the range, and mostly long shots (strongly skewed).
  const styles = [
    { name: "spread", from: 0.05, to: 0.95 },
    { name: "long shots", from: 0.02, to: 0.3 },
  ];
  for (const n of [3000, 6000]) {
    for (const style of styles) {
      it(`saddlepoint agrees with the exact DP within 1e-4 relative (n = ${n}, ${style.name})`, () => {
        const random = seeded(n + style.from * 1000);
        const prices = Array.from(
          { length: n },
          () => style.from + (style.to - style.from) * random(),
        );
        const mean = prices.reduce((a, b) => a + b, 0);
        const sd = Math.sqrt(prices.reduce((a, p) => a + p * (1 - p), 0));
        for (const z of [-2, 0, 0.3, 1, 2, 3, 5, 8, 20]) {
          const k = Math.ceil(mean + z * sd);
          const exact = exactLogUpperTail(prices, k);
          const approx = saddlepointLogUpperTail(prices, k);
          expect(Math.abs(Math.expm1(approx - exact))).toBeLessThan(1e-4);
        }
      });
    }
  }

  it("switches from exact to saddlepoint above EXACT_MAX_BETS", () => {
    const prices = (n: number) =>
      Array.from({ length: n }, (_, i) => 0.2 + (0.6 * ((i * 7) % 10)) / 10);
    expect(winsVersusPrices(prices(EXACT_MAX_BETS), 2600).method).toBe("exact");
    expect(winsVersusPrices(prices(EXACT_MAX_BETS + 1), 2600).method).toBe("saddlepoint");
  });
});

describe("z-score and the wallet form", () => {
  it("is (wins − Σp) / sqrt(Σp(1 − p))", () => {
    // Σp = 0.2 + 0.5 + 0.5 + 0.8 = 2.0; Σp(1 − p) = 0.16 + 0.25 + 0.25 + 0.16 = 0.82.
    expect(winsZScore([0.2, 0.5, 0.5, 0.8], 4)).toBeCloseTo(2 / Math.sqrt(0.82), 12);
    expect(winsZScore([0.2, 0.5, 0.5, 0.8], 1)).toBeCloseTo(-1 / Math.sqrt(0.82), 12);
    expect(winsZScore([], 0)).toBeNull();
    expect(winsVersusPrices([0.2, 0.5, 0.5, 0.8], 4).z).toBeCloseTo(2 / Math.sqrt(0.82), 12);
  });

  it("uses only resolved bets with an entry price", () => {
    const t = walletWinsTest([
      { won: true, entryPrice: 0.2 },
      { won: false, entryPrice: 0.6 },
      { won: null, entryPrice: 0.3 },
      { won: true, entryPrice: null },
    ]);
    expect(t).toMatchObject({ n: 2, wins: 1 });
    expect(t.pValue).toBeCloseTo(0.68, 14);
  });
});

describe("normal tail", () => {
  it("matches textbook values, relative to 1e-12", () => {
    const table: [number, number][] = [
      [-2, 0.977249868051821],
      [0, 0.5],
      [1, 0.158655253931457],
      [2, 0.0227501319481792],
      [3, 0.00134989803163009],
      [5, 2.86651571879194e-7],
      [10, 7.61985302416053e-24],
    ];
    for (const [z, p] of table) expect(relativeError(upperNormalTail(z), p)).toBeLessThan(1e-12);
  });

  it("keeps its logarithm where the value itself underflows", () => {
    expect(upperNormalTail(40)).toBe(0);
    // ln Φc(z) = −z²/2 − ln(z√(2π)) + ln(1 − 1/z² + 3/z⁴ − 15/z⁶ + …)
    const z = 40;
    const asymptotic =
      (-z * z) / 2 -
      Math.log(z * Math.sqrt(2 * Math.PI)) +
      Math.log(1 - 1 / z ** 2 + 3 / z ** 4 - 15 / z ** 6);
    expect(logUpperNormalTail(z)).toBeCloseTo(asymptotic, 9);
    expect(logUpperNormalTail(2)).toBeCloseTo(Math.log(0.0227501319481792), 12);
  });
});
