import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import {
  copyFileSync,
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { type Connection, openConnection } from "../../src/db/open";
import { verifySignature } from "../../src/webhooks/signer";
import {
  feedMarkets,
  realGammaMarkets,
  realLeaderboard,
  replayFeed,
} from "../fixtures-polymarket/payloads";
import { type ApiServer, startApiServer } from "../fixtures-polymarket/servers";
import { runCli } from "../helpers/cli";
import { answer, type Receiver, startReceiver } from "../webhooks/world";

/**
 * The machine dies while live: a server replicating with a real Litestream (to a folder, and to a
 * local S3-compatible server, s3rver) ingests, delivers and takes writes; its whole process group
 * is killed and its data directory deleted; `restore` brings the database back and it serves at
 * once with the same accounts, keys, endpoints, deliveries, cursors and fills. The writes of the
 * last moments are counted: what is missing is the loss window, printed and held to the bound
 * docs/operations.md documents.
 */

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-replicate-"));
/** docs/operations.md: at most this much of the last writes is lost with the machine. */
const DOCUMENTED_LOSS_MS = 5_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A CLI command in this process (test/helpers/cli.ts); only `serve`, the machine, is a process. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return runCli(args, { SMARTMONEY_LOG_LEVEL: "warn", ...env });
}

async function json(args: string[], env: NodeJS.ProcessEnv) {
  const res = await cli([...args, "--json"], env);
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
}

/** `serve` in its own process group, as the machine: killing the group kills Litestream too. */
function serve(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; base: string; output(): string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "cli/main.ts", "serve", "--port", "0", ...args],
    {
      cwd: root,
      env: { ...process.env, SMARTMONEY_LOG_LEVEL: "info", ...env },
      detached: true,
    },
  );
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      stdout += d;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolve({ child, base: match[1]!, output: () => stdout + stderr });
    });
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

const until = async (what: string, test: () => boolean | Promise<boolean>, ms = 60_000) => {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** What must survive: everything written well before the machine died. */
function facts(db: Connection) {
  const all = (sql: string) => db.prepare(sql).all();
  return {
    accounts: all("SELECT name, tier FROM accounts WHERE name NOT LIKE 'tick-%' ORDER BY name"),
    keys: all("SELECT id, key_hash, revoked_at FROM api_keys ORDER BY id"),
    endpoints: all("SELECT id, callback_url, secret_encrypted FROM webhook_endpoints ORDER BY id"),
    deliveries: all(
      "SELECT id, status, endpoint_id FROM deliveries WHERE status = 'delivered' ORDER BY id",
    ),
    cursors: all("SELECT * FROM ingest_state ORDER BY 1"),
    fills: all("SELECT count(*) AS n, sum(usd_value) AS usd, max(id) AS last FROM trades"),
  };
}

interface ListResult {
  objects: { key: string }[];
  commonPrefixes: string[];
  isTruncated: boolean;
}
type ListObjects = (
  bucket: string,
  options: { delimiter?: string; prefix?: string; maxKeys?: number },
) => Promise<ListResult>;

/**
 * s3rver 3.7.1 prunes the folders under a common prefix before it reaches their objects, so a
 * delimited listing misses every prefix whose objects sit two levels down; Litestream's
 * `generations/<id>/wal/...` layout is exactly that, and a restore then finds no generation. The
 * listing is done here as S3 does it: every key under the prefix, grouped at the delimiter.
 */
function fixCommonPrefixes(store: { listObjects: ListObjects }): void {
  const list = store.listObjects.bind(store);
  store.listObjects = async (bucket, options) => {
    const delimiter = options.delimiter ?? "";
    if (delimiter === "") return list(bucket, options);
    const prefix = options.prefix ?? "";
    const all = await list(bucket, {
      ...options,
      delimiter: "",
      maxKeys: Number.POSITIVE_INFINITY,
    });
    const common = new Set<string>();
    const objects = all.objects.filter((object) => {
      const at = object.key.indexOf(delimiter, prefix.length);
      if (at !== -1) common.add(object.key.slice(0, at + delimiter.length));
      return at === -1;
    });
    return { objects, commonPrefixes: [...common].sort(), isTruncated: false };
  };
}

interface PutObject {
  bucket: string;
  key: string;
  metadata: unknown;
  content: Buffer | NodeJS.ReadableStream;
}
interface FilesystemStore {
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  putObject(object: PutObject): Promise<{ size: number; md5: string }>;
}

/**
 * s3rver 3.7.1 writes an object's bytes straight into its file as they arrive, and answers the
 * PUT once they have passed through, before the file necessarily holds them all: an upload cut
 * off by the killed machine leaves a truncated object behind, and a restore then failed with
 * Litestream's "cannot download wal …: EOF". S3 stores an object whole or not at all. Here an
 * object is written to a file of its own and renamed into place once complete, after its
 * metadata, so a listing or a GET sees it whole or not at all.
 */
function atomicPuts(store: FilesystemStore): void {
  store.putObject = async (object) => {
    const path = store.getResourcePath(object.bucket, object.key, "object");
    mkdirSync(dirname(path), { recursive: true });
    const partial = `${path}.${randomUUID()}.partial`;
    const md5 = createHash("md5");
    let size = 0;
    try {
      if (Buffer.isBuffer(object.content)) {
        writeFileSync(partial, object.content);
        md5.update(object.content);
        size = object.content.length;
      } else {
        const count = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            md5.update(chunk);
            size += chunk.length;
            done(null, chunk);
          },
        });
        await pipeline(object.content, count, createWriteStream(partial));
      }
      const digest = md5.digest("hex");
      await store.putMetadata(object.bucket, object.key, object.metadata, digest);
      renameSync(partial, path);
      return { size, md5: digest };
    } catch (error) {
      rmSync(partial, { force: true });
      throw error;
    }
  };
}

