import { describe, expect, it } from "vitest";
import { bulkCacheMb, withCacheMb } from "../../src/db/cache";
import { openConnection } from "../../src/db/open";

const GB = 2 ** 30;

describe("the bulk writer's page cache", () => {
  it("is half the memory cap, at most a quarter of the machine, at least the default", () => {
    expect(bulkCacheMb(1024, 16 * GB)).toBe(512);
    expect(bulkCacheMb(8192, 4 * GB)).toBe(1024);
    expect(bulkCacheMb(256, 64 * GB)).toBe(128);
    expect(bulkCacheMb(1024, 128 * 2 ** 20)).toBe(64);
  });

  it("is set for the work and put back after it, also when the work fails", async () => {
    const db = openConnection(":memory:");
    const before = db.pragma("cache_size", { simple: true });
    let during: unknown;
    await withCacheMb(db, 300, async () => {
      during = db.pragma("cache_size", { simple: true });
    });
    expect(during).toBe(-300 * 1024);
    await expect(
      withCacheMb(db, 200, async () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(db.pragma("cache_size", { simple: true })).toBe(before);
    db.close();
  });
});
