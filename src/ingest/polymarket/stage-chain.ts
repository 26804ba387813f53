import { type Hex, pad } from "viem";
import type { Statement } from "../../db/open";
import type { NewTrade, NewTransfer } from "../ingest";
import { fail, type RoundContext } from "./context";
import {
  COLLATERAL_TOKENS,
  EXCHANGES,
  ORDER_FILLED_V1_TOPIC,
  ORDER_FILLED_V2_TOPIC,
  TRANSFER_TOPIC,
} from "./contracts";
import { syntheticLogIndex } from "./data-api";
import {
  decodeFill,
  decodeTransfer,
  type Fill,
  fillToTrade,
  isTakerSummary,
  type RpcLog,
  transferToRow,
} from "./fills";
import type { MarketBook } from "./markets";
import type { LogFilter, RpcClient } from "./rpc";
import { type BlockState, loadState, STATE_KEYS, saveState } from "./state";

/**
 * On-chain fills (OrderFilled of both exchange eras) and collateral transfers, read in block
 * ranges up to `confirmations` below the head. Each range and the cursor past it commit
 * together; each round also re-reads the last `rereadBlocks` below the cursor (stored rows are
 * keyed by tx hash and log index, so that stores nothing twice).
 */

const topicOf = (address: string) => pad(address as Hex, { size: 32 });

export async function ingestChainFills(ctx: RoundContext, book: MarketBook): Promise<void> {
  const { ingest, options, summary } = ctx;
  const rpc = ctx.rpc!;
  const head = need(await rpc.blockNumber(options.signal));
  summary.head_block = head;
  const safe = head - options.confirmations;

  const stored = loadState<BlockState>(ingest, STATE_KEYS.fills);
  if (stored && ctx.sinceGiven) summary.since_ignored = true;
  const state = stored ?? (await startAt(rpc, options.since, safe, ctx));
  // Kept at once, so a restart does not search for the start block again.
  if (!stored) ctx.transaction(() => saveState(ingest, STATE_KEYS.fills, state));
  const from = Math.max(state.start_block, state.next_block - options.rereadBlocks);
  const lastTime = await readFillRanges(ctx, book, from, safe, "fills", (to, readTo) => {
    state.next_block = Math.max(state.next_block, to + 1);
    if (readTo !== null) state.covered_to = Math.max(state.covered_to ?? readTo, readTo);
    saveState(ingest, STATE_KEYS.fills, state);
  });

  summary.next_block = state.next_block;
  const last = state.next_block - 1;
  if (last >= 0 && !options.signal?.aborted) {
    const ms =
      lastTime?.block === last
        ? lastTime.ms
        : need(await rpc.blockTimes([last], options.signal)).get(last)!;
    summary.lag_seconds = Math.max(0, Math.round((ctx.clock.now() - ms) / 1000));
  }
}

/**
 * OrderFilled logs of blocks `first`..`last` in ranges of up to `blockChunk` blocks, halved
 * while the node refuses a range as too large and grown back after. Each range's rows commit
 * together with `commit(to, readTo)` (the caller's cursor), readTo being the time of the newest
 * block read that had fills. Returns the time of the last block read, when known.
 */
