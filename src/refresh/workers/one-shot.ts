/** One-shot workers: the funding graph's coordinated pairs, and a large commit's WAL checkpoint. */
import { existsSync } from "node:fs";
import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import { loadNativeBinding } from "../../db/native";
import { type Db, openConnection, overridePragmas } from "../../db/open";
import { type CoordinatedPair, readCoordinatedPairs } from "../../funding/timing";
import { EVENTS, errorText, SLOTS, startWorker } from "./threads";

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
