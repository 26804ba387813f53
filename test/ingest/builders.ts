import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** Interchange lines for tests, valid unless a test overrides a field. */

export const hex = (seed: number, digits: number) =>
  `0x${(
    seed
      .toString(16)
      .padStart(8, "0")
      .repeat(Math.ceil(digits / 8) + 1)
  ).slice(0, digits)}`;

export const address = (n: number) => hex(0xa0000000 + n, 40);
export const txHash = (n: number) => hex(0x70000000 + n, 64);
export const conditionId = (n: number) => hex(0xc0000000 + n, 64);

type Fields = Record<string, unknown>;

export const market = (n: number, over: Fields = {}) => ({
  type: "market",
  slug: `market-${n}`,
  title: `Will thing ${n} happen?`,
  category: "politics",
  condition_id: conditionId(n),
  end_date: "2026-12-31T00:00:00Z",
  created_at: 1_760_000_000_000,
  ...over,
});

export const trade = (n: number, over: Fields = {}) => ({
  type: "trade",
  tx_hash: txHash(n),
  log_index: 0,
  wallet: address(n % 7),
  condition_id: conditionId(1),
  outcome: "YES",
  side: "BUY",
  price: 0.25,
  size: 100,
  timestamp: 1_780_000_000_000 + n * 1000,
  ...over,
});

export const transfer = (n: number, over: Fields = {}) => ({
  type: "transfer",
  tx_hash: txHash(100_000 + n),
  log_index: 1,
  from: address(900),
  to: address(n % 7),
  token: "USDC",
  amount: 500,
  timestamp: 1_770_000_000_000 + n * 1000,
  ...over,
});

export const wallet = (n: number, over: Fields = {}) => ({
  type: "wallet",
  address: address(n),
  platform_name: `trader-${n}`,
  platform_pnl: 1234.5,
  platform_pnl_as_of: "2026-10-01T00:00:00Z",
  ...over,
});

export const label = (n: number, over: Fields = {}) => ({
  type: "label",
  address: address(900 + n),
  kind: "exchange",
  name: `Exchange ${n}`,
  ...over,
});

export const resolution = (n: number, over: Fields = {}) => ({
  type: "resolution",
  condition_id: conditionId(n),
  outcome: "YES",
  resolved_at: "2026-12-31T12:00:00Z",
  ...over,
});

/** Writes lines (objects are JSON-encoded, strings written as given) and returns the path. */
export function writeJsonl(dir: string, name: string, lines: (Fields | string)[]): string {
  const path = join(dir, name);
  const text = lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n");
  writeFileSync(path, lines.length > 0 ? `${text}\n` : "");
  return path;
}
