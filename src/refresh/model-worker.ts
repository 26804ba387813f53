/**
 * The refresh's worker threads: the full rebuild's models (two workers, the wallet pass and the
 * market pass), the incremental refresh's wallet step (incrementalWalletsInWorker), the funding
 * graph's coordinated timing (coordinatedPairsInWorker) and a large commit's WAL checkpoint
 * (checkpointInWorker), below.
 *
 * The full rebuild: SQLite has one writer, and a full rebuild of the large world spends about
 * half its time writing rows and building indexes on it, and the other half reading and sorting
 * trades and building models, which need no write lock. So the models are built in worker
 * threads, each on a read-only connection of its own, and sent as packed rows (full-rows.ts) to
 * the writer, which stores them meanwhile (docs/architecture.md, "The full rebuild's model
 * worker"). The market pass needs the wallet pass's standings (whales and insiders), but not to
 * sort every fill by market, so its worker sorts while the wallet pass runs.
 *
 * The writer waits for the rows synchronously: the rebuild is one write transaction, and the jobs
 * process must run nothing else on its connection until it commits. So the writer takes messages
 * with receiveMessageOnPort and sleeps on a shared counter (Atomics.wait) between them, and each
 * worker stops posting when MAX_IN_FLIGHT of its messages wait unread, so no thread's memory
 * grows with the world.
 */
import { existsSync, readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { loadNativeBinding, nativeBindingFile } from "../db/native";
import { type Connection, type Db, openConnection, overridePragmas } from "../db/open";
import { type CoordinatedPair, readCoordinatedPairs } from "../funding/timing";
import { LOAD_ENTRY, workerEntry } from "../workers/entry";
import {
  buildMarketModels,
  buildWalletModels,
  type MarketModelsResult,
  type WalletModelsResult,
} from "./full-models";
import { fullRowEncoder, newRowPack, packValues, type RowPack, type RowSink } from "./full-rows";
import {
  type WalletChanges,
  type WalletTotals,
  type WalletUpdate,
  walletRecompute,
} from "./incremental-wallets";
import { type CountingWallet, contextFor } from "./pass";
import {
  type NewestFills,
  type PriceSeries,
  readPriceSeries,
  seriesBuffers,
  seriesLookup,
  withStoredMarks,
} from "./prices";
import { FULL_REBUILD_TABLES, type FullRebuildTable } from "./writer";

/** Name of the SEA asset holding this module's own bundle (build/build-binary.ts). */
export const MODEL_WORKER_ASSET = "model-worker.cjs";

/** Rows of one table per message. */
const CHUNK_ROWS = 1024;
/**
 * Messages a worker may have posted that the writer has not taken yet. The market pass's may
 * run further ahead (512 messages of hours, about 37 MB at most): the writer builds the wallet
 * tables' indexes between its messages, each for up to a second or two, and the market pass
 * goes on meanwhile.
 */
const MAX_IN_FLIGHT: Record<StreamingTask, number> = { wallets: 16, markets: 512, incremental: 16 };

/**
 * Slots of the shared counters. EVENTS moves on every message any worker posts: the writer
 * sleeps on it. Each model worker counts its own messages posted and taken.
 */
const EVENTS = 0;
const CANCELLED = 1;
/** 1 once the writer has posted the price series to the wallet worker. */
const SERIES = 2;
/** 1 once the writer has posted the wallet pass's standings to the market worker. */
const STANDING = 3;
const WALLETS_POSTED = 4;
const WALLETS_TAKEN = 5;
const MARKETS_POSTED = 6;
const MARKETS_TAKEN = 7;
const SLOTS = 8;

export type ModelTask = "wallets" | "markets";
/** The tasks that stream messages to the writer: the full rebuild's and the incremental's. */
type StreamingTask = ModelTask | "incremental";

// The incremental refresh's one worker counts in the wallet pass's slots: the two never share
// a set of counters.
const COUNTERS: Record<StreamingTask, { posted: number; taken: number }> = {
  wallets: { posted: WALLETS_POSTED, taken: WALLETS_TAKEN },
  markets: { posted: MARKETS_POSTED, taken: MARKETS_TAKEN },
  incremental: { posted: WALLETS_POSTED, taken: WALLETS_TAKEN },
};

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

/** Thrown in a worker when the writer gave up (an error of its own): nothing more is read. */
class Cancelled extends Error {}

/** An error as a worker sends it to the thread that started it: its stack, which names it. */
function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** The market worker's page cache, KB, for its sort beside the wallet pass. */
const MARKET_SORT_CACHE_KB = 16_384;

/**
 * Lowers the calling thread to the lowest CPU priority (niceness 19), and with it the sort's
 * helper threads, which start from it. Linux keeps a niceness per thread; elsewhere, or when
 * refused, nothing changes.
 */
function lowerThisThreadsPriority(): void {
  try {
    // "/proc/thread-self" links to "<pid>/task/<tid>".
    const thread = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(thread) && thread > 0) setPriority(thread, 19);
  } catch {}
}

