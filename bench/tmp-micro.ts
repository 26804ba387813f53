import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createApp } from "../src/app";
import { systemClock } from "../src/clock";
import { loadConfig } from "../src/config";
import { migrate } from "../src/db/migrate";
import { openDb } from "../src/db/open";
import { createLog } from "../src/log";
import { buildPayload, serializePayload } from "../src/webhooks/payload";
import { loadOrCreateSecretKey } from "../src/webhooks/secrets";
import { signPayload } from "../src/webhooks/signer";

const dir = mkdtempSync(join(tmpdir(), "whmicro-"));
const dbPath = join(dir, "m.db");
const env = { ...process.env, SMARTMONEY_DB: dbPath, SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1" };
const cfg = loadConfig(env);
if (!cfg.ok) throw 1;
const db = openDb(dbPath);
migrate(db.writer);
const log = createLog(
  "info",
  new Writable({
    write(_c, _e, d) {
      d();
    },
  }),
);
const app = createApp({
  db,
  config: cfg.config,
  clock: systemClock,
  log,
  fetch,
  secretKey: loadOrCreateSecretKey(dbPath, env),
});
const w = db.writer;
w.prepare(
  "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (1,'m','M','politics','0x1')",
).run();
const acct = app.accounts.mintKey({ tier: "terminal", account: "a", kind: "api" });
if (!acct.ok) throw 1;
const aid = app.accounts.get("a")!.id;
const eps: string[] = [];
for (let i = 0; i < 10; i++) {
  const c = app.webhooks.endpoints.create({
    accountId: aid,
    tier: "terminal",
    channel: "api",
    callbackUrl: `http://127.0.0.1:9/h${i}`,
  });
  if (!c.ok) throw c;
  eps.push(c.value.endpoint.id);
}
const ins = w.prepare(
  "INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts) VALUES (?,0,?,1,'YES','BUY',0.5,100,50,?)",
);
const N = Number(process.argv[2] ?? 3000);
const t = performance.now();
w.transaction(() => {
  for (let i = 0; i < N; i++) {
    const id = Number(
      ins.run(`0x${i.toString(16).padStart(64, "0")}`, `0x${"a".repeat(40)}`, Date.now())
        .lastInsertRowid,
    );
    app.webhooks.outbox.enqueueSignal({
      type: "whale",
      wallet: `0x${"a".repeat(40)}`,
      marketId: 1,
      tradeId: id,
      score: 70,
      betValue: 50,
      side: "BUY",
      outcome: "YES",
      price: 0.5,
      explanation: "x",
      createdAt: Date.now(),
    });
  }
})();
console.log("enqueue per signal µs", (((performance.now() - t) * 1000) / N).toFixed(1));
const store = app.webhooks.deliveries;
const time = (name: string, n: number, f: (i: number) => void) => {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f(i);
  const c = process.cpuUsage(c0);
  console.log(
    name.padEnd(30),
    "wall",
    (((performance.now() - t0) * 1000) / n).toFixed(1),
    "µs  cpu",
    ((c.user + c.system) / n).toFixed(1),
    "µs (sys",
    (c.system / n).toFixed(1),
    ")",
  );
};
const claimed: any[] = [];
const outcome = {
  ok: true,
  retryable: false,
  statusCode: 200,
  error: null,
  responseExcerpt: "ok",
  startedAt: Date.now(),
  durationMs: 1,
};
for (const q of ["dueEndpoints", "leaseFor"]) {
}
const plan = (sql: string, params: any) =>
  console.log(
    w
      .prepare("EXPLAIN QUERY PLAN " + sql)
      .all(params)
      .map((r: any) => r.detail)
      .join(" | "),
  );
plan(
  `SELECT endpointId, busy FROM (
       SELECT e.id AS endpointId,
              (SELECT count(*) FROM deliveries d
                WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.lease_until >= @now)
                AS busy,
              (SELECT d.next_attempt_at FROM deliveries d
                WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= @now
                  AND (d.lease_until IS NULL OR d.lease_until < @now)
                ORDER BY d.next_attempt_at LIMIT 1) AS oldest
         FROM webhook_endpoints e WHERE e.deleted_at IS NULL)
      WHERE oldest IS NOT NULL ORDER BY oldest, endpointId`,
  { now: Date.now() },
);
plan(
  `UPDATE deliveries SET lease_until = @leaseUntil
      WHERE id IN (SELECT id FROM deliveries
                    WHERE endpoint_id = @endpoint AND status = 'pending'
                      AND next_attempt_at <= @now
                      AND (lease_until IS NULL OR lease_until < @now)
                    ORDER BY next_attempt_at LIMIT @n)
      RETURNING id`,
  { now: Date.now(), endpoint: "x", leaseUntil: 1, n: 1 },
);
time("claim limit 1 (perEndpoint 2)", 2000, () => {
  const c = store.claim({ limit: 1, perEndpoint: 2, leaseMs: 40000 });
  claimed.push(...c);
  if (claimed.length > 10) {
    const x = claimed.shift();
    store.record(x, outcome as any);
  }
});
const outcome0 = 1;
const outcomeX = {
  ok: true,
  retryable: false,
  statusCode: 200,
  error: null,
  responseExcerpt: "ok",
  startedAt: Date.now(),
  durationMs: 1,
};
const more: any[] = [];
time("claim limit 10, pE 100", 100, () => {
  more.push(...store.claim({ limit: 10, perEndpoint: 100, leaseMs: 40000 }));
});
time("record 1 (own tx)", 500, (i) => store.record(more[i], outcome as any));
time("recordMany 10 (per call)", 50, (i) =>
  store.recordMany(
    more.slice(500 + i * 10, 510 + i * 10).map((c) => ({ claimed: c, outcome: outcome as any })),
  ),
);
time("endpoints.get", 5000, (i) => app.webhooks.endpoints.get(eps[i % 10]!));
time("secretOf", 5000, (i) => app.webhooks.endpoints.secretOf(eps[i % 10]!));
time("signalForDelivery", 5000, (i) => store.signalForDelivery(1 + (i % N)));
const sig = store.signalForDelivery(1)!;
time("buildPayload+serialize", 5000, () =>
  serializePayload(buildPayload({ signal: sig, publicUrl: "http://x" })),
);
const body = serializePayload(buildPayload({ signal: sig, publicUrl: "http://x" }));
time("sign", 5000, (i) => signPayload("whsec_abc", i, body));
time("log.info", 5000, (i) =>
  log.info(
    {
      delivery_id: "dlv_x",
      endpoint_id: "wh_y",
      event: "signal.whale",
      attempt: 1,
      status_code: 200,
      error: null,
      duration_ms: 1,
      outcome: "delivered",
    },
    "webhook attempt",
  ),
);
const due = w.prepare(`SELECT endpointId, busy FROM (
       SELECT e.id AS endpointId,
              (SELECT count(*) FROM deliveries d
                WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.lease_until >= @now)
                AS busy,
              (SELECT d.next_attempt_at FROM deliveries d
                WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= @now
                  AND (d.lease_until IS NULL OR d.lease_until < @now)
                ORDER BY d.next_attempt_at LIMIT 1) AS oldest
         FROM webhook_endpoints e WHERE e.deleted_at IS NULL)
      WHERE oldest IS NOT NULL ORDER BY oldest, endpointId`);
time("dueEndpoints", 1000, () => due.all({ now: Date.now() }));
const busyQ = w.prepare(
  `SELECT count(*) FROM deliveries d WHERE d.endpoint_id = ? AND d.status = 'pending' AND d.lease_until >= ?`,
);
time("busy probe", 5000, (i) => busyQ.get(eps[i % 10], Date.now()));
const oldestQ = w.prepare(`SELECT d.next_attempt_at FROM deliveries d
                WHERE d.endpoint_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ?
                  AND (d.lease_until IS NULL OR d.lease_until < ?)
                ORDER BY d.next_attempt_at LIMIT 1`);
time("oldest probe", 5000, (i) => oldestQ.get(eps[i % 10], Date.now(), Date.now()));
const cnt = w
  .prepare(
    "SELECT count(*) AS n FROM deliveries WHERE status='pending' AND endpoint_id = ? AND lease_until IS NOT NULL",
  )
  .get(eps[0]);
console.log("leased on ep0", cnt);
const begin = w.prepare("BEGIN IMMEDIATE"),
  commit = w.prepare("COMMIT");
time("empty immediate tx", 2000, () => {
  begin.run();
  commit.run();
});
