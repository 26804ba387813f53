import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { systemClock } from "../../src/clock";
import { loadConfig } from "../../src/config";
import { openDb } from "../../src/db/open";
import { loadInstallationKey } from "../../src/installation/key";
import { createLog } from "../../src/log";
import { migrate } from "../../src/migrations/migrate";
import { verifySignature } from "../../src/webhooks/signer";
import { runCli } from "../helpers/cli";
import { answer, type Receiver, sequence, startReceiver, WALLET_A, WALLET_B } from "./world";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-webhooks-cli-"));
const db = join(dir, "cli.db");

/**
 * The CLI in this process (test/helpers/cli.ts), against the test database; it is asynchronous,
 * so the receivers in this process keep answering while a command sends to them.
 */
function cli(args: string[]) {
  return runCli(args, {
    SMARTMONEY_DB: db,
    SMARTMONEY_LOG_LEVEL: "error",
    SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
    SMARTMONEY_WEBHOOK_TIMEOUT: "2s",
  });
}

async function json(args: string[]) {
  const res = await cli([...args, "--json"]);
  // A failure would be its one-line reason on stderr and exit 1.
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
}

/** Fires a whale signal on `wallet` the way ingest will: through the app's outbox. */
function fireSignal(wallet: string, tradeNo: number): number {
  const loaded = loadConfig({ SMARTMONEY_DB: db });
  if (!loaded.ok) throw new Error(loaded.problems.join("; "));
  const handle = openDb(db);
  try {
    migrate(handle.writer);
    const app = createApp({
      db: handle,
      config: loaded.config,
      clock: systemClock,
      log: createLog("silent"),
      fetch: globalThis.fetch,
      secretKey: loadInstallationKey(handle, {}).key,
    });
    const w = handle.writer;
    w.prepare(
      "INSERT OR IGNORE INTO markets (id, slug, title, category, condition_id) VALUES (1, 'm', 'M?', 'crypto', ?)",
    ).run(`0x${"c".repeat(64)}`);
    // Through the trades view, whose insert rowid SQLite does not report: the fill is the newest.
    w.prepare(
      "INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts) VALUES (?, 0, ?, 1, 'NO', 'SELL', 0.6, 30000, 18000, ?)",
    ).run(`0x${tradeNo.toString(16).padStart(64, "0")}`, wallet, Date.now());
    const { signalId } = app.webhooks.outbox.enqueueSignal({
      type: "whale",
      wallet,
      marketId: 1,
      tradeId: w.prepare("SELECT max(id) FROM fills").pluck().get() as number,
      score: 75,
      betValue: 18000,
      side: "SELL",
      outcome: "NO",
      price: 0.6,
      explanation: "An 18,000 USD sale.",
      createdAt: Date.now(),
    });
    app.close();
    return signalId;
  } finally {
    handle.close();
  }
}

