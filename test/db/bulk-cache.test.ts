import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bulkCacheMb, withCacheMb } from "../../src/db/cache";
import { openConnection } from "../../src/db/open";

const GB = 2 ** 30;

describe("the bulk writer's page cache", () => {
  it("is a quarter of the memory cap, at most a quarter of the machine, at least the default", () => {
    expect(bulkCacheMb(1024, 16 * GB)).toBe(256);
    expect(bulkCacheMb(8192, 4 * GB)).toBe(1024);
    expect(bulkCacheMb(512, 64 * GB)).toBe(128);
    expect(bulkCacheMb(256, 64 * GB)).toBe(64);
    expect(bulkCacheMb(1024, 128 * 2 ** 20)).toBe(64);
  });

  it("is set for the work, with the memory map off, and put back after it, also when the work fails", async () => {
    // A file: an in-memory database has no memory map.
    const dir = mkdtempSync(join(tmpdir(), "smartmoney-bulk-cache-"));
    const db = openConnection(join(dir, "cache.db"));
    const before = db.pragma("cache_size", { simple: true });
    const mapped = db.pragma("mmap_size", { simple: true });
    expect(mapped).toBeGreaterThan(0);
    let during: unknown[] = [];
    await withCacheMb(db, 300, async () => {
      during = [
        db.pragma("cache_size", { simple: true }),
        db.pragma("mmap_size", { simple: true }),
      ];
    });
    expect(during).toEqual([-300 * 1024, 0]);
    await expect(
      withCacheMb(db, 200, async () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(db.pragma("cache_size", { simple: true })).toBe(before);
    expect(db.pragma("mmap_size", { simple: true })).toBe(mapped);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
