import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHistoryReader, HISTORY_UNREADABLE, type SealedFill } from "../../src/history/reader";
import { type WalletIds, writePartition } from "../../src/history/store";

/**
 * The history reader keeps each connection's statements prepared by their text, at most a few
 * dozen: pages past that many shapes evict older statements, which must keep answering right
 * when they come back, and a failed read must not spoil the next one.
 */

const WALLETS = ["a", "b", "c"].map((digit) => `0x${digit.repeat(40)}`);
const fills: SealedFill[] = Array.from({ length: 90 }, (_, i) => ({
  id: i + 1,
  tx_hash: `0x${(i + 1).toString(16).padStart(64, "0")}`,
  log_index: i % 3,
  wallet: WALLETS[i % 3]!,
  market_id: 1 + (i % 2),
  outcome: i % 5 === 0 ? "NO" : "YES",
  side: i % 4 === 0 ? "SELL" : "BUY",
  price: 0.25,
  size: 4 + i,
  usd_value: 1 + i / 4,
  // Some fills share a time: the id breaks the tie.
  ts: 1_700_000_000_000 + Math.floor(i / 2) * 60_000,
}));
const wallets: WalletIds = {
  idOf: (address) => (WALLETS.includes(address) ? WALLETS.indexOf(address) + 1 : undefined),
  addressOf: (id) => WALLETS[id - 1],
};
const newestFirst = (a: SealedFill, b: SealedFill) => b.ts - a.ts || b.id - a.id;

let dir: string;
let file: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "smartmoney-reader-"));
  const rows = [...fills]
    .sort((a, b) => a.market_id - b.market_id || a.ts - b.ts || a.id - b.id)
    .map((f) => [
      f.id,
      Buffer.from(f.tx_hash.slice(2), "hex"),
      f.log_index,
      // Sealed files hold the wallet's id in wallet_ids (WALLET_ID_FILE).
      WALLETS.indexOf(f.wallet) + 1,
      f.market_id,
      f.outcome,
      f.side,
      f.price,
      f.size,
      f.usd_value,
      f.ts,
    ]);
  const written = await writePartition(dir, () => rows, { memoryMb: 64, now: Date.now() });
  file = written!.file;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the history reader", () => {
  it("answers every page right across more statement shapes than it keeps prepared", async () => {
    const reader = createHistoryReader({ dir, memoryMb: 64, wallets });
    try {
      // Twice round 60 shapes (limits by wallet or not): each evicted before it comes back.
      for (let round = 0; round < 2; round++) {
        for (let limit = 1; limit <= 30; limit++) {
          expect(await reader.page([file], {}, limit)).toEqual(
            [...fills].sort(newestFirst).slice(0, limit),
          );
          const wallet = WALLETS[limit % 3]!;
          const before: [number, number] = [fills[60]!.ts, fills[60]!.id];
          expect(await reader.page([file], { wallet, before }, limit)).toEqual(
            fills
              .filter(
                (f) =>
                  f.wallet === wallet &&
                  (f.ts < before[0] || (f.ts === before[0] && f.id < before[1])),
              )
              .sort(newestFirst)
              .slice(0, limit),
          );
        }
      }
      const hash = fills[7]!.tx_hash;
      expect(await reader.byTxHash([{ file, blocks: null }], hash)).toEqual(fills[7]);
      // With its blocks named (sql/0038), only those rows are read: the file's one block finds
      // it, a block past its rows does not.
      expect(await reader.byTxHash([{ file, blocks: [0] }], hash)).toEqual(fills[7]);
      expect(await reader.byTxHash([{ file, blocks: [1, 2] }], hash)).toBeUndefined();
    } finally {
      reader.close();
    }
  });

  it("says a listed file cannot be read, and reads the next page as usual", async () => {
    const reader = createHistoryReader({ dir, memoryMb: 64, wallets });
    try {
      expect(await reader.page([file], { marketId: 2 }, 5)).toHaveLength(5);
      await expect(reader.page(["fills-missing.parquet"], { marketId: 2 }, 5)).rejects.toThrow(
        HISTORY_UNREADABLE,
      );
      expect(await reader.page([file], { marketId: 2 }, 5)).toEqual(
        fills
          .filter((f) => f.market_id === 2)
          .sort(newestFirst)
          .slice(0, 5),
      );
    } finally {
      reader.close();
    }
  });
});
