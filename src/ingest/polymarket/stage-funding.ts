import { type Hex, pad } from "viem";
import type { Statement } from "../../db/open";
import type { NewTransfer } from "../ingest";
import { fail, type RoundContext } from "./context";
import { COLLATERAL_TOKENS, TRANSFER_TOPIC } from "./contracts";
import { decodeTransfer, transferToRow } from "./fills";
import { blockTimes, need, startAt } from "./stage-chain";

/**
 * Funding that precedes trading (chain only). When a wallet is first seen (its first stored
 * fill), its inbound USDC.e, native USDC and pUSD transfers are read back to
 * `fundingHorizonMs` (default 30 days) before that fill: funding often predates a first trade
 * by days, and the transfers stage only reads forward from where ingest started. Wallets are
 * taken in batches of `transferAddressBatch` per round, each scanned once (wallet_funding_scans).
 */

/** Wallets scanned per round at most: the rest wait for the next round. */
const WALLETS_PER_ROUND = 200;

export async function readFunding(ctx: RoundContext): Promise<void> {
  const { options, summary, ingest } = ctx;
  const rpc = ctx.rpc!;
  const pending = ctx.db.reader.prepare(
    `SELECT wallet, min(ts) AS first FROM trades
     WHERE wallet NOT IN (SELECT wallet FROM wallet_funding_scans)
     GROUP BY wallet ORDER BY first LIMIT ?`,
  ) as Statement<[number], { wallet: string; first: number }>;
  const markScanned = ctx.db.writer.prepare(
    "INSERT OR IGNORE INTO wallet_funding_scans (wallet, first_fill_at, scanned_at) VALUES (?, ?, ?)",
  ) as Statement<[string, number, number]>;
  const wallets = pending.all(WALLETS_PER_ROUND);
  if (wallets.length === 0) return;
  const head = summary.head_block ?? need(await rpc.blockNumber(options.signal));
  const safe = head - options.confirmations;

  for (
    let i = 0;
    i < wallets.length && !options.signal?.aborted;
    i += options.transferAddressBatch
  ) {
    const batch = wallets.slice(i, i + options.transferAddressBatch);
    const earliest = Math.min(...batch.map((w) => w.first)) - options.fundingHorizonMs;
    const latest = Math.max(...batch.map((w) => w.first));
    const from = (await startAt(rpc, earliest, safe, ctx)).start_block;
    const to = Math.min(safe, (await startAt(rpc, latest, safe, ctx)).start_block);
    const topics = batch.map((w) => pad(w.wallet as Hex, { size: 32 }));
    let at = from;
    let chunk = options.transferChunk;
    while (at <= to && !options.signal?.aborted) {
      const end = Math.min(at + chunk - 1, to);
      const logs = await rpc.getLogs(
        {
          fromBlock: at,
          toBlock: end,
          address: COLLATERAL_TOKENS,
          topics: [TRANSFER_TOPIC, null, topics],
        },
        options.signal,
      );
      if (!logs.ok) {
        if (logs.tooLarge && chunk > 1) {
          chunk = Math.max(1, Math.floor(chunk / 2));
          continue;
        }
        fail(`funding transfers in blocks ${at}-${end}: ${logs.reason}`);
      }
      const live = logs.value.filter((l) => !l.removed);
      const times = await blockTimes(rpc, live, ctx);
      const rows: NewTransfer[] = [];
      const bad: { raw: unknown; reason: string }[] = [];
      for (const log of live) {
        const transfer = decodeTransfer(log);
        if (!transfer.ok) {
          bad.push({ raw: log, reason: transfer.reason });
          continue;
        }
        const row = transferToRow(transfer.value, times.get(transfer.value.block)!);
        if (row) rows.push(row);
      }
      const inserted = ctx.transaction(() => {
        for (const b of bad) ctx.quarantine("funding", `blocks ${at}-${end}`, b.reason, b.raw);
        return ingest.insertTransfers(rows).length;
      });
      summary.transfers_new += inserted;
      ctx.pageDone("funding", i / options.transferAddressBatch + 1, live.length, inserted);
      at = end + 1;
      chunk = Math.min(options.transferChunk, chunk * 2);
    }
    if (options.signal?.aborted) return;
    const now = ctx.clock.now();
    ctx.transaction(() => {
      for (const w of batch) markScanned.run(w.wallet, w.first, now);
    });
  }
}