/** Sleeps until `slot` is set to 1 by the writer, or the writer gives up. */
function waitForFlag(signal: Int32Array, slot: number): void {
  for (;;) {
    if (Atomics.load(signal, CANCELLED) === 1) throw new Cancelled();
    if (Atomics.load(signal, slot) === 1) return;
    Atomics.wait(signal, slot, 0);
  }
}

/**
 * How a worker posts to the writer: each message counted in its task's slots and announced on
 * EVENTS. With `wait`, it first sleeps while MAX_IN_FLIGHT of its messages wait unread; it
 * throws Cancelled once the writer has given up.
 */
function poster<M>(signal: Int32Array, port: MessagePort, task: StreamingTask) {
  const { posted, taken } = COUNTERS[task];
  return (message: M, wait: boolean, transfer: ArrayBuffer[] = []): void => {
    for (;;) {
      if (Atomics.load(signal, CANCELLED) === 1) throw new Cancelled();
      const takenSoFar = Atomics.load(signal, taken);
      if (!wait || Atomics.load(signal, posted) - takenSoFar < MAX_IN_FLIGHT[task]) break;
      Atomics.wait(signal, taken, takenSoFar);
    }
    port.postMessage(message, transfer);
    Atomics.add(signal, posted, 1);
    Atomics.add(signal, EVENTS, 1);
    Atomics.notify(signal, EVENTS);
  };
}

/**
 * Takes a streaming worker's messages on the writer's thread until `handle` returns a result.
 * While none has come, `idle` runs (work of its own, or checks; true to look for a message again
 * at once), else the thread sleeps on EVENTS, read before the port so that a message posted in
 * between wakes it; `slept` is told how long each sleep lasted.
 */
function takeMessages<M, R>(
  signal: Int32Array,
  port: MessagePort,
  on: {
    handle(message: M): R | undefined;
    idle?(): boolean;
    slept?(ms: number): void;
  },
): R {
  for (;;) {
    const events = Atomics.load(signal, EVENTS);
    const received = receiveMessageOnPort(port);
    if (received !== undefined) {
      const result = on.handle(received.message as M);
      if (result !== undefined) return result;
      continue;
    }
    if (on.idle?.()) continue;
    const from = performance.now();
    Atomics.wait(signal, EVENTS, events);
    on.slept?.(performance.now() - from);
  }
}

/** Tells `task`'s worker that the writer has taken one more of its messages. */
function acknowledge(signal: Int32Array, task: StreamingTask): void {
  const { taken } = COUNTERS[task];
  Atomics.add(signal, taken, 1);
  Atomics.notify(signal, taken);
}

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

/** The incremental wallet worker's page cache, KB: the B-trees' upper pages, mostly. */
const INCREMENTAL_CACHE_KB = 8_192;
/** Wallets whose rows go to the writer in one message. */
const UPDATES_PER_MESSAGE = 64;