let receiver: Receiver;
let api: ApiServer;
let s3: { close(): Promise<void>; port: number };
const lossFigures: string[] = [];

beforeAll(async () => {
  receiver = await startReceiver(answer(200));
  api = await startApiServer({
    markets: [...feedMarkets(), ...realGammaMarkets()],
    trades: replayFeed(),
    leaderboard: realLeaderboard(),
  });
  const S3rver = createRequire(import.meta.url)("s3rver");
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: join(dir, "s3rver"),
    configureBuckets: [{ name: "smartmoney" }],
  });
  fixCommonPrefixes(server.store);
  atomicPuts(server.store);
  const address = (await server.run()) as { port: number };
  s3 = { port: address.port, close: () => server.close() };
});
afterAll(async () => {
  await Promise.all([receiver.close(), api.close(), s3.close()]);
  rmSync(dir, { recursive: true, force: true });
  if (lossFigures.length > 0) process.stdout.write(`${lossFigures.join("\n")}\n`);
});

const replicas = [
  { kind: "file", slug: "file", url: () => `file://${join(dir, "replica-file")}`, env: {} },
  {
    kind: "s3 (s3rver)",
    slug: "s3",
    url: () => `s3://smartmoney/live?endpoint=http://127.0.0.1:${s3.port}&region=us-east-1`,
    env: { LITESTREAM_ACCESS_KEY_ID: "S3RVER", LITESTREAM_SECRET_ACCESS_KEY: "S3RVER" },
  },
];

/** A server's process group, killed when its test ends however it ends: never left behind. */
function killOnFinish(onTestFinished: TestContext["onTestFinished"], child: ChildProcess): void {
  onTestFinished(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  });
}

