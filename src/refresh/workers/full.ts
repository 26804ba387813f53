/** The full rebuild's two model workers: the wallet pass and the market pass (see model-worker.ts). */
import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import { loadNativeBinding } from "../../db/native";
import { type Connection, type Db, openConnection, overridePragmas } from "../../db/open";
import {
  buildMarketModels,
  buildWalletModels,
  type MarketModelsResult,
  type WalletModelsResult,
} from "../full-models";
import { fullRowEncoder, newRowPack, packValues, type RowPack, type RowSink } from "../full-rows";
import type { CountingWallet } from "../pass";
import { type PriceSeries, readPriceSeries, seriesBuffers, seriesLookup } from "../prices";
import { FULL_REBUILD_TABLES, type FullRebuildTable } from "../writer";
import {
  acknowledge,
  CANCELLED,
  Cancelled,
  COUNTERS,
  errorText,
  lowerThisThreadsPriority,
  MARKETS_TAKEN,
  type ModelTask,
  poster,
  SERIES,
  SLOTS,
  STANDING,
  startWorker,
  takeMessages,
  WALLETS_TAKEN,
  waitForFlag,
} from "./threads";

/** Rows of one table per message. */
const CHUNK_ROWS = 1024;
export interface ModelWorkerData {
  task: ModelTask;
  path: string;
  now: number;
  /** Helper threads for the worker's sorts (PRAGMA threads). */
  sorterThreads: number;
  /** Int32Array slots EVENTS … MARKETS_TAKEN, shared by the writer and both workers. */
  shared: SharedArrayBuffer;
  port: MessagePort;
  /** The slot this worker counts its posted messages in (the bootstrap's, on a failure). */
  postedSlot: number;
  /** The SQLite addon's file, in the single binary (nativeBindingFile). */
  nativeFile: string | undefined;
}

type WorkerMessage =
  | { rows: FullRebuildTable; pack: RowPack }
  | { done: WalletModelsResult | MarketModelsResult }
  | { error: string };

/** The market worker's page cache, KB, for its sort beside the wallet pass. */
const MARKET_SORT_CACHE_KB = 16_384;

/**
 * A model worker thread's work: the wallet pass or the market pass, posting its rows, then
 * `done` (or `error`).
 */
export function runModelWorker(data: ModelWorkerData): void {
  const signal = new Int32Array(data.shared);
  const post = poster<WorkerMessage>(signal, data.port, data.task);
  // What the writer posts to this worker, once its flag is set.
  const received = <T>(what: string): T => {
    const message = receiveMessageOnPort(data.port);
    if (message === undefined) throw new Error(`${what} were announced but not sent`);
    return message.message as T;
  };
  let connection: Connection | undefined;
  try {
    if (data.nativeFile !== undefined) loadNativeBinding(data.nativeFile);
    connection = openConnection(data.path, { readonly: true });
    // As withBulkReads (full.ts) sets the writer's connections: sorts spill to temporary files,
    // on helper threads, and the trades are read without the memory map.
    overridePragmas(connection, { temp_store: 1, mmap_size: 0, threads: data.sorterThreads });
    // Each table's rows until CHUNK_ROWS of them are held.
    const held = new Map<FullRebuildTable, RowPack>();
    const capacity = (table: FullRebuildTable) => CHUNK_ROWS * FULL_REBUILD_TABLES[table].length;
    const send = (table: FullRebuildTable, pack: RowPack) => {
      post({ rows: table, pack }, true, [pack.numbers.buffer, pack.kinds.buffer]);
      held.delete(table);
    };
    const emit: RowSink = (table, values) => {
      let pack = held.get(table);
      if (pack === undefined) {
        pack = newRowPack(capacity(table));
        held.set(table, pack);
      }
      packValues(pack, values);
      if (pack.length === capacity(table)) send(table, pack);
    };
    const rows = fullRowEncoder(emit);
    let result: WalletModelsResult | MarketModelsResult;
    if (data.task === "wallets") {
      // The price series, which the writer reads while this thread sorts the fills by wallet.
      const prices = () => {
        waitForFlag(signal, SERIES);
        return seriesLookup(
          received<{ series: Map<number, PriceSeries> }>("the price series").series,
        );
      };
      result = buildWalletModels(connection, data.now, rows, prices);
    } else {
      // Its sort waits for the series to be read: the wallet pass waits for those. It then runs
      // at the lowest CPU priority, in what the wallet pass and the writer leave of the cores,
      // with a smaller page cache (SQLite sorts in runs of the cache's size): on the large
      // world a third busy thread slowed the wallet pass by more than the sort saved, and a
      // second full-sized sort beside the wallet pass took the rebuild past 1 GB.
      waitForFlag(signal, SERIES);
      lowerThisThreadsPriority();
      overridePragmas(connection, { cache_size: -MARKET_SORT_CACHE_KB });
      const standing = () => {
        waitForFlag(signal, STANDING);
        return received<{ standing: Map<string, CountingWallet> }>("the standings").standing;
      };
      result = buildMarketModels(connection, data.now, rows, standing);
    }
    for (const [table, pack] of held) send(table, pack);
    post({ done: result }, true);
  } catch (error) {
    if (!(error instanceof Cancelled)) post({ error: errorText(error) }, false);
  } finally {
    connection?.close();
    data.port.close();
  }
}

