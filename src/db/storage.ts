import { accessSync, constants, statSync } from "node:fs";
import { ApiError } from "../errors";

/**
 * A full disk, as one state of the database rather than a stream of unrelated errors
 * (docs/operations.md, When the disk fills up).
 *
 * SQLite reports a write it could not make room for as SQLITE_FULL: the disk is full (unix
 * ENOSPC), or the connection's max_page_count is reached. Some writes surface it as an I/O error
 * instead: a write(2) that fails with EDQUOT (a quota, which is a full disk for this user) is
 * SQLITE_IOERR_WRITE, and the WAL index that cannot grow is SQLITE_IOERR_SHMSIZE. Files the
 * appliance writes itself (a backup, a key file) fail with the errno. Each of these rolls back
 * the statement or transaction that met it, and nothing on disk is half-written: SQLite's
 * journal guarantees the database, and the file writers write beside the target and rename.
 *
 * While any writer's last write failed this way, the storage is "full since T": one log line
 * when it begins, one when the last such writer has written again. Background writers (the
 * scheduled jobs, webhook bookkeeping) stop writing and retry on a backoff; a request that needs
 * a write is answered 503 `storage_full`; reads go on.
 */

const FULL_CODES = new Set([
  "SQLITE_FULL",
  "SQLITE_IOERR_WRITE",
  "SQLITE_IOERR_SHMSIZE",
  "ENOSPC",
  "EDQUOT",
]);

/**
 * Where SQLite writes its temporary files (a full refresh's sorts, index builds), by its own rule
 * on unix (os_unix.c, unixTempFileDir): the first of SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp,
 * /tmp and "." that is a directory this process can write into. A full disk there is
 * SQLITE_FULL as well, so the full-storage log line names it beside the database
 * (docs/operations.md, Disk).
 */
export function sqliteTempDir(env: NodeJS.ProcessEnv = process.env): string {
  const candidates = [env.SQLITE_TMPDIR, env.TMPDIR, "/var/tmp", "/usr/tmp", "/tmp"];
  for (const dir of candidates) {
    if (!dir) continue;
    try {
      if (!statSync(dir).isDirectory()) continue;
      accessSync(dir, constants.W_OK | constants.X_OK);
      return dir;
    } catch {
      // Missing or not writable: SQLite skips it too.
    }
  }
  return ".";
}

