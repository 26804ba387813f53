/**
 * How the console writes figures. Pure (no DOM), so the browser tests format the API's numbers
 * with the same rules and compare them with what the page shows.
 */
const usdFormat = new Intl.NumberFormat("en-US", {
  style: "currency",
  currency: "USD",
  maximumFractionDigits: 0,
});
const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

export const format = {
  usd: (n: number | null | undefined) => (n == null ? "–" : usdFormat.format(n)),
  number: (n: number | null | undefined) => (n == null ? "–" : numberFormat.format(n)),
  percent: (n: number | null | undefined) => (n == null ? "–" : `${(n * 100).toFixed(1)}%`),
  price: (n: number | null | undefined) => (n == null ? "–" : n.toFixed(3)),
  pValue: (n: number | null | undefined) => (n == null ? "–" : n.toExponential(1)),
  time: (iso: string | null | undefined) =>
    iso == null ? "–" : `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`,
  address: (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`,
};
