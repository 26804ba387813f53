/**
 * The refresh's second thread, for two jobs: the full rebuild's models, and the funding graph's
 * coordinated timing (coordinatedPairsInWorker, below).
 *
 * The full rebuild: SQLite has one writer, and a full rebuild of the large world
 * spends about half its time writing rows and building indexes on it, and the other half reading
 * and sorting trades and building models, which need no write lock. So the models are built in a
 * worker thread, on a read-only connection of its own, and sent as packed rows (full-rows.ts) to
 * the writer, which stores them meanwhile (docs/architecture.md, "The full rebuild's model worker").
 *
 * The writer waits for the rows synchronously: the rebuild is one write transaction, and the jobs
 * process must run nothing else on its connection until it commits. So the writer takes messages
 * with receiveMessageOnPort and sleeps on a shared counter (Atomics.wait) between them, and the
 * worker stops posting when MAX_IN_FLIGHT messages wait unread, so neither thread's memory grows
 * with the world.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import * as sea from "node:sea";
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { loadNativeBinding, nativeBindingFile, writeCached } from "../db/native";
import { type Connection, type Db, openConnection, overridePragmas } from "../db/open";
import { type CoordinatedPair, readCoordinatedPairs } from "../funding/timing";
import { buildFullModels, type FullModelsResult } from "./full-models";
import { fullRowEncoder, newRowPack, packValues, type RowPack, type RowSink } from "./full-rows";
import { type PriceSeries, readPriceSeries, seriesBuffers, seriesLookup } from "./prices";
import { FULL_REBUILD_TABLES, type FullRebuildTable } from "./writer";

/** Name of the SEA asset holding this module's own bundle (build/build-binary.ts). */
export const MODEL_WORKER_ASSET = "model-worker.cjs";

/** Rows of one table per message. */
const CHUNK_ROWS = 1024;
/** Messages the worker may have posted that the writer has not taken yet. */
const MAX_IN_FLIGHT = 16;

/** Slots of the shared counters. */
const POSTED = 0;
const TAKEN = 1;
const CANCELLED = 2;
/** 1 once the writer has posted the price series to the worker. */
const SERIES = 3;
const SLOTS = 4;

export interface ModelWorkerData {
  path: string;
  now: number;
  /** Helper threads for the worker's sorts (PRAGMA threads). */
  sorterThreads: number;
  /** Int32Array slots POSTED, TAKEN, CANCELLED, SERIES. */
  shared: SharedArrayBuffer;
  port: MessagePort;
  /** The SQLite addon's file, in the single binary (nativeBindingFile). */
  nativeFile: string | undefined;
}

type WorkerMessage =
  | { rows: FullRebuildTable; pack: RowPack }
  | { done: FullModelsResult }
  | { error: string };

/** Thrown in the worker when the writer gave up (an error of its own): nothing more is read. */
class Cancelled extends Error {}

/** The worker thread's work: build every model and post its rows, then `done` (or `error`). */
export function runModelWorker(data: ModelWorkerData): void {
  const signal = new Int32Array(data.shared);
  const post = (message: WorkerMessage, wait: boolean, transfer: ArrayBuffer[] = []) => {
    for (;;) {
      if (Atomics.load(signal, CANCELLED) === 1) throw new Cancelled();
      const taken = Atomics.load(signal, TAKEN);
      if (!wait || Atomics.load(signal, POSTED) - taken < MAX_IN_FLIGHT) break;
      Atomics.wait(signal, TAKEN, taken);
    }
    data.port.postMessage(message, transfer);
    Atomics.add(signal, POSTED, 1);
    Atomics.notify(signal, POSTED);
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
    // The price series, which the writer reads while this thread sorts the fills by wallet.
    const prices = () => {
      for (;;) {
        if (Atomics.load(signal, CANCELLED) === 1) throw new Cancelled();
        if (Atomics.load(signal, SERIES) === 1) break;
        Atomics.wait(signal, SERIES, 0);
      }
      const received = receiveMessageOnPort(data.port);
      if (received === undefined) throw new Error("the price series were announced but not sent");
      return seriesLookup((received.message as { series: Map<number, PriceSeries> }).series);
    };
    const result = buildFullModels(connection, data.now, fullRowEncoder(emit), prices);
    for (const [table, pack] of held) send(table, pack);
    post({ done: result }, true);
  } catch (error) {
    if (!(error instanceof Cancelled)) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      post({ error: message }, false);
    }
  } finally {
    connection?.close();
    data.port.close();
  }
}

export interface TimingWorkerData {
  path: string;
  /** Int32Array slot POSTED: 1 once the result (or an error) is posted. */
  shared: SharedArrayBuffer;
  port: MessagePort;
  nativeFile: string | undefined;
}

type TimingMessage = { pairs: CoordinatedPair[] } | { error: string };

