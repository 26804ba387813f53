import { DEFAULT_CACHE_MB } from "../db/cache";
import { type Connection, overridePragmas, type Statement, TEMP_STORE_FILE } from "../db/open";
import { FillKeyTable } from "./fill-key-table";

/**
 * An import into an empty fill store builds `fills_by_tx` and `fills_by_time` after the load
 * instead of inserting into them fill by fill (docs/architecture.md, "An empty store's fill
 * indexes built after the load").
 *
 * Inside the file's transaction the two indexes are dropped, and created again just before the
 * commit, so a refused or killed file leaves them as they were (SQLite's schema changes are
 * part of the transaction). Nothing in an import reads them but the duplicate check, which
 * reads a `FillKeyTable` of the fills the file stored meanwhile: in an empty store those are
 * all the fills there are. `fills_by_wallet` and `fills_by_market` stay, because signal
 * detection reads them as the file loads.
 *
 * The table takes 8 bytes a slot, at most three quarters full. When it would outgrow its
 * bound, the indexes are built there and then, and the rest of the file takes the usual path.
 * A build sorts with SQLite's sorter, which holds as much as the page cache in memory, so the
 * cache is the default one while it runs: the bulk cache's 256 MB (of the default cap) would
 * be held twice, with the key table on top. And it sorts through temporary files: with the
 * connection's `temp_store = MEMORY` the sorter never writes a run out, and holds every entry
 * of the index (10M on the large seed) in the C heap, which keeps the memory after the build
 * (both measured when this was built; the figures are in its commit message).
 */
export interface DeferredFillIndexes {
  /** Whether the indexes are still deferred: the duplicate check must ask `find`. */
  readonly active: boolean;
  /** The id of the fill this file stored under the key, or undefined. Only while active. */
  find(hash: Buffer, logIndex: number): number | undefined;
  /** Records a fill just stored. Builds the indexes when the table reaches its bound. */
  add(hash: Buffer, logIndex: number, id: number): void;
  /** Creates the deferred indexes (before the commit); a no-op once they are built. */
  build(): void;
}

/** Whether the connection's temporary database (`temp`) is open: SQLite lists it once it is. */
function temporaryDatabaseOpen(connection: Connection): boolean {
  return (
    connection
      .prepare("SELECT count(*) FROM pragma_database_list WHERE name = 'temp'")
      .pluck()
      .get() === 1
  );
}

/** The indexes deferred, in the order they are created again. */
const DEFERRED = ["fills_by_tx", "fills_by_time"] as const;

/**
 * Defers the indexes when the store holds no fill, else returns null. Call inside the file's
 * transaction, before any statement of the import is prepared. `maxTableBytes` bounds the key
 * table.
 */
export function deferFillIndexes(
  writer: Connection,
  maxTableBytes: number,
): DeferredFillIndexes | null {
  if (!writer.inTransaction) throw new Error("deferFillIndexes runs inside the file's transaction");
  const empty = writer.prepare("SELECT NOT EXISTS (SELECT 1 FROM fills)").pluck().get() === 1;
  if (!empty) return null;
  const schema = writer.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?");
  const creates = DEFERRED.map((name) => {
    const sql = schema.pluck().get(name) as string | undefined;
    if (sql === undefined) throw new Error(`index ${name} is missing from the schema`);
    return { name, sql };
  });
  for (const { name } of creates) writer.exec(`DROP INDEX ${name}`);

  // The largest table within the bound, in slots (a power of two), and the keys it may hold.
  const maxSlots =
    2 ** Math.floor(Math.log2(Math.max(16, maxTableBytes / FillKeyTable.bytesFor(1))));
  const maxKeys = Math.floor((maxSlots * 3) / 4);
  let table: FillKeyTable | null = new FillKeyTable();
  const hasKey = writer
    .prepare("SELECT tx_hash = ? AND log_index = ? FROM fills WHERE id = ?")
    .pluck() as Statement<[Buffer, number, number], number>;

  const build = () => {
    if (table === null) return;
    table.release();
    table = null;
    const restore = overridePragmas(writer, {
      cache_size: -DEFAULT_CACHE_MB * 1024,
      // temp_store can change inside a transaction only while the connection's temporary
      // database is closed. A connection that has opened it (the funding graph's temporary
      // tables, in a process that refreshed before this import) sorts in memory, as before.
      ...(temporaryDatabaseOpen(writer) ? {} : { temp_store: TEMP_STORE_FILE }),
    });
    try {
      for (const { sql } of creates) writer.exec(sql);
    } finally {
      restore();
    }
  };

  return {
    get active() {
      return table !== null;
    },
    find(hash, logIndex) {
      if (table === null) throw new Error("the fill indexes are built: look fills up in them");
      return table.find(hash, logIndex, (id) => hasKey.get(hash, logIndex, id) === 1);
    },
    add(hash, logIndex, id) {
      if (table === null) return;
      // Full, or an id past the table's 31 bits (not met: ids count from 1 in an empty store).
      if (table.size >= maxKeys || id > 0x7fffffff) return build();
      table.add(hash, logIndex, id);
    },
    build,
  };
}
