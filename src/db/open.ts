import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { nativeBinding } from "./native";
import { createStorageWatch, isStorageFull, type StorageWatch } from "./storage";
import { retryWhileBusy } from "./write-when-free";

export type Connection = Database.Database;
export type Statement<P extends unknown[] | object = unknown[], R = unknown> = Database.Statement<
  P extends unknown[] ? P : [P],
  R
>;

/**
 * One writer connection and one read-only connection on the same file. Node runs one request at a
 * time, so a single reader suffices; opening it read-only makes an accidental write from a
 * request handler fail loudly instead of racing the writer.
 *
 * `limits` is a second, small database beside the main one (`<db>.limits`) that holds only the
 * rate-limit ledger: the request thread writes it on every counted call, and a write there must
 * never queue behind a long write transaction of the main database (a refresh, an import).
 * It is opened on first use, so commands that never count calls never create it.
 *
 * Statements on these connections bind values the planner might read as `+?` (`= +?`,
 * `LIMIT +?`, `+@name`): better-sqlite3 clears bindings after each run, which makes SQLite
 * prepare again any statement whose plan looked at a bound value (docs/architecture.md, "Bound
 * parameters the planner reads"; test/db/statement-reprepare.test.ts
 * catches them; `npm run reprepares` lists them in a running process).
 */
export interface Db {
  writer: Connection;
  reader: Connection;
  readonly limits: Connection;
  path: string;
  /** Whether the disk holding it has room: every writer reports to it (src/db/storage.ts). */
  storage: StorageWatch;
  /**
   * Work a worker thread still does on this database for this process, left to finish on its
   * own (a WAL checkpoint after a refresh, src/refresh/workers/one-shot.ts): close() waits for it
   * first, so that its own checkpoint can fold the WAL into the file.
   */
  readonly background: Set<BackgroundWork>;
  close(): void;
}

/** Work going on in a worker thread (Db.background). */
export interface BackgroundWork {
  /** Whether it has ended. */
  ended(): boolean;
  /** Blocks until it has ended. */
  wait(): void;
}

/** Files holding customers' data are the owner's alone: callback URLs carry tokens. */
export const PRIVATE_FILE_MODE = 0o600;

/** The rate-limit database that belongs to a database file. */
export function limitsPath(path: string): string {
  return path === ":memory:" ? path : `${path}.limits`;
}

/**
 * Creates `path` empty and owner-only when it does not exist yet. SQLite then gives the -wal and
 * -shm files it creates the same mode as the database file, whatever the umask.
 */
export function createPrivateFile(path: string): void {
  if (path === ":memory:") return;
  closeSync(openSync(path, "a", PRIVATE_FILE_MODE));
}

export function openConnection(
  path: string,
  options: { readonly?: boolean; pageSize?: number } = {},
): Connection {
  const binding = nativeBinding();
  const connection = new Database(path, {
    readonly: options.readonly ?? false,
    fileMustExist: options.readonly ?? false,
    ...(binding ? { nativeBinding: binding as unknown as string } : {}),
  });
  try {
    configure(connection, options);
  } catch (error) {
    // A full disk can refuse the WAL switch of a new file: no half-set-up connection stays open.
    connection.close();
    throw error;
  }
  return connection;
}

function configure(connection: Connection, options: { readonly?: boolean; pageSize?: number }) {
  // busy_timeout first, so every later pragma (and the WAL switch) waits instead of failing
  // while another process holds a lock.
  connection.pragma("busy_timeout = 5000");
  if (!options.readonly) {
    // Only a new, empty database takes a page size; it must come before the switch to WAL.
    if (options.pageSize) connection.pragma(`page_size = ${options.pageSize}`);
    switchToWal(connection);
    connection.pragma("foreign_keys = ON");
  }
  // NORMAL is durable in WAL mode except for the last transactions before a power loss.
  connection.pragma("synchronous = NORMAL");
  connection.pragma("cache_size = -65536");
  connection.pragma("temp_store = MEMORY");
  connection.pragma("mmap_size = 268435456");
}

/** How long opening a database waits for another process's switch of it to WAL. */
const WAL_SWITCH_WAIT_MS = 5_000;

/**
 * `PRAGMA journal_mode = WAL`, waiting while another process holds the lock. The busy timeout
 * does not cover this: the pragma reads the file before it asks for the write lock, and SQLite
 * never waits for a write lock from inside a read (it could deadlock), so it answers SQLITE_BUSY
 * at once. Two processes opening a new file together (two `serve`s taking their first counted
 * call on a new `<db>.limits`) met that, and one request answered 500.
 */
function switchToWal(connection: Connection): void {
  retryWhileBusy(() => connection.pragma("journal_mode = WAL"), WAL_SWITCH_WAIT_MS);
}

/**
 * `PRAGMA temp_store`'s value for temporary files: a sort larger than the page cache writes its
 * sorted runs to disk instead of holding every entry in the heap, as the connection's MEMORY
 * does. Bulk work (migrations, the full refresh, an empty store's index build) sorts this way.
 */
export const TEMP_STORE_FILE = 1;

/**
 * Sets pragmas on a connection for a while (a bulk file, a full refresh) and returns what puts
 * their previous values back: each setting is read before it is changed.
 */
export function overridePragmas(
  connection: Connection,
  settings: Record<string, number>,
): () => void {
  const previous = Object.keys(settings).map(
    (name) => [name, connection.pragma(name, { simple: true }) as number] as const,
  );
  for (const [name, value] of Object.entries(settings)) connection.pragma(`${name} = ${value}`);
  return () => {
    for (const [name, value] of previous) connection.pragma(`${name} = ${value}`);
  };
}

/** Opens the database for a process: creates the folder and file on first use. */
export function openDb(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  createPrivateFile(path);
  const writer = openConnection(path);
  const reader = path === ":memory:" ? writer : openConnection(path, { readonly: true });
  let limits: Connection | undefined;
  const background = new Set<BackgroundWork>();
  return {
    writer,
    reader,
    get limits() {
      if (!limits) {
        createPrivateFile(limitsPath(path));
        // Small pages: each counted call commits a few of them to the WAL.
        limits = openConnection(limitsPath(path), { pageSize: 1024 });
      }
      return limits;
    },
    path,
    storage: createStorageWatch(),
    background,
    close() {
      for (const work of background) work.wait();
      background.clear();
      if (reader !== writer && reader.open) reader.close();
      if (limits?.open) {
        checkpointUnlessFull(limits);
        limits.close();
      }
      if (writer.open) {
        // Fold the WAL back into the main file so a copied database is complete. Without
        // waiting: a reader that stays (Litestream holds one while it replicates) would
        // otherwise hold every exit for the whole busy timeout, and the checkpoint is then
        // Litestream's to do.
        writer.pragma("busy_timeout = 0");
        checkpointUnlessFull(writer);
        writer.close();
      }
    },
  };
}

/**
 * A checkpoint copies the WAL into the main file, which may need room the disk no longer has.
 * Then the WAL stays as it is, complete, and the next open (or Litestream) folds it in: closing
 * must not fail for it, or a command on a full disk would end on the checkpoint's error.
 */
function checkpointUnlessFull(connection: Connection): void {
  try {
    connection.pragma("wal_checkpoint(TRUNCATE)");
  } catch (error) {
    if (!isStorageFull(error)) throw error;
  }
}
