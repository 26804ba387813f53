import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { type App, createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { type Db, openDb } from "../../src/db/open";
import { loadInstallationKey } from "../../src/installation/key";
import { createLog } from "../../src/log";
import { migrate } from "../../src/migrations/migrate";
import { verifySignature } from "../../src/webhooks/signer";
import { createTestApp } from "../helpers/app";
import { FakeClock } from "../helpers/clock";
import {
  accountWithKey,
  type Received,
  type Receiver,
  seedMarkets,
  signalOn,
  startReceiver,
} from "./world";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CHILD = join(ROOT, "test", "webhooks", "crash-child.ts");

/** Long enough that no attempt of the killed process times out before the kill. */
const TIMEOUT_MS = 60_000;
/** The drainer's lease: the attempt timeout plus its margin (src/webhooks/service.ts). */
const LEASE_MS = TIMEOUT_MS + 30_000;
const ENDPOINTS = 3;
const PER_ENDPOINT = 2;
const SIGNALS = 10;
/** The receiver answers this many requests at once, then holds every later one open. */
const ANSWERED = 8;

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

interface Session {
  app: App;
  db: Db;
  clock: FakeClock;
}

/** An app on the database file as a restarted server builds it, with a clock the test moves. */
function open(env: NodeJS.ProcessEnv, nowMs: number): Session {
  const loaded = loadConfig(env);
  if (!loaded.ok) throw new Error(loaded.problems.join("; "));
  const db = openDb(loaded.config.dbPath);
  migrate(db.writer);
  const clock = new FakeClock(nowMs);
  const app = createApp({
    db,
    config: loaded.config,
    clock,
    log: createLog("warn", new Writable({ write: (_chunk, _encoding, done) => done() })),
    fetch: globalThis.fetch,
    secretKey: loadInstallationKey(db, env).key,
  });
  return { app, db, clock };
}

interface Child extends ChildProcess {
  /** What it printed on stdout so far. */
  printed(): string;
  /** The same followed by its stderr, for failure messages. */
  output(): string;
}

function spawnChild(env: NodeJS.ProcessEnv, dbPath: string): Child {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, dbPath, String(SIGNALS)], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return Object.assign(child, { printed: () => stdout, output: () => `${stdout}${stderr}` });
}