// The two replicas run side by side: each test mostly waits (on Litestream, the drainer, its
// four seconds of live writes), and each has its own directory, server and receiver path.
describe.concurrent.each(replicas)(
  "replication to a $kind replica",
  ({ kind, slug, url, env: credentials }) => {
    it("survives the machine: kill, delete, restore, serve at once", async ({ onTestFinished }) => {
      const home = join(dir, slug);
      const live = join(home, "live", "smartmoney.db");
      const env = {
        ...credentials,
        SMARTMONEY_DB: live,
        SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
        SMARTMONEY_WHALE_SIGNAL_USD: "1",
        // The feed replays recorded trades, months old: each must still queue its delivery.
        SMARTMONEY_ALERT_MAX_AGE: "100000h",
      };
      const { key } = await json(
        ["keys", "mint", "--tier", "terminal_pro", "--account", "acme"],
        env,
      );
      const endpoint = await json(
        [
          "webhooks",
          "add",
          "--account",
          "acme",
          "--url",
          receiver.url(`/${slug}`),
          "--channel",
          "api",
        ],
        env,
      );
      // The key is kept apart from the replica, as docs/operations.md asks.
      mkdirSync(join(home, "vault"));
      copyFileSync(`${live}.key`, join(home, "vault", "smartmoney.db.key"));

      const server = await serve(["--replicate", url()], env);
      killOnFinish(onTestFinished, server.child);
      expect(server.output()).toContain("is not replicated: keep a copy of it apart");
      const ingest = await json(
        [
          "ingest",
          "polymarket",
          "--once",
          "--data-url",
          api.url,
          "--gamma-url",
          api.url,
          "--since",
          "2026-07-14T00:00:00Z",
        ],
        env,
      );
      expect(ingest.trades_new).toBeGreaterThan(0);
      await until("deliveries", () => receiver.received.some((r) => r.path === `/${slug}`));
      const ping = await fetch(`${server.base}/v1/_ping`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(ping.status).toBe(200);
      const status = await json(["status"], env);
      expect(status.replication).toMatchObject({ state: "running", stale: false });

      // Let the drainer settle, then take the facts that must survive.
      const reader = openConnection(live, { readonly: true });
      await until(
        "every delivery settled",
        () =>
          (
            reader
              .prepare("SELECT count(*) AS n FROM deliveries WHERE status = 'pending'")
              .get() as {
              n: number;
            }
          ).n === 0,
      );
      const before = facts(reader);
      expect(before.deliveries.length).toBeGreaterThan(0);

      // Live writes until the machine dies: an account every 50 ms, stamped with its time.
      const writer = openConnection(live);
      const tick = writer.prepare(
        "INSERT INTO accounts (name, tier, created_at) VALUES (?, 'free', ?)",
      );
      let n = 0;
      const started = Date.now();
      while (Date.now() - started < 4000) {
        tick.run(`tick-${++n}`, Date.now());
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const killedAt = Date.now();
      process.kill(-server.child.pid!, "SIGKILL");
      await new Promise((resolve) => server.child.once("exit", resolve));
      // The restore below starts at once (in this process): wait for Litestream to be gone too.
      await until("the machine's processes to be gone", () => !groupAlive(server.child.pid!));
      writer.close();
      reader.close();
      rmSync(join(home, "live"), { recursive: true, force: true });

      // Restore elsewhere, put the key back, and serve at once.
      const restoredDb = join(home, "restored", "smartmoney.db");
      const restoredEnv = { ...env, SMARTMONEY_DB: restoredDb };
      const restoreStarted = performance.now();
      const restored = await json(["restore", "--from", url()], restoredEnv);
      const restoreMs = performance.now() - restoreStarted;
      expect(restored).toMatchObject({
        key_id: status.installation_key.id,
        secrets_stored: 1,
        key_present: false,
      });
      const refused = await cli(["restore", "--from", url()], restoredEnv);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("already exists; pass --force");
      copyFileSync(join(home, "vault", "smartmoney.db.key"), `${restoredDb}.key`);

      const check = openConnection(restoredDb, { readonly: true });
      expect(facts(check)).toEqual(before);
      const ticks = check
        .prepare(
          "SELECT name, created_at FROM accounts WHERE name LIKE 'tick-%' ORDER BY created_at",
        )
        .all() as { name: string; created_at: number }[];
      check.close();
      // No hole: the survivors are the first ones written, the lost ones the last.
      expect(ticks.map((t) => t.name)).toEqual(ticks.map((_, i) => `tick-${i + 1}`));
      const lastKept = ticks.at(-1)?.created_at ?? started;
      const lossMs = killedAt - lastKept;
      lossFigures.push(
        `replication (${kind}): ${ticks.length} of ${n} writes of the last ${((killedAt - started) / 1000).toFixed(1)} s survived; loss window ${lossMs} ms (documented bound ${DOCUMENTED_LOSS_MS} ms); restore took ${restoreMs.toFixed(0)} ms`,
      );
      expect(lossMs).toBeLessThanOrEqual(DOCUMENTED_LOSS_MS);

      // The API alone (--no-jobs): every delivery settled before the machine died.
      const again = await serve(["--no-jobs"], restoredEnv);
      killOnFinish(onTestFinished, again.child);
      const pinged = await fetch(`${again.base}/v1/_ping`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(pinged.status).toBe(200);
      const exited = new Promise((resolve) => again.child.once("exit", resolve));
      again.child.kill("SIGTERM");
      await exited;
      const mine = () => receiver.received.filter((r) => r.path === `/${slug}`);
      const sent = mine().length;
      const tested = await cli(["webhooks", "test", endpoint.id], restoredEnv);
      expect(tested.code, tested.stderr).toBe(0);
      expect(mine()).toHaveLength(sent + 1);
      const request = mine()[sent]!;
      expect(
        verifySignature(
          endpoint.secret,
          request.headers["x-service-timestamp"] as string,
          request.raw,
          request.headers["x-service-signature"] as string,
          Date.now(),
        ),
      ).toBe(true);
    }, 180_000);
  },
);