/** What the full rebuild's models give the writer, besides their rows. */
export interface FullModelsResult {
  markets: number;
  fillsRead: number;
  /** Resolved bets and wins by category, counted as the bets were built. */
  categories: WalletModelsResult["categories"];
  /** Each worker's steps, ms: the wallet pass's, then the market pass's. */
  phases: Record<string, number>;
  /** How long this thread waited for rows, ms: in all, and for each pass's. */
  waitedMs: { wallets: number; markets: number };
  /** How long this thread read the price series for, ms. */
  seriesMs: number;
}

/**
 * Builds the full rebuild's models in two worker threads, the wallet pass in one and the market
 * pass in the other, and hands each batch of rows to `write` (on this thread, as they come), the
 * wallet pass's first, until both are done. This thread reads the price series first, for the
 * wallet pass (`seriesMs`); `waitedMs` is how long it then waited for rows. The market pass
 * sorts every fill by market while the wallet pass runs, and starts its models when this thread
 * hands it the wallet pass's standings. `db.path` must be a file: each worker opens it on a
 * connection of its own. A failure on any side ends all three and throws here.
 */
export function fullModelsInWorker(
  db: Db,
  now: number,
  sorterThreads: number,
  write: (table: FullRebuildTable, pack: RowPack) => void,
  whileMarketsWait: () => boolean = () => false,
): FullModelsResult {
  if (db.path === ":memory:") {
    throw new Error("a full rebuild needs a database file: its model workers open the file");
  }
  const shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const signal = new Int32Array(shared);
  const start = (task: ModelTask) => ({
    task,
    ...startWorker(db, task, { now, sorterThreads, shared, postedSlot: COUNTERS[task].posted }),
  });
  const walletWorker = start("wallets");
  const marketWorker = start("markets");
  const waited = { wallets: 0, markets: 0 };
  let seriesMs = 0;
  /** Inserts `from`'s rows until it is done; any message from the other is its error. */
  const drain = (from: typeof walletWorker, other: typeof walletWorker) =>
    takeMessages<WorkerMessage, WalletModelsResult | MarketModelsResult>(signal, from.port, {
      handle: (message) => {
        if ("done" in message) return message.done;
        if (!("rows" in message)) failed(from.task, message);
        write(message.rows, message.pack);
        acknowledge(signal, from.task);
        return undefined;
      },
      idle: () => {
        const early = receiveMessageOnPort(other.port);
        if (early !== undefined) failed(other.task, early.message as WorkerMessage);
        // The writer's own work, rather than waiting for the market pass's rows.
        return from.task === "markets" && whileMarketsWait();
      },
      slept: (ms) => {
        waited[from.task] += ms;
      },
    });
  try {
    // The price series (the wallet models' marks and 24-hour moves), read here while the wallet
    // worker sorts every fill by wallet, and moved to it without a copy.
    const seriesFrom = performance.now();
    const series = readPriceSeries(db);
    walletWorker.port.postMessage({ series }, seriesBuffers(series));
    Atomics.store(signal, SERIES, 1);
    Atomics.notify(signal, SERIES);
    seriesMs = performance.now() - seriesFrom;
    const wallets = drain(walletWorker, marketWorker) as WalletModelsResult;
    marketWorker.port.postMessage({ standing: wallets.standing });
    Atomics.store(signal, STANDING, 1);
    Atomics.notify(signal, STANDING);
    void walletWorker.worker.terminate();
    const markets = drain(marketWorker, walletWorker) as MarketModelsResult;
    return {
      markets: markets.markets,
      fillsRead: wallets.fillsRead + markets.fillsRead,
      categories: wallets.categories,
      phases: { ...wallets.phases, ...markets.phases },
      waitedMs: { wallets: Math.round(waited.wallets), markets: Math.round(waited.markets) },
      seriesMs: Math.round(seriesMs),
    };
  } finally {
    Atomics.store(signal, CANCELLED, 1);
    for (const slot of [WALLETS_TAKEN, MARKETS_TAKEN, SERIES, STANDING]) {
      Atomics.notify(signal, slot);
    }
    for (const { port, worker } of [walletWorker, marketWorker]) {
      port.close();
      void worker.terminate();
    }
  }
}

/** Throws a worker's error (or what it sent instead of rows) as the rebuild's. */
function failed(task: ModelTask, message: WorkerMessage): never {
  const reason = "error" in message ? message.error : "a message out of turn";
  throw new Error(`the full rebuild's ${task} worker failed: ${reason}`);
}
