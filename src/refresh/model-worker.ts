/**
 * The module every refresh worker thread loads (its source, or its bundle in the binary), one
 * file a kind of worker in workers/: the full rebuild's models (full.ts: two workers, the wallet
 * pass and the market pass), the incremental refresh's wallet step (incremental.ts), the funding
 * graph's coordinated timing and a large commit's WAL checkpoint (one-shot.ts), and what they
 * share: the counters, the messages and how a thread starts (threads.ts).
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

// What the bootstrap calls in the worker (workers/threads.ts), and what the build bundles.
export { runModelWorker } from "./workers/full";
export { runIncrementalWorker } from "./workers/incremental";
export { runOneShotWorker } from "./workers/one-shot";
export { MODEL_WORKER_ASSET } from "./workers/threads";
