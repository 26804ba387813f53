import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/open";
import { refreshNow } from "../../src/jobs/refresh";
import { refreshReadModels } from "../../src/refresh/refresh";
import { createTestApp, type TestApp } from "../helpers/app";

let t: TestApp;
let key: string;
beforeAll(() => {
  t = createTestApp();
  key = t.key("terminal_pro");
});
afterAll(() => t.close());

const AS_OF = "x-read-model-as-of";
const AGE = "x-read-model-age";
const DATA = "/v1/leaderboards/whales";

describe("read-model age headers", () => {
  it("are absent before the first refresh", async () => {
    const res = await t.get(DATA, key);
    expect(res.status).toBe(200);
    expect(res.headers.get(AS_OF)).toBeNull();
    expect(res.headers.get(AGE)).toBeNull();
  });

  it("carry the refresh's as-of and the seconds since, on data answers only", async () => {
    const refreshedAt = t.clock.now();
    refreshNow(t.app);
    t.clock.advance(90_500);
    const res = await t.get(DATA, key);
    expect(res.headers.get(AS_OF)).toBe(new Date(refreshedAt).toISOString());
    expect(res.headers.get(AGE)).toBe("90");
    // An error answer from a data route says it too: the caller learns how stale "not found" is.
    const missing = await t.get(`/v1/wallets/0x${"1".repeat(40)}`, key);
    expect(missing.status).toBe(404);
    expect(missing.headers.get(AS_OF)).toBe(new Date(refreshedAt).toISOString());
    for (const path of ["/v1/_ping", "/v1/webhooks"]) {
      const other = await t.get(path, key);
      expect(other.status).toBe(200);
      expect(other.headers.get(AS_OF)).toBeNull();
    }
  });

  it("follow a refresh another process made once the server syncs, dropping cached answers", async () => {
    const before = t.app.generation;
    const elsewhere = openDb(t.db.path);
    const theirs = t.clock.now();
    try {
      refreshReadModels(elsewhere, theirs);
    } finally {
      elsewhere.close();
    }
    t.app.syncReadModels();
    expect(t.app.generation).toBe(before + 1);
    const res = await t.get(DATA, key);
    expect(res.headers.get(AS_OF)).toBe(new Date(theirs).toISOString());
    expect(res.headers.get(AGE)).toBe("0");
    // Nothing new: no new generation.
    t.app.syncReadModels();
    expect(t.app.generation).toBe(before + 1);
  });
});