/** Polls `done` until it holds; fails early when the child has died on its own. */
async function until(done: () => boolean, child: Child) {
  while (!done()) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the child exited (${child.exitCode}):\n${child.output()}`);
    }
    await new Promise((wake) => setTimeout(wake, 25));
  }
}

const header = (request: Received, name: string) => request.headers[name] as string;

it("the process killed with SIGKILL mid-delivery and restarted: nothing lost, duplicates only for attempts in flight", async () => {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-crash-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SMARTMONEY_DB: join(dir, "crash.db"),
    SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
    SMARTMONEY_WEBHOOK_TIMEOUT: `${TIMEOUT_MS / 1000}s`,
    SMARTMONEY_LOG_LEVEL: "warn",
  };
  delete env.SMARTMONEY_SECRET_KEY;

  // The receiver answers the first requests, then leaves the rest in flight until released.
  let holding = true;
  const receiver: Receiver = await startReceiver((n, res) => {
    if (n < ANSWERED || !holding) res.writeHead(200).end("ok");
  });
  cleanup.push(() => receiver.close());

  // Before the crash: endpoints (three accounts, one each) and a market, written by a first app.
  const secrets = new Map<string, { endpointId: string; secret: string }>();
  {
    const setup = open(env, Date.now());
    setup.db.writer
      .prepare(
        "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (?, ?, ?, ?, ?)",
      )
      .run(1, "crash-market", "Crash market?", "politics", `0x${"1".repeat(64)}`);
    for (let i = 0; i < ENDPOINTS; i++) {
      const minted = setup.app.accounts.mintKey({
        tier: "terminal",
        account: `crash-${i}`,
        kind: "api",
      });
      if (!minted.ok) throw new Error(minted.reason);
      const created = setup.app.webhooks.endpoints.create({
        accountId: setup.app.accounts.get(`crash-${i}`)!.id,
        tier: "terminal",
        channel: "api",
        callbackUrl: receiver.url(`/hook/${i}`),
      });
      if (!created.ok) throw new Error(created.reason);
      secrets.set(`/hook/${i}`, {
        endpointId: created.value.endpoint.id,
        secret: created.value.secret,
      });
    }
    setup.app.close();
    setup.db.close();
  }

  // The server process: it enqueues, drains, and is killed while attempts are in flight.
  const child = spawnChild(env, env.SMARTMONEY_DB!);
  cleanup.push(() => child.kill("SIGKILL"));
  const inFlightAtOnce = ENDPOINTS * PER_ENDPOINT;
  await until(() => receiver.received.length >= ANSWERED + inFlightAtOnce, child);
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGKILL");
  await exited;
  expect(child.signalCode).toBe("SIGKILL");
  expect(JSON.parse(child.printed().split("\n")[0]!)).toEqual({ deliveries: SIGNALS * ENDPOINTS });

  // The restart: a fresh app on the same file, its clock past every lease the dead one held.
  holding = false;
  const restartedAt = Date.now() + LEASE_MS + 1;
  const restarted = open(env, restartedAt);
  cleanup.push(() => {
    restarted.app.close();
    restarted.db.close();
  });
  const rows = () =>
    restarted.db.writer
      .prepare(
        "SELECT id, endpoint_id AS endpointId, status, lease_until AS leaseUntil FROM deliveries",
      )
      .all() as { id: string; endpointId: string; status: string; leaseUntil: number | null }[];
  const atKill = rows();
  expect(atKill).toHaveLength(SIGNALS * ENDPOINTS);
  const deliveredAtKill = new Set(atKill.filter((r) => r.status === "delivered").map((r) => r.id));
  // What the killed process held: leased, not recorded; each lease lapsed by the restart's clock.
  const leasedAtKill = atKill.filter((r) => r.status === "pending" && r.leaseUntil !== null);
  expect(leasedAtKill.length).toBeGreaterThanOrEqual(inFlightAtOnce);
  expect(leasedAtKill.every((r) => r.leaseUntil! < restartedAt)).toBe(true);

  const summary = await restarted.app.webhooks.drainer.drainOnce();
  expect(summary.dead + summary.retrying).toBe(0);
  expect(await restarted.app.webhooks.drainer.drainOnce()).toMatchObject({ claimed: 0 });

  // Every request is signed for its endpoint; the killed process's requests carry real-time
  // timestamps, the restarted one's its clock (past the leases), which tells the two apart.
  const byFirstProcess = (request: Received) =>
    Number(header(request, "x-service-timestamp")) < restartedAt;
  const endpointOf = new Map(atKill.map((r) => [r.id, r.endpointId]));
  for (const request of receiver.received) {
    const target = secrets.get(request.path)!;
    const now = byFirstProcess(request) ? Date.now() : restarted.clock.now();
    expect(
      verifySignature(
        target.secret,
        header(request, "x-service-timestamp"),
        request.raw,
        header(request, "x-service-signature"),
        now,
      ),
    ).toBe(true);
    expect(endpointOf.get(header(request, "x-service-delivery-id"))).toBe(target.endpointId);
  }

  // Nothing lost: every delivery reached its endpoint and is recorded as delivered.
  const times = new Map<string, number>();
  for (const request of receiver.received) {
    const id = header(request, "x-service-delivery-id");
    times.set(id, (times.get(id) ?? 0) + 1);
  }
  expect([...times.keys()].sort()).toEqual(atKill.map((r) => r.id).sort());
  expect(rows().every((r) => r.status === "delivered")).toBe(true);

  // Duplicates exactly for the attempts in flight at the kill: received from the killed
  // process but not recorded as delivered. Everything else arrived once.
  const sentBeforeKill = new Set(
    receiver.received.filter(byFirstProcess).map((r) => header(r, "x-service-delivery-id")),
  );
  const inFlight = [...sentBeforeKill].filter((id) => !deliveredAtKill.has(id));
  const twice = [...times].filter(([, n]) => n === 2).map(([id]) => id);
  expect(twice.sort()).toEqual(inFlight.sort());
  expect([...times.values()].every((n) => n <= 2)).toBe(true);
  expect(inFlight.length).toBeGreaterThanOrEqual(inFlightAtOnce);
  // The restart re-sent only those and the ones never tried: not one recorded delivery.
  const resent = receiver.received.filter((r) => !byFirstProcess(r));
  expect(resent.some((r) => deliveredAtKill.has(header(r, "x-service-delivery-id")))).toBe(false);
}, 60_000);

it("records a batch of outcomes each on its own lease and refills the freed slots in the same transaction", () => {
  const t = createTestApp({ env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1" } });
  cleanup.push(() => t.close());
  seedMarkets(t);
  const account = accountWithKey(t, "batch");
  const created = t.app.webhooks.endpoints.create({
    accountId: account.id,
    tier: "terminal",
    channel: "api",
    callbackUrl: "http://127.0.0.1:9/never-called",
  });
  if (!created.ok) throw new Error(created.reason);
  for (let i = 0; i < 3; i++) t.app.webhooks.outbox.enqueueSignal(signalOn(t));
  const store = t.app.webhooks.deliveries;
  const limits = { limit: 10, perEndpoint: 2, leaseMs: 1_000 };

  // A process claims two and dies; once the leases lapse, a living one claims the same two.
  const dead = store.claim(limits);
  t.clock.advance(1_001);
  const living = store.claim(limits);
  expect(living.map((c) => c.id)).toEqual(dead.map((c) => c.id));

  const ok = {
    ok: true,
    retryable: false,
    statusCode: 200,
    error: null,
    responseExcerpt: "ok",
    startedAt: t.clock.now(),
    durationMs: 1,
  };
  // The dead process's late result and the living one's land in one batch.
  const { statuses, claimed } = store.recordAndClaim(
    [
      { claimed: dead[0]!, outcome: ok },
      { claimed: living[1]!, outcome: ok },
    ],
    limits,
  );
  expect(statuses).toEqual([null, "delivered"]);
  // One slot of the endpoint's two came free (living[0] is still out): the third delivery.
  expect(claimed).toHaveLength(1);
  expect([...dead, ...living].map((c) => c.id)).not.toContain(claimed[0]!.id);

  const state = (id: string) =>
    t.db.writer
      .prepare("SELECT status, lease_until AS leaseUntil FROM deliveries WHERE id = ?")
      .get(id) as { status: string; leaseUntil: number | null };
  expect(state(living[0]!.id)).toEqual({ status: "pending", leaseUntil: living[0]!.leaseUntil });
  expect(state(living[1]!.id)).toEqual({ status: "delivered", leaseUntil: null });
  expect(state(claimed[0]!.id)).toEqual({ status: "pending", leaseUntil: claimed[0]!.leaseUntil });
  // Both attempts are in the log, the one that lost its lease included.
  expect(store.get(living[0]!.id)!.attemptLog).toHaveLength(1);
  expect(store.get(living[1]!.id)!.attemptLog).toHaveLength(1);
});