/** The incremental refresh's wallet worker's data. */
export interface IncrementalWorkerData {
  path: string;
  now: number;
  changes: WalletChanges;
  /** Each market's newest new fills, for the marks (withStoredMarks). */
  newest: ReadonlyMap<number, NewestFills>;
  shared: SharedArrayBuffer;
  port: MessagePort;
  nativeFile: string | undefined;
}

type IncrementalMessage = { updates: WalletUpdate[] } | { done: WalletTotals } | { error: string };

/**
 * The incremental refresh's wallet worker: each wallet of `changes` recomputed on a read-only
 * connection of its own, with the context the writer's thread would build (contextFor, the
 * stored marks), posted to the writer UPDATES_PER_MESSAGE wallets at a time, then the totals.
 */
export function runIncrementalWorker(data: IncrementalWorkerData): void {
  const signal = new Int32Array(data.shared);
  const post = poster<IncrementalMessage>(signal, data.port, "incremental");
  let connection: Connection | undefined;
  try {
    if (data.nativeFile !== undefined) loadNativeBinding(data.nativeFile);
    connection = openConnection(data.path, { readonly: true });
    // Each wallet's bets and fills are read once, so a page cache would hardly be read again,
    // and the memory map would count every page read against the jobs process's memory.
    overridePragmas(connection, { mmap_size: 0, cache_size: -INCREMENTAL_CACHE_KB });
    const db = { writer: connection };
    const seek = contextFor(db, data.now, "seek");
    const ctx = { ...seek, prices: withStoredMarks(db, seek.prices, data.newest) };
    const recompute = walletRecompute(connection, connection, ctx, data.changes);
    let updates: WalletUpdate[] = [];
    for (const wallet of data.changes.wallets) {
      const update = recompute.next(wallet);
      if (update === undefined) continue;
      updates.push(update);
      if (updates.length === UPDATES_PER_MESSAGE) {
        post({ updates }, true);
        updates = [];
      }
    }
    if (updates.length > 0) post({ updates }, true);
    post({ done: recompute.totals }, true);
  } catch (error) {
    if (!(error instanceof Cancelled)) post({ error: errorText(error) }, false);
  } finally {
    connection?.close();
    data.port.close();
  }
}

/**
 * The incremental refresh's wallet step with its reading and modelling (walletRecompute) in a
 * worker thread, and `store` called here, on the writer's thread, for each wallet's rows as they
 * come. On the large world, 10,000 new trades touch about 8,400 wallets: reading their 400k
 * bets and modelling them took about 2.4 s, writing their rows about 1.8 s, one after the other
 * on one thread. The worker reads the database as committed before this refresh, which is what
 * the step would read here: the writer holds the write lock (the refresh's transaction is
 * IMMEDIATE) and writes nothing the step reads before it ends. `db.path` must be a file.
 */
export function incrementalWalletsInWorker(
  db: Db,
  now: number,
  changes: WalletChanges,
  newest: ReadonlyMap<number, NewestFills>,
  store: (update: WalletUpdate) => void,
): WalletTotals {
  const shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const signal = new Int32Array(shared);
  const { posted, taken } = COUNTERS.incremental;
  const { port, worker } = startWorker(db, "incremental", {
    now,
    changes,
    newest,
    shared,
    postedSlot: posted,
  });
  try {
    return takeMessages<IncrementalMessage, WalletTotals>(signal, port, {
      handle: (message) => {
        if ("done" in message) return message.done;
        if (!("updates" in message)) {
          throw new Error(`the incremental refresh's wallet worker failed: ${message.error}`);
        }
        for (const update of message.updates) store(update);
        acknowledge(signal, "incremental");
        return undefined;
      },
    });
  } finally {
    Atomics.store(signal, CANCELLED, 1);
    Atomics.notify(signal, taken);
    port.close();
    void worker.terminate();
  }
}

/** A one-shot worker's data (coordinatedPairsInWorker, checkpointInWorker). */
export interface OneShotWorkerData {
  task: OneShotTask;
  path: string;
  /** Int32Array slot EVENTS: 1 once the result (or an error) is posted. */
  shared: SharedArrayBuffer;
  port: MessagePort;
  nativeFile: string | undefined;
}

