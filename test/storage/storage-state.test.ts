import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  createStorageWatch,
  FIRST_RETRY_MS,
  isStorageFull,
  LONGEST_RETRY_MS,
  type StorageEvent,
  StorageFullError,
  sqliteTempDir,
} from "../../src/db/storage";

/** Later than the other process's "since" below. */
const T = Date.parse("2026-11-25T10:00:00.000Z");
const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });

describe("sqliteTempDir", () => {
  it("follows SQLite's rule on unix: the first writable folder of SQLITE_TMPDIR, TMPDIR, /var/tmp", () => {
    const mine = mkdtempSync(join(tmpdir(), "smartmoney-sqlite-tmp-"));
    try {
      expect(sqliteTempDir({ SQLITE_TMPDIR: mine, TMPDIR: "/tmp" })).toBe(mine);
      expect(sqliteTempDir({ TMPDIR: mine })).toBe(mine);
      // A folder that is not there, or a file, is skipped, as SQLite skips it.
      expect(sqliteTempDir({ SQLITE_TMPDIR: join(mine, "gone"), TMPDIR: mine })).toBe(mine);
      writeFileSync(join(mine, "file"), "");
      expect(sqliteTempDir({ SQLITE_TMPDIR: join(mine, "file"), TMPDIR: mine })).toBe(mine);
      expect(sqliteTempDir({ SQLITE_TMPDIR: "", TMPDIR: "" })).toBe("/var/tmp");
    } finally {
      rmSync(mine, { recursive: true, force: true });
    }
  });
});