export async function readFillRanges(
  ctx: RoundContext,
  book: MarketBook,
  first: number,
  last: number,
  stage: "fills" | "backfill",
  commit: (to: number, readTo: number | null) => void,
): Promise<{ block: number; ms: number } | null> {
  const { ingest, options, summary } = ctx;
  const rpc = ctx.rpc!;
  let from = first;
  let chunk = options.blockChunk;
  let page = 0;
  let lastTime: { block: number; ms: number } | null = null;

  while (from <= last && !options.signal?.aborted) {
    const to = Math.min(from + chunk - 1, last);
    const logs = await rpc.getLogs(
      {
        fromBlock: from,
        toBlock: to,
        address: EXCHANGES,
        // Server-side, only the aggressors' summaries: their taker (topic 3, after the
        // signature, orderHash and maker) is an exchange contract.
        topics: [
          [ORDER_FILLED_V1_TOPIC, ORDER_FILLED_V2_TOPIC],
          null,
          null,
          EXCHANGES.map(topicOf),
        ],
      },
      options.signal,
    );
    if (!logs.ok) {
      if (logs.tooLarge && chunk > 1) {
        chunk = Math.max(1, Math.floor(chunk / 2));
        continue;
      }
      fail(`blocks ${from}-${to}: ${logs.reason}`);
    }
    const fills: Fill[] = [];
    const bad: { raw: unknown; reason: string }[] = [];
    for (const log of logs.value) {
      if (log.removed) continue;
      const fill = decodeFill(log);
      if (!fill.ok) {
        bad.push({ raw: log, reason: fill.reason });
        continue;
      }
      // Checked here too: a node that ignores the topic filter must not double the volume.
      if (isTakerSummary(fill.value)) fills.push(fill.value);
      else summary.maker_fills_skipped++;
    }
    const markets = await book.missingByToken(fills.map((f) => f.token_id));
    const times = await blockTimes(rpc, logs.value, ctx);

    if (times.has(to)) lastTime = { block: to, ms: times.get(to)! };
    // Every fill up to the newest block read is stored then: known gaps before it are filled.
    const readTo = lastTime?.block === to ? lastTime.ms : latestTime(times);
    const inserted = ctx.transaction(() => {
      for (const b of bad) ctx.quarantine(stage, `blocks ${from}-${to}`, b.reason, b.raw);
      if (readTo !== null && ctx.ledger.fillGaps(readTo, ctx.clock.now()) > 0) {
        ctx.log.info({ to: new Date(readTo).toISOString() }, "chain logs filled known gaps");
      }
      book.store(markets);
      const rows: NewTrade[] = [];
      const unknown = new Set<string>();
      // Parked fills whose market has been stored since (a lookup, the listing) come back now.
      const parked = loadState<ParkedFills>(ingest, STATE_KEYS.parkedFills) ?? { fills: [] };
      const released = parked.fills.filter((p) => book.tokenMarket(p.fill.token_id));
      const stillParked = parked.fills.filter((p) => !book.tokenMarket(p.fill.token_id));
      const candidates = [
        ...released.map((p) => ({ ...p, fresh: false })),
        ...fills.map((fill) => ({ fill, ts: times.get(fill.block)!, fresh: true })),
      ];
      for (const { fill, ts, fresh } of candidates) {
        const token = book.tokenMarket(fill.token_id);
        if (!token) {
          unknown.add(fill.token_id);
          if (fresh) summary.unknown_tokens++;
          stillParked.push({ fill, ts });
          continue;
        }
        const row = fillToTrade(fill, token, ts);
        if (!row.ok) {
          ctx.quarantine(stage, `blocks ${from}-${to}`, row.reason, fill);
          continue;
        }
        if (!row.value) continue;
        // Stored before fills shared one key across sources (under the real log index).
        if (ingest.tradeIdOf(fill.tx_hash, fill.log_index) !== undefined) {
          summary.trades_present++;
          continue;
        }
        rows.push({ ...row.value, log_index: fillKey(fill) });
      }
      if (unknown.size > 0) {
        ctx.log.warn(
          { blocks: `${from}-${to}`, tokens: [...unknown].slice(0, 5), count: unknown.size },
          "fills of outcome tokens no Gamma market lists yet are parked until it does",
        );
      }
      if (released.length > 0 || stillParked.length !== parked.fills.length) {
        // The oldest give way beyond the cap: a token Gamma never lists must not grow it forever.
        saveState(ingest, STATE_KEYS.parkedFills, {
          fills: stillParked.slice(-PARKED_MAX),
        } satisfies ParkedFills);
      }
      const refusedBefore = summary.trades_refused;
      const newRows = ingest.insertTrades(rows);
      commit(to, readTo);
      summary.trades_present +=
        rows.length - newRows.length - (summary.trades_refused - refusedBefore);
      return newRows.length;
    });
    summary.trades_pages++;
    summary.trades_new += inserted;
    ctx.pageDone(stage, ++page, logs.value.length, inserted);
    from = to + 1;
    // A dense range needed a small chunk; the next may not.
    chunk = Math.min(options.blockChunk, chunk * 2);
  }

  return lastTime;
}

/**
 * Chain fills whose outcome token no stored market has yet: kept until the market is stored
 * (looked up by token every round), then stored like any other fill.
 */
interface ParkedFills {
  fills: { fill: Fill; ts: number }[];
}
const PARKED_MAX = 10_000;

/**
 * A fill's key is shared by every source: the data API's synthetic index of (tx, token, side,
 * wallet). The chain keeps only the aggressor's summary, whose maker is the wallet the data API
 * and the socket name, with the same side and token, so the same fill gets the same key.
 */
const fillKey = (fill: Fill) =>
  syntheticLogIndex(fill.tx_hash, fill.token_id, fill.side, fill.maker);

function latestTime(times: Map<number, number>): number | null {
  let latest: number | null = null;
  for (const ms of times.values()) latest = Math.max(latest ?? ms, ms);
  return latest;
}

/**
 * Collateral transfers to and from the wallets that trade (a topic filter on `to`, then on
 * `from`, in batches of addresses). They trail the fills by `transferLagBlocks`, so a wallet
 * that trades soon after being funded is known by the time its funding block is read.
 */
