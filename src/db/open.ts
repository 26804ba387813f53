import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { nativeBinding } from "./native";

export type Connection = Database.Database;
export type Statement<P extends unknown[] | object = unknown[], R = unknown> = Database.Statement<
  P extends unknown[] ? P : [P],
  R
>;

/**
 * One writer connection and one read-only connection on the same file. Node runs one request at a
 * time, so a single reader suffices; opening it read-only makes an accidental write from a
 * request handler fail loudly instead of racing the writer.
 */
export interface Db {
  writer: Connection;
  reader: Connection;
  path: string;
  close(): void;
}

export function openConnection(path: string, options: { readonly?: boolean } = {}): Connection {
  const binding = nativeBinding();
  const connection = new Database(path, {
    readonly: options.readonly ?? false,
    fileMustExist: options.readonly ?? false,
    ...(binding ? { nativeBinding: binding as unknown as string } : {}),
  });
  // busy_timeout first, so every later pragma (and the WAL switch) waits instead of failing
  // while another process holds a lock.
  connection.pragma("busy_timeout = 5000");
  if (!options.readonly) {
    connection.pragma("journal_mode = WAL");
    connection.pragma("foreign_keys = ON");
  }
  // NORMAL is durable in WAL mode except for the last transactions before a power loss.
  connection.pragma("synchronous = NORMAL");
  connection.pragma("cache_size = -65536");
  connection.pragma("temp_store = MEMORY");
  connection.pragma("mmap_size = 268435456");
  return connection;
}

/** Opens the database for a process: creates the folder and file on first use. */
export function openDb(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const writer = openConnection(path);
  const reader = path === ":memory:" ? writer : openConnection(path, { readonly: true });
  return {
    writer,
    reader,
    path,
    close() {
      if (reader !== writer && reader.open) reader.close();
      if (writer.open) {
        // Fold the WAL back into the main file so a copied database is complete. Without
        // waiting: a reader that stays (Litestream holds one while it replicates) would
        // otherwise hold every exit for the whole busy timeout, and the checkpoint is then
        // Litestream's to do.
        writer.pragma("busy_timeout = 0");
        writer.pragma("wal_checkpoint(TRUNCATE)");
        writer.close();
      }
    },
  };
}