/** What a WAL checkpoint reports (`PRAGMA wal_checkpoint`): its frames, and those copied back. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** The one-shot tasks, each with the connection it opens and what it returns. */
const ONE_SHOT = {
  /** The funding graph's coordinated pairs, from the committed bets. */
  timing: (path: string): CoordinatedPair[] => {
    const connection = openConnection(path, { readonly: true });
    try {
      // It reads every bet once, in table order: a page cache would never be read again (its
      // default 64 MB would only add to the refresh's peak of memory), nor the memory map,
      // which would count every page read against the jobs process's resident memory.
      overridePragmas(connection, { mmap_size: 0, cache_size: -2048 });
      return readCoordinatedPairs(connection);
    } finally {
      connection.close();
    }
  },
  /** A PASSIVE checkpoint: a checkpoint writes the database file, so not read-only. */
  checkpoint: (path: string): CheckpointResult => {
    // A read-write open would create a missing file.
    if (!existsSync(path)) throw new Error(`no database at ${path}`);
    const connection = openConnection(path);
    try {
      const [result] = connection.pragma("wal_checkpoint(PASSIVE)") as CheckpointResult[];
      return result!;
    } finally {
      connection.close();
    }
  },
};

export type OneShotTask = keyof typeof ONE_SHOT;

type OneShotMessage = { result: unknown } | { error: string };

/** A one-shot worker thread's work: its task's result, or the error. */
export function runOneShotWorker(data: OneShotWorkerData): void {
  let message: OneShotMessage;
  try {
    if (data.nativeFile !== undefined) loadNativeBinding(data.nativeFile);
    message = { result: ONE_SHOT[data.task](data.path) };
  } catch (error) {
    message = { error: errorText(error) };
  }
  data.port.postMessage(message);
  const signal = new Int32Array(data.shared);
  Atomics.add(signal, EVENTS, 1);
  Atomics.notify(signal, EVENTS);
  data.port.close();
}

/**
 * Runs in the worker before this module is loaded: loads it (the bundle in the single binary,
 * the source under tsx otherwise), runs the task `workerData.task` names, and reports a failure
 * to load as the module would report one.
 */
const BOOTSTRAP = `
const { workerData } = require("node:worker_threads");
const fail = (error) => {
  workerData.port.postMessage({ error: String((error && error.stack) || error) });
  const signal = new Int32Array(workerData.shared);
  if (workerData.postedSlot !== undefined) Atomics.add(signal, workerData.postedSlot, 1);
  Atomics.add(signal, ${EVENTS}, 1);
  Atomics.notify(signal, ${EVENTS});
  workerData.port.close();
};
try {
  ${LOAD_ENTRY}
  load.then(
    (module) =>
      workerData.task === "wallets" || workerData.task === "markets"
        ? module.runModelWorker(workerData)
        : workerData.task === "incremental"
          ? module.runIncrementalWorker(workerData)
          : module.runOneShotWorker(workerData),
    fail,
  );
} catch (error) {
  fail(error);
}
`;

/**
 * Starts a worker thread on this module for `task`: the worker gets `data` with the database's
 * path, the SQLite addon's file and where to load this module from, and a port whose other end
 * is returned. Failures come through the port (the bootstrap's `fail`, the task's `error`), so
 * the worker's error event is ignored: it would otherwise crash this process. Unref'd: a worker
 * keeps nothing alive.
 */
function startWorker(
  db: Db,
  task: StreamingTask | OneShotTask,
  data: { shared: SharedArrayBuffer } & Record<string, unknown>,
): { port: MessagePort; worker: Worker } {
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: {
      ...data,
      task,
      path: db.path,
      port: port2,
      nativeFile: nativeBindingFile(),
      entry: workerEntry(MODEL_WORKER_ASSET, import.meta.url, "the refresh's model worker"),
    },
    transferList: [port2],
  });
  worker.on("error", () => {});
  worker.unref();
  return { port: port1, worker };
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

