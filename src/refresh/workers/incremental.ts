/** The incremental refresh's wallet worker (see model-worker.ts). */
import type { MessagePort } from "node:worker_threads";
import { loadNativeBinding } from "../../db/native";
import { type Connection, type Db, openConnection, overridePragmas } from "../../db/open";
import {
  type WalletChanges,
  type WalletTotals,
  type WalletUpdate,
  walletRecompute,
} from "../incremental-wallets";
import { contextFor } from "../pass";
import { type NewestFills, withStoredMarks } from "../prices";
import {
  acknowledge,
  CANCELLED,
  Cancelled,
  COUNTERS,
  errorText,
  poster,
  SLOTS,
  startWorker,
  takeMessages,
} from "./threads";

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