describe("isStorageFull", () => {
  it("knows SQLite's full-disk codes, the errno of a file write, and wrapped ones; nothing else", () => {
    for (const code of [
      "SQLITE_FULL",
      "SQLITE_IOERR_WRITE",
      "SQLITE_IOERR_SHMSIZE",
      "ENOSPC",
      "EDQUOT",
    ]) {
      expect(isStorageFull(Object.assign(new Error(code), { code }))).toBe(true);
    }
    expect(isStorageFull(new Error("wrapped", { cause: full }))).toBe(true);
    expect(isStorageFull(new StorageFullError("x"))).toBe(true);
    for (const code of ["SQLITE_BUSY", "SQLITE_IOERR_READ", "SQLITE_CONSTRAINT", "EACCES", 28]) {
      expect(isStorageFull(Object.assign(new Error("e"), { code }))).toBe(false);
    }
    expect(isStorageFull(null)).toBe(false);
    expect(isStorageFull("SQLITE_FULL")).toBe(false);
  });

  it("matches what better-sqlite3 raises when max_page_count is reached", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (x BLOB)");
    db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true })}`);
    let error: unknown;
    try {
      db.prepare("INSERT INTO t VALUES (randomblob(100000))").run();
    } catch (e) {
      error = e;
    }
    expect((error as { code: string }).code).toBe("SQLITE_FULL");
    expect(isStorageFull(error)).toBe(true);
    db.close();
  });
});

describe("the storage watch", () => {
  function watch() {
    let now = T;
    const storage = createStorageWatch(() => now);
    const events: StorageEvent[] = [];
    storage.onChange((e) => events.push(e));
    return {
      storage,
      events,
      at: (ms: number) => {
        now = ms;
      },
    };
  }

  it("is full from the first writer that meets a full disk until the last one writes again, with one event each way", () => {
    const { storage, events, at } = watch();
    expect(storage.status()).toEqual({ state: "ok" });
    expect(storage.failed("refresh", new Error("other"))).toBe(false);
    expect(storage.status()).toEqual({ state: "ok" });

    expect(storage.failed("refresh", full, { retries: true })).toBe(true);
    at(T + 1_000);
    expect(storage.failed("ingest", full, { retries: true })).toBe(true);
    expect(storage.status()).toEqual({
      state: "full",
      since: new Date(T).toISOString(),
      writers: ["ingest", "refresh"],
    });
    storage.succeeded("refresh");
    expect(storage.status()).toMatchObject({ state: "full", writers: ["ingest"] });
    storage.succeeded("deliveries"); // never blocked: changes nothing
    at(T + 4_000);
    storage.succeeded("ingest");
    expect(storage.status()).toEqual({ state: "ok" });
    expect(events).toEqual([
      { kind: "full", writer: "refresh", since: T, error: full },
      { kind: "writable", writer: "ingest", fullForMs: 4_000 },
    ]);
  });

  it("lets a blocked background writer retry on a doubling backoff, and holds the others until it has written", () => {
    const { storage, at } = watch();
    storage.failed("refresh", full, { retries: true });
    expect(storage.mayWrite("refresh")).toBe(false);
    expect(storage.mayWrite("ingest")).toBe(false);
    expect(storage.retryIn("refresh")).toBe(FIRST_RETRY_MS);
    expect(storage.retryIn("ingest")).toBe(null);
    at(T + FIRST_RETRY_MS);
    expect(storage.mayWrite("refresh")).toBe(true);
    let delay = FIRST_RETRY_MS;
    for (let i = 0; i < 10; i++) {
      storage.failed("refresh", full, { retries: true });
      delay = Math.min(delay * 2, LONGEST_RETRY_MS);
      expect(storage.retryIn("refresh")).toBe(delay);
    }
    expect(delay).toBe(LONGEST_RETRY_MS);
    storage.succeeded("refresh");
    expect(storage.mayWrite("ingest")).toBe(true);
  });

  it("goes on from the last wait when a writer meets the full disk again soon after it wrote", () => {
    const { storage, at } = watch();
    storage.failed("deliveries", full, { retries: true });
    at(T + FIRST_RETRY_MS);
    storage.failed("deliveries", full, { retries: true });
    expect(storage.retryIn("deliveries")).toBe(2 * FIRST_RETRY_MS);
    // A probe fitted in the last free pages; the next write did not.
    at(T + 3 * FIRST_RETRY_MS);
    storage.succeeded("deliveries");
    storage.failed("deliveries", full, { retries: true });
    expect(storage.retryIn("deliveries")).toBe(4 * FIRST_RETRY_MS);
    // Long after it wrote again, a full disk is a new episode: the first wait again.
    storage.succeeded("deliveries");
    at(T + 3 * FIRST_RETRY_MS + LONGEST_RETRY_MS);
    storage.failed("deliveries", full, { retries: true });
    expect(storage.retryIn("deliveries")).toBe(FIRST_RETRY_MS);
  });

  it("does not hold background writers for a request writer, which retries with its next request", () => {
    const { storage } = watch();
    expect(() =>
      storage.write("rate limits", () => {
        throw full;
      }),
    ).toThrow(StorageFullError);
    expect(storage.status()).toMatchObject({ state: "full", writers: ["rate limits"] });
    expect(storage.mayWrite("refresh")).toBe(true);
    expect(storage.mayWrite("rate limits")).toBe(true);
    expect(storage.write("rate limits", () => 7)).toBe(7);
    expect(storage.status()).toEqual({ state: "ok" });
    expect(() =>
      storage.write("rate limits", () => {
        throw new TypeError("a bug");
      }),
    ).toThrow(TypeError);
    expect(storage.status()).toEqual({ state: "ok" });
  });

  it("merges another process's state into status, but reports only its own", () => {
    const { storage } = watch();
    storage.setRemote("jobs", {
      state: "full",
      since: "2026-11-25T09:00:00.000Z",
      writers: ["refresh"],
    });
    storage.failed("rate limits", full);
    expect(storage.status()).toEqual({
      state: "full",
      since: "2026-11-25T09:00:00.000Z",
      writers: ["rate limits", "refresh"],
    });
    expect(storage.ownStatus()).toEqual({
      state: "full",
      since: new Date(T).toISOString(),
      writers: ["rate limits"],
    });
    storage.succeeded("rate limits");
    storage.setRemote("jobs", null);
    expect(storage.status()).toEqual({ state: "ok" });
  });
});