/** True when `error` (or an error it wraps) says the disk, or the database's size cap, is full. */
export function isStorageFull(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 4; depth++) {
    if (e instanceof StorageFullError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && FULL_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** What a caller is told: a 503 over HTTP, a tool error over MCP, one line from the CLI. */
export class StorageFullError extends ApiError {
  constructor(readonly writer: string) {
    super(
      "storage_full",
      `the disk holding the database is full: ${writer} could not be stored and nothing was written; reads go on, try again once space is freed`,
      503,
    );
  }
}

/** The storage as /healthz and `status` show it. `since` is ISO 8601; `writers` are blocked. */
export type StorageStatus = { state: "ok" } | { state: "full"; since: string; writers: string[] };

/** The first retry of a background writer after it met a full disk, then doubling to the cap. */
export const FIRST_RETRY_MS = 5_000;
export const LONGEST_RETRY_MS = 120_000;

interface Blocked {
  since: number;
  /** Null for request writers: the next request that needs the write is its retry. */
  retryAt: number | null;
  delayMs: number;
}

export type StorageEvent =
  | { kind: "full"; writer: string; since: number; error: unknown }
  | { kind: "writable"; writer: string; fullForMs: number };

export type StorageWatch = ReturnType<typeof createStorageWatch>;

/**
 * One per database (Db.storage). `now` is the wall clock: when the disk filled up is an operator's
 * fact, and the backoff runs in real time whatever clock the app's figures use.
 */
export function createStorageWatch(now: () => number = () => Date.now()) {
  const blocked = new Map<string, Blocked>();
  /** Another process's state (the jobs process `serve` runs, over its IPC channel), by name. */
  const remote = new Map<string, Extract<StorageStatus, { state: "full" }>>();
  const listeners = new Set<(event: StorageEvent) => void>();
  /** When each writer last wrote again after a full disk, and the wait it had reached. */
  const lastWait = new Map<string, { since: number; delayMs: number }>();
  let fullSince: number | null = null;

  const emit = (event: StorageEvent) => {
    for (const listener of listeners) listener(event);
  };

  /** Records a failed write; true when it was a full disk (the writer is then blocked). */
  function failed(writer: string, error: unknown, options: { retries?: boolean } = {}): boolean {
    if (!isStorageFull(error)) return false;
    const at = now();
    const held = blocked.get(writer);
    // A writer whose last wait ended moments ago (a probe fitted in the last free pages, the
    // next write did not) goes on from that wait: the state may flap, but never faster.
    const ended = lastWait.get(writer);
    const last = held ?? (ended && at - ended.since < LONGEST_RETRY_MS ? ended : undefined);
    const delayMs = last ? Math.min(last.delayMs * 2, LONGEST_RETRY_MS) : FIRST_RETRY_MS;
    blocked.set(writer, {
      since: held?.since ?? at,
      retryAt: options.retries ? at + delayMs : null,
      delayMs,
    });
    if (fullSince === null) {
      fullSince = at;
      emit({ kind: "full", writer, since: at, error });
    }
    return true;
  }

  /** Records a write that went through: the writer is no longer blocked. */
  function succeeded(writer: string): void {
    const held = blocked.get(writer);
    if (!held) return;
    blocked.delete(writer);
    lastWait.set(writer, { since: now(), delayMs: held.delayMs });
    if (blocked.size > 0 || fullSince === null) return;
    const fullForMs = now() - fullSince;
    fullSince = null;
    emit({ kind: "writable", writer, fullForMs });
  }

  return {
    failed,
    succeeded,

    /**
     * Runs one all-or-nothing write for `writer`. A full disk blocks the writer and is thrown as
     * StorageFullError; a write that goes through unblocks it.
     */
    write<T>(writer: string, work: () => T): T {
      let value: T;
      try {
        value = work();
      } catch (error) {
        if (failed(writer, error)) throw new StorageFullError(writer);
        throw error;
      }
      succeeded(writer);
      return value;
    },

    async writeAsync<T>(writer: string, work: () => Promise<T>): Promise<T> {
      let value: T;
      try {
        value = await work();
      } catch (error) {
        if (failed(writer, error)) throw new StorageFullError(writer);
        throw error;
      }
      succeeded(writer);
      return value;
    },

    /**
     * May a background writer write now? Always while the storage has room. While it is full,
     * only a writer that met the full disk itself, once its retry is due: the others wait for
     * the state to clear, so no job works for nothing and no webhook is sent whose outcome could
     * not be recorded.
     */
    mayWrite(writer: string, at = now()): boolean {
      if (fullSince === null) return true;
      const held = blocked.get(writer);
      if (!held) return ![...blocked.values()].some((b) => b.retryAt !== null);
      return held.retryAt === null || at >= held.retryAt;
    },

    /** Milliseconds until `writer`'s retry, or null when it is not waiting for one. */
    retryIn(writer: string, at = now()): number | null {
      const retryAt = blocked.get(writer)?.retryAt;
      return retryAt == null ? null : Math.max(0, retryAt - at);
    },

    /** This process's state merged with the other processes' it was told of. */
    status(): StorageStatus {
      let since = fullSince;
      const writers = [...blocked.keys()];
      for (const other of remote.values()) {
        const at = Date.parse(other.since);
        since = since === null ? at : Math.min(since, at);
        for (const writer of other.writers) if (!writers.includes(writer)) writers.push(writer);
      }
      if (since === null) return { state: "ok" };
      return { state: "full", since: new Date(since).toISOString(), writers: writers.sort() };
    },

    /** Only this process's state: what it reports to the process that started it. */
    ownStatus(): StorageStatus {
      if (fullSince === null) return { state: "ok" };
      return {
        state: "full",
        since: new Date(fullSince).toISOString(),
        writers: [...blocked.keys()].sort(),
      };
    },

    /** Another process's state, as it reported it; null or ok forgets it (it exited, or has room). */
    setRemote(name: string, status: StorageStatus | null): void {
      if (status?.state === "full") remote.set(name, status);
      else remote.delete(name);
    },

    onChange(listener: (event: StorageEvent) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
