import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FIRST_RETRY_MS } from "../../src/db/storage";
import { drainJob } from "../../src/jobs/drain";
import { jobTick } from "../../src/jobs/scheduler";
import { DRAIN_WRITER } from "../../src/webhooks/drainer";
import { createTestApp, type TestApp } from "../helpers/app";
import {
  accountWithKey,
  type Receiver,
  seedMarkets,
  signalOn,
  startReceiver,
} from "../webhooks/world";

/**
 * Webhook bookkeeping on a full disk (SQLite's max_page_count on the writer, as in
 * serve-full.test.ts): an attempt whose outcome cannot be recorded would be sent again and
 * again, so the drainer stops claiming, and each retry sends a single delivery as the probe.
 */
const TIMEOUT_MS = 5_000;
const LEASE_MS = TIMEOUT_MS + 30_000;
const START = Date.parse("2026-11-25T10:00:00.000Z");
const ENDPOINTS = 20;
const SIGNALS = 12;

let t: TestApp;
let receiver: Receiver;
beforeEach(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(START);
  t = createTestApp({
    env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", SMARTMONEY_WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms` },
  });
  seedMarkets(t);
  receiver = await startReceiver();
});
afterEach(async () => {
  await receiver.close();
  t.close();
  vi.useRealTimers();
});

const statuses = () =>
  Object.fromEntries(
    t.db.reader
      .prepare("SELECT status, count(*) AS n FROM deliveries GROUP BY status")
      .raw()
      .all() as [string, number][],
  );

describe("webhook deliveries on a full disk", () => {
  it("stop being claimed, send one probe per retry, and all go out once there is room", async () => {
    for (let i = 0; i < ENDPOINTS; i++) {
      const account = accountWithKey(t, `tenant-${i}`);
      const created = t.app.webhooks.endpoints.create({
        accountId: account.id,
        tier: "terminal",
        channel: "api",
        callbackUrl: receiver.url(),
      });
      if (!created.ok) throw new Error(created.reason);
    }
    for (let i = 0; i < SIGNALS; i++) t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    const total = ENDPOINTS * SIGNALS;
    expect(statuses()).toEqual({ pending: total });

    t.db.writer.exec("VACUUM");
    t.db.writer.pragma(`max_page_count = ${t.db.writer.pragma("page_count", { simple: true })}`);
    const storage = t.db.storage;
    const drain = () => t.app.webhooks.drainer.drainOnce();

    // The first round meets the full disk: leasing the deliveries (a claim writes) or recording
    // the outcomes of those sent.
    await drain();
    expect(storage.status()).toMatchObject({ state: "full", writers: [DRAIN_WRITER] });
    const firstRound = receiver.received.length;
    expect(t.db.reader.pragma("integrity_check", { simple: true })).toBe("ok");

    // Until the retry is due nothing is claimed, even once the leases have lapsed.
    t.clock.advance(LEASE_MS + 1);
    expect((await drain()).claimed).toBe(0);
    expect(receiver.received).toHaveLength(firstRound);

    // The retry, as the server's scheduled tick makes it, sends one delivery, the probe. The
    // tick only claims it: whether its outcome could be stored is the drainer's to say.
    vi.setSystemTime(START + FIRST_RETRY_MS);
    const drainer = t.app.webhooks.drainer;
    const tick = jobTick(drainJob(t.app), t.app.deps.log, storage);
    expect(await tick()).toBe(true);
    expect(storage.status()).toMatchObject({ state: "full", writers: [DRAIN_WRITER] });
    await tick(); // while the probe is out, nothing more is claimed
    await drainer.stop(); // waits for the probe's outcome
    expect(receiver.received).toHaveLength(firstRound + 1);
    // Space is freed: the next retry goes through, the state clears, and every delivery goes out.
    t.db.writer.pragma("max_page_count = 1073741823");
    t.clock.advance(LEASE_MS + 1);
    vi.setSystemTime(START + 10 * 60_000);
    await drain();
    expect(storage.status()).toEqual({ state: "ok" });
    expect(statuses()).toEqual({ delivered: total });
    // At least once: an attempt whose outcome was lost is sent again, with the same id.
    const ids = receiver.received.map((r) => r.headers["x-service-delivery-id"]);
    expect(new Set(ids).size).toBe(total);
    const lines = t.logs.filter((l) => String(l.msg).startsWith("storage "));
    expect(lines[0]).toMatchObject({ level: "error", storage: "full", writer: DRAIN_WRITER });
    expect(lines.at(-1)).toMatchObject({ level: "info", storage: "ok", writer: DRAIN_WRITER });
  });
});
