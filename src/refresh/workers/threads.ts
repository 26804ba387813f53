/**
 * What the refresh's worker threads share (docs/architecture.md, "The full rebuild's model
 * worker"): the counters in shared memory through which a worker and the writer pace each
 * other, how a worker posts and the writer takes messages, and how a worker thread is started on
 * the worker module (src/refresh/model-worker.ts: its source, or its bundle in the binary).
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import { nativeBindingFile } from "../../db/native";
import type { Db } from "../../db/open";
import { LOAD_ENTRY, workerEntry } from "../../workers/entry";
import type { OneShotTask } from "./one-shot";

/** Name of the SEA asset holding the worker module's bundle (build/build-binary.ts). */
export const MODEL_WORKER_ASSET = "model-worker.cjs";
/** The module a worker thread loads from a checkout (in the binary: its bundle, the asset above). */
const WORKER_MODULE = new URL("../model-worker.ts", import.meta.url).href;

/**
 * Messages a worker may have posted that the writer has not taken yet. The market pass's may
 * run further ahead (512 messages of hours, about 37 MB at most): the writer builds the wallet
 * tables' indexes between its messages, each for up to a second or two, and the market pass
 * goes on meanwhile.
 */
export const MAX_IN_FLIGHT: Record<StreamingTask, number> = {
  wallets: 16,
  markets: 512,
  incremental: 16,
};

/**
 * Slots of the shared counters. EVENTS moves on every message any worker posts: the writer
 * sleeps on it. Each model worker counts its own messages posted and taken.
 */
export const EVENTS = 0;
export const CANCELLED = 1;
/** 1 once the writer has posted the price series to the wallet worker. */
export const SERIES = 2;
/** 1 once the writer has posted the wallet pass's standings to the market worker. */
export const STANDING = 3;
export const WALLETS_POSTED = 4;
export const WALLETS_TAKEN = 5;
export const MARKETS_POSTED = 6;
export const MARKETS_TAKEN = 7;
export const SLOTS = 8;

export type ModelTask = "wallets" | "markets";
/** The tasks that stream messages to the writer: the full rebuild's and the incremental's. */
export type StreamingTask = ModelTask | "incremental";

// The incremental refresh's one worker counts in the wallet pass's slots: the two never share
// a set of counters.
export const COUNTERS: Record<StreamingTask, { posted: number; taken: number }> = {
  wallets: { posted: WALLETS_POSTED, taken: WALLETS_TAKEN },
  markets: { posted: MARKETS_POSTED, taken: MARKETS_TAKEN },
  incremental: { posted: WALLETS_POSTED, taken: WALLETS_TAKEN },
};

/** Thrown in a worker when the writer gave up (an error of its own): nothing more is read. */
export class Cancelled extends Error {}

/** An error as a worker sends it to the thread that started it: its stack, which names it. */
export function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * Lowers the calling thread to the lowest CPU priority (niceness 19), and with it the sort's
 * helper threads, which start from it. Linux keeps a niceness per thread; elsewhere, or when
 * refused, nothing changes.
 */
export function lowerThisThreadsPriority(): void {
  try {
    // "/proc/thread-self" links to "<pid>/task/<tid>".
    const thread = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(thread) && thread > 0) setPriority(thread, 19);
  } catch {}
}

/** Sleeps until `slot` is set to 1 by the writer, or the writer gives up. */
export function waitForFlag(signal: Int32Array, slot: number): void {
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
export function poster<M>(signal: Int32Array, port: MessagePort, task: StreamingTask) {
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
export function takeMessages<M, R>(
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
export function acknowledge(signal: Int32Array, task: StreamingTask): void {
  const { taken } = COUNTERS[task];
  Atomics.add(signal, taken, 1);
  Atomics.notify(signal, taken);
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
export function startWorker(
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
      entry: workerEntry(MODEL_WORKER_ASSET, WORKER_MODULE, "the refresh's model worker"),
    },
    transferList: [port2],
  });
  worker.on("error", () => {});
  worker.unref();
  return { port: port1, worker };
}