/** The worker thread's work for coordinatedPairsInWorker: the pairs, or the error. */
export function runTimingWorker(data: TimingWorkerData): void {
  let connection: Connection | undefined;
  let message: TimingMessage;
  try {
    if (data.nativeFile !== undefined) loadNativeBinding(data.nativeFile);
    connection = openConnection(data.path, { readonly: true });
    // It reads every bet once, in table order: a page cache would never be read again (its
    // default 64 MB would only add to the refresh's peak of memory), nor the memory map, which
    // would count every page read against the jobs process's resident memory.
    overridePragmas(connection, { mmap_size: 0, cache_size: -2048 });
    message = { pairs: readCoordinatedPairs(connection) };
  } catch (error) {
    message = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  } finally {
    connection?.close();
  }
  data.port.postMessage(message);
  const signal = new Int32Array(data.shared);
  Atomics.add(signal, POSTED, 1);
  Atomics.notify(signal, POSTED);
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
  Atomics.add(signal, ${POSTED}, 1);
  Atomics.notify(signal, ${POSTED});
  workerData.port.close();
};
try {
  const entry = workerData.entry;
  if (entry.tsx) require(entry.tsx).register();
  const loaded = entry.bundle ? Promise.resolve(require(entry.bundle)) : import(entry.url);
  loaded.then(
    (module) =>
      workerData.task === "timing"
        ? module.runTimingWorker(workerData)
        : module.runModelWorker(workerData),
    fail,
  );
} catch (error) {
  fail(error);
}
`;

/** Where the worker finds this module: the bundle's file, or the source and tsx's loader. */
function workerEntry(): { entry: { bundle?: string; url?: string; tsx?: string } } {
  if (sea.isSea()) {
    const bytes = Buffer.from(sea.getAsset(MODEL_WORKER_ASSET));
    const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
    const file = writeCached(bytes, `model-worker-${hash}.cjs`, "the refresh's model worker");
    return { entry: { bundle: file } };
  }
  // From a checkout this file is TypeScript: the worker registers tsx's loader first (an eval
  // worker does not run the --import flags a worker inherits).
  return {
    entry: { url: import.meta.url, tsx: createRequire(import.meta.url).resolve("tsx/esm/api") },
  };
}

/**
 * Builds the full rebuild's models in a worker thread and hands each batch of rows to `write`
 * (on this thread, as they come), until the worker is done. This thread reads the price series
 * first, for the worker (`seriesMs`); `waitedMs` is how long it then waited for rows. `db.path`
 * must be a file: the worker opens it on a connection of its own. A failure on either side ends
 * both and throws here.
 */
export function fullModelsInWorker(
  db: Db,
  now: number,
  sorterThreads: number,
  write: (table: FullRebuildTable, pack: RowPack) => void,
): FullModelsResult & { waitedMs: number; seriesMs: number } {
  if (db.path === ":memory:") {
    throw new Error("a full rebuild needs a database file: its model worker opens the file");
  }
  const shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const signal = new Int32Array(shared);
  const { port1, port2 } = new MessageChannel();
  const { entry } = workerEntry();
  const workerData = {
    task: "models",
    path: db.path,
    now,
    sorterThreads,
    shared,
    port: port2,
    nativeFile: nativeBindingFile(),
    entry,
  };
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData,
    transferList: [port2],
  });
  // Failures come through the port; the event would otherwise crash this process.
  worker.on("error", () => {});
  worker.unref();
  let waited = 0;
  let seriesMs = 0;
  try {
    // The price series (the wallet models' marks and 24-hour moves), read here while the worker
    // sorts every fill by wallet, and moved to it without a copy.
    const seriesFrom = performance.now();
    const series = readPriceSeries(db);
    port1.postMessage({ series }, seriesBuffers(series));
    Atomics.store(signal, SERIES, 1);
    Atomics.notify(signal, SERIES);
    seriesMs = performance.now() - seriesFrom;
    for (;;) {
      const posted = Atomics.load(signal, POSTED);
      const received = receiveMessageOnPort(port1);
      if (received === undefined) {
        const from = performance.now();
        Atomics.wait(signal, POSTED, posted);
        waited += performance.now() - from;
        continue;
      }
      const message = received.message as WorkerMessage;
      if ("rows" in message) {
        write(message.rows, message.pack);
        Atomics.add(signal, TAKEN, 1);
        Atomics.notify(signal, TAKEN);
      } else if ("error" in message) {
        throw new Error(`the full rebuild's model worker failed: ${message.error}`);
      } else {
        return { ...message.done, waitedMs: Math.round(waited), seriesMs: Math.round(seriesMs) };
      }
    }
  } finally {
    Atomics.store(signal, CANCELLED, 1);
    Atomics.notify(signal, TAKEN);
    Atomics.notify(signal, SERIES);
    port1.close();
    void worker.terminate();
  }
}

/** Coordinated pairs being read in a worker thread (coordinatedPairsInWorker). */
export interface PendingPairs {
  /** Waits (blocking this thread) for the pairs; throws the worker's error. Once. */
  take(): CoordinatedPair[];
  /** Stops the worker, if it is still running: the pairs are not wanted. */
  cancel(): void;
}

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
  const shared = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const signal = new Int32Array(shared);
  const { port1, port2 } = new MessageChannel();
  const { entry } = workerEntry();
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: {
      task: "timing",
      path: db.path,
      shared,
      port: port2,
      nativeFile: nativeBindingFile(),
      entry,
    },
    transferList: [port2],
  });
  worker.on("error", () => {}); // failures come through the port
  worker.unref();
  let done = false;
  const cancel = () => {
    if (done) return;
    done = true;
    port1.close();
    void worker.terminate();
  };
  return {
    take() {
      if (done) throw new Error("the coordinated pairs were already taken");
      try {
        for (;;) {
          const posted = Atomics.load(signal, POSTED);
          const received = receiveMessageOnPort(port1);
          if (received !== undefined) {
            const message = received.message as TimingMessage;
            if ("error" in message) {
              throw new Error(`the coordinated-timing worker failed: ${message.error}`);
            }
            return message.pairs;
          }
          if (posted > 0) throw new Error("the coordinated-timing worker ended without its pairs");
          Atomics.wait(signal, POSTED, 0);
        }
      } finally {
        cancel();
      }
    },
    cancel,
  };
}