/** A one-shot task's result being made in a worker thread. */
export interface Pending<T> {
  /** Waits (blocking this thread) for the result; throws the worker's error. Once. */
  take(): T;
  /** Stops the worker, if it is still running: the result is not wanted. */
  cancel(): void;
}

/** A one-shot worker's result to come, which may also be left to the worker. */
export interface Detachable<T> extends Pending<T> {
  /** Lets the worker finish on its own: its result (or error) is not wanted. */
  detach(): void;
}

/** Runs a one-shot task in a worker thread of its own; `what` names it in errors. */
function oneShotInWorker<T>(db: Db, task: OneShotTask, what: string): Detachable<T> {
  const shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const signal = new Int32Array(shared);
  const { port, worker } = startWorker(db, task, { shared });
  let done = false;
  const cancel = () => {
    if (done) return;
    done = true;
    port.close();
    void worker.terminate();
  };
  return {
    take() {
      if (done) throw new Error(`the ${what} was already taken`);
      try {
        for (;;) {
          const posted = Atomics.load(signal, EVENTS);
          const received = receiveMessageOnPort(port);
          if (received !== undefined) {
            const message = received.message as OneShotMessage;
            if ("error" in message) throw new Error(`the ${what} worker failed: ${message.error}`);
            return message.result as T;
          }
          if (posted > 0) throw new Error(`the ${what} worker ended without its result`);
          Atomics.wait(signal, EVENTS, 0);
        }
      } finally {
        cancel();
      }
    },
    cancel,
    detach() {
      if (done) return;
      done = true;
      // The worker's message, if it comes, goes nowhere. The database waits for the worker
      // before it closes; works that have ended are dropped as others are added.
      port.close();
      // A worker that died without reporting (out of memory, say) has no thread any more.
      const ended = () => Atomics.load(signal, EVENTS) > 0 || worker.threadId === -1;
      for (const work of db.background) if (work.ended()) db.background.delete(work);
      db.background.add({
        ended,
        wait() {
          while (!ended()) Atomics.wait(signal, EVENTS, 0, 1000);
        },
      });
    },
  };
}

/** Coordinated pairs being read in a worker thread (coordinatedPairsInWorker). */
export type PendingPairs = Pending<CoordinatedPair[]>;

/**
 * Starts reading the coordinated pairs of the committed bets in a worker thread, on a read-only
 * connection of its own, so the writer goes on with the rest of the funding graph meanwhile: on
 * the large world the pairs take about 10 s (every one of nine million bets read and grouped),
 * the transfer graph about 7 s and wallet search 2 s. The worker reads the bets as committed
 * when it starts: call this after the read models' commit, before anything changes them
 * again (only the refresh writes wallet_bets). With no database file (`:memory:`), `take` reads
 * them on this thread.
 */
export function coordinatedPairsInWorker(db: Db): PendingPairs {
  if (db.path === ":memory:") {
    return { take: () => readCoordinatedPairs(db.writer), cancel: () => {} };
  }
  return oneShotInWorker(db, "timing", "coordinated-timing");
}

/**
 * Starts a PASSIVE checkpoint of the database's WAL in a worker thread, on a connection of its
 * own: a full rebuild leaves gigabytes of pages in the WAL, and copying them back into the
 * database took the rebuild's commit 3–4 s on the large world, on the writer's thread. Beside
 * it, the writer goes on with the refresh's extensions. A PASSIVE checkpoint never waits: it
 * copies what no reader still needs, and the writer's own checkpoints do the rest later. After
 * the extensions, a second one is detached: it copies their pages while the caller goes on.
 */
export function checkpointInWorker(db: Db): Detachable<CheckpointResult> {
  if (db.path === ":memory:") throw new Error("an in-memory database has no WAL to checkpoint");
  return oneShotInWorker(db, "checkpoint", "WAL checkpoint");
}