export async function ingestChainTransfers(ctx: RoundContext): Promise<void> {
  const { ingest, options, summary } = ctx;
  const rpc = ctx.rpc!;
  const fills = loadState<BlockState>(ingest, STATE_KEYS.fills);
  if (!fills) return;
  const state = loadState<BlockState>(ingest, STATE_KEYS.transfers) ?? {
    start_block: fills.start_block,
    next_block: fills.start_block,
  };
  const head = summary.head_block ?? need(await rpc.blockNumber(options.signal));
  const limit = Math.min(
    fills.next_block - 1 - options.transferLagBlocks,
    head - options.confirmations,
  );
  const wallets = knownWallets(ctx);
  let from = state.next_block;
  let chunk = options.transferChunk;
  let page = 0;

  while (from <= limit && !options.signal?.aborted) {
    const to = Math.min(from + chunk - 1, limit);
    const read = await transferLogs(rpc, wallets, from, to, options.transferAddressBatch, ctx);
    if (read === "too large" && chunk > 1) {
      chunk = Math.max(1, Math.floor(chunk / 2));
      continue;
    }
    if (read === "too large")
      fail(`blocks ${from}-${to}: the node refuses even one block of transfers`);
    const times = await blockTimes(rpc, read, ctx);
    const rows: NewTransfer[] = [];
    for (const log of read) {
      const transfer = decodeTransfer(log);
      if (!transfer.ok) fail(transfer.reason);
      const row = transferToRow(transfer.value, times.get(transfer.value.block)!);
      if (row) rows.push(row);
    }
    const inserted = ctx.transaction(() => {
      const newRows = ingest.insertTransfers(rows);
      state.next_block = to + 1;
      saveState(ingest, STATE_KEYS.transfers, state);
      return newRows.length;
    });
    summary.transfers_new += inserted;
    ctx.pageDone("transfers", ++page, read.length, inserted);
    from = to + 1;
    chunk = Math.min(options.transferChunk, chunk * 2);
  }
}

async function transferLogs(
  rpc: RpcClient,
  wallets: readonly string[],
  from: number,
  to: number,
  batchSize: number,
  ctx: RoundContext,
): Promise<RpcLog[] | "too large"> {
  const byKey = new Map<string, RpcLog>();
  for (let i = 0; i < wallets.length; i += batchSize) {
    const batch = wallets.slice(i, i + batchSize).map(topicOf);
    const filters: LogFilter["topics"][] = [
      [TRANSFER_TOPIC, null, batch],
      [TRANSFER_TOPIC, batch],
    ];
    for (const topics of filters) {
      const logs = await rpc.getLogs(
        { fromBlock: from, toBlock: to, address: COLLATERAL_TOKENS, topics },
        ctx.options.signal,
      );
      if (!logs.ok) {
        if (logs.tooLarge) return "too large";
        fail(`transfers in blocks ${from}-${to}: ${logs.reason}`);
      }
      // A transfer between two known wallets answers both filters: keep it once.
      for (const log of logs.value) {
        if (!log.removed) byKey.set(`${log.transactionHash}#${log.logIndex}`, log);
      }
    }
  }
  return [...byKey.values()];
}

function knownWallets(ctx: RoundContext): string[] {
  const statement = ctx.db.reader
    .prepare("SELECT address FROM wallet_ids ORDER BY address")
    .pluck() as Statement<[], string>;
  return statement.all();
}

/** Block → Unix ms for every log: from the log itself when the node sends it, else one lookup. */
export async function blockTimes(
  rpc: RpcClient,
  logs: readonly RpcLog[],
  ctx: RoundContext,
): Promise<Map<number, number>> {
  const times = new Map<number, number>();
  const missing = new Set<number>();
  for (const log of logs) {
    const block = Number.parseInt(log.blockNumber, 16);
    if (log.blockTimestamp) times.set(block, Number.parseInt(log.blockTimestamp, 16) * 1000);
    else missing.add(block);
  }
  if (missing.size > 0) {
    for (const [block, ms] of need(await rpc.blockTimes([...missing], ctx.options.signal))) {
      times.set(block, ms);
    }
  }
  return times;
}

/** The first block at or after `since`: a binary search over block times. */
export async function startAt(
  rpc: RpcClient,
  since: number,
  safe: number,
  ctx: RoundContext,
): Promise<BlockState> {
  let lo = 0;
  let hi = Math.max(0, safe);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const ms = need(await rpc.blockTimes([mid], ctx.options.signal)).get(mid)!;
    if (ms >= since) hi = mid;
    else lo = mid + 1;
  }
  return { start_block: lo, next_block: lo };
}

export function need<T>(result: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!result.ok) fail(result.reason);
  return result.value;
}