let ok: Receiver;
let failing: Receiver;
beforeAll(async () => {
  ok = await startReceiver(answer(200));
  failing = await startReceiver(sequence([], 500));
});
afterAll(async () => {
  await Promise.all([ok.close(), failing.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe("webhooks, follows, lists and deliveries from the CLI", () => {
  let endpointId: string;
  let secret: string;

  it("adds a dashboard endpoint, prints its secret once, and never lists it", async () => {
    await json(["keys", "mint", "--tier", "terminal", "--account", "acme"]);
    const added = await json([
      "webhooks",
      "add",
      "--account",
      "acme",
      "--url",
      ok.url(),
      "--channel",
      "dashboard",
    ]);
    expect(added).toMatchObject({ account: "acme", channel: "dashboard", callback_url: ok.url() });
    expect(added.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    endpointId = added.id;
    secret = added.secret;
    const listed = await cli(["webhooks", "list", "--json"]);
    expect(listed.stdout).not.toContain(secret);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: endpointId, account: "acme", channel: "dashboard" }),
    ]);
    const bad = await cli([
      "webhooks",
      "add",
      "--account",
      "nobody",
      "--url",
      ok.url(),
      "--channel",
      "api",
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/no account named "nobody"/);
  });

  it("follows a wallet through a list, drains the alert and shows its attempt", async () => {
    expect(await json(["lists", "create", "whales"])).toMatchObject({
      slug: "whales",
      account: null,
    });
    expect(await json(["lists", "add", "whales", WALLET_A, WALLET_B])).toEqual({
      slug: "whales",
      added: 2,
    });
    expect(await json(["follows", "add", "--account", "acme", "--list", "whales"])).toMatchObject({
      changed: true,
    });
    const either = await cli(["follows", "add", "--account", "acme"]);
    expect(either.code).toBe(1);

    const signalId = fireSignal(WALLET_B, 1);
    expect(await json(["jobs", "run", "drain"])).toEqual({
      job: "drain",
      claimed: 1,
      delivered: 1,
      retrying: 0,
      dead: 0,
    });
    const request = ok.received.at(-1)!;
    const body = JSON.parse(request.raw);
    expect(body).toMatchObject({ event: "alert.followed_wallet", followedVia: "list:whales" });
    expect(body.alert.id).toBe(signalId);
    expect(
      verifySignature(
        secret,
        request.headers["x-service-timestamp"] as string,
        request.raw,
        request.headers["x-service-signature"] as string,
        Date.now(),
      ),
    ).toBe(true);

    const [row] = await json(["deliveries", "list", "--account", "acme", "--status", "delivered"]);
    expect(row).toMatchObject({ account: "acme", endpoint_id: endpointId, status: "delivered" });
    const shown = await json(["deliveries", "show", row.id]);
    expect(shown).toMatchObject({ id: row.id, followed_via: "list:whales", attempts: 1 });
    expect(shown.attempt_log).toEqual([expect.objectContaining({ attempt: 1, status_code: 200 })]);

    // Replay: the same delivery id again, freshly signed.
    expect(await json(["deliveries", "replay", row.id])).toEqual({ replayed: [row.id] });
    await json(["jobs", "run", "drain"]);
    expect(ok.received.at(-1)!.headers["x-service-delivery-id"]).toBe(row.id);
  });

  it("tests an endpoint, failing with exit 1 when the endpoint refuses", async () => {
    const test = await json(["webhooks", "test", endpointId]);
    expect(test).toMatchObject({ ok: true, status_code: 200, event: "alert.followed_wallet" });

    await json(["keys", "mint", "--tier", "terminal", "--account", "broken"]);
    const { id } = await json([
      "webhooks",
      "add",
      "--account",
      "broken",
      "--url",
      failing.url(),
      "--channel",
      "api",
    ]);
    const refused = await cli(["webhooks", "test", id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/test delivery failed: HTTP 500/);
    expect(await json(["webhooks", "remove", id])).toEqual({ id, removed: true });
    expect((await cli(["webhooks", "remove", id])).code).toBe(1);
  });

  it("replays every dead delivery with --dead", async () => {
    const { id } = await json([
      "webhooks",
      "add",
      "--account",
      "broken",
      "--url",
      failing.url(),
      "--channel",
      "api",
    ]);
    fireSignal(WALLET_A, 2);
    // One attempt fails; mark it dead as four would, without waiting out the backoffs.
    await json(["jobs", "run", "drain"]);
    const handle = openDb(db);
    handle.writer
      .prepare(
        "UPDATE deliveries SET status = 'dead', attempts = 4, next_attempt_at = NULL WHERE endpoint_id = ?",
      )
      .run(id);
    handle.close();
    const dead = await json(["deliveries", "list", "--status", "dead"]);
    expect(dead.map((d: { endpoint_id: string }) => d.endpoint_id)).toEqual([id]);
    const { replayed } = await json([
      "deliveries",
      "replay",
      "--dead",
      "--since",
      new Date(0).toISOString(),
    ]);
    expect(replayed).toEqual([dead[0].id]);
    expect(await json(["deliveries", "list", "--status", "dead"])).toEqual([]);
  });
});
