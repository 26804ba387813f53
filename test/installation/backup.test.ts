import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyId } from "../../src/installation/key";
import { parseSecretKey } from "../../src/webhooks/secrets";
import { verifySignature } from "../../src/webhooks/signer";
import { runCli } from "../helpers/cli";
import { answer, type Receiver, startReceiver } from "../webhooks/world";

/**
 * The key travels with a backup, or the copy is refused at start. `serve` runs as a real process,
 * since the point is what a server does with a database and its key; the other commands run
 * main() in this process (test/helpers/cli.ts), the same code the binary runs.
 */

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-backup-"));
const live = join(dir, "live", "smartmoney.db");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `smartmoney ARGS` on the live database unless `env` says otherwise, in this process. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return runCli(args, {
    SMARTMONEY_DB: live,
    SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
    SMARTMONEY_LOG_LEVEL: "warn",
    ...env,
  });
}

async function json(args: string[], env: NodeJS.ProcessEnv = {}) {
  const res = await cli([...args, "--json"], env);
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
}

/**
 * Starts `serve` on a free port; resolves with its base URL, or with its exit when it refuses.
 * The API alone (--no-jobs): the key is checked before anything starts, jobs or not.
 */
function serve(
  env: NodeJS.ProcessEnv,
): Promise<{ base: string; stop(): Promise<number | null> } | Run> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "cli/main.ts", "serve", "--port", "0", "--no-jobs"],
    {
      cwd: root,
      env: { ...process.env, SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", ...env },
    },
  );
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  return new Promise((resolve) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        const exited = new Promise<number | null>((done) => child.once("exit", done));
        resolve({
          base: match[1]!,
          stop: () => {
            child.kill("SIGTERM");
            return exited;
          },
        });
      }
    });
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

let receiver: Receiver;
const endpoints: { id: string; secret: string }[] = [];

/** The nth delivery the receiver saw verifies with `secret`, the one printed when it was added. */
function verifies(n: number, secret: string): boolean {
  const request = receiver.received[n]!;
  return verifySignature(
    secret,
    request.headers["x-service-timestamp"] as string,
    request.raw,
    request.headers["x-service-signature"] as string,
    Date.now(),
  );
}

async function testDelivery(db: string, endpoint: { id: string; secret: string }) {
  const before = receiver.received.length;
  const res = await cli(["webhooks", "test", endpoint.id], { SMARTMONEY_DB: db });
  expect(res.code, res.stderr).toBe(0);
  expect(receiver.received).toHaveLength(before + 1);
  expect(verifies(before, endpoint.secret)).toBe(true);
}

beforeAll(async () => {
  receiver = await startReceiver(answer(200));
  await json(["keys", "mint", "--tier", "terminal", "--account", "acme"]);
  for (const channel of ["dashboard", "api"]) {
    const added = await json([
      "webhooks",
      "add",
      "--account",
      "acme",
      "--url",
      receiver.url(),
      "--channel",
      channel,
    ]);
    endpoints.push({ id: added.id, secret: added.secret });
  }
}, 60_000);
afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("backup and the installation key", () => {
  const copy = join(dir, "elsewhere", "copy.db");

  it("writes the key beside the copy (0600) and says so; the copy serves and signs", async () => {
    mkdirSync(join(dir, "elsewhere"));
    const liveKey = readFileSync(`${live}.key`, "utf8");
    const id = keyId(Buffer.from(liveKey.trim(), "hex"));
    const res = await cli(["backup", copy]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`installation key (id ${id}) written to ${copy}.key (mode 0600)`);
    expect(readFileSync(`${copy}.key`, "utf8")).toBe(liveKey);
    expect(statSync(`${copy}.key`).mode & 0o777).toBe(0o600);

    // Served from the other directory: it starts, and its test deliveries verify with the
    // secrets printed when the endpoints were added to the live database.
    const server = await serve({ SMARTMONEY_DB: copy });
    expect("base" in server, JSON.stringify(server)).toBe(true);
    if ("base" in server) {
      expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
      expect(await server.stop()).toBe(0);
    }
    for (const endpoint of endpoints) await testDelivery(copy, endpoint);
    const status = await json(["status"], { SMARTMONEY_DB: copy });
    expect(status.installation_key).toEqual({
      id,
      source: `${copy}.key`,
      secrets_stored: 2,
      secrets_decrypting: 2,
      secrets_failing: [],
    });
  }, 60_000);

  it("reports both paths with --json and refuses to overwrite either", async () => {
    const target = join(dir, "elsewhere", "second.db");
    const out = await json(["backup", target]);
    expect(out).toMatchObject({
      path: target,
      key_path: `${target}.key`,
      key_source: `${live}.key`,
    });
    expect(out.key_id).toMatch(/^[0-9a-f]{16}$/);
    rmSync(target);
    const again = await cli(["backup", target]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`smartmoney: ${target}.key already exists; choose a new file`);
    expect(existsSync(target)).toBe(false);
    const nowhere = join(dir, "no-such-dir", "copy.db");
    const lost = await cli(["backup", nowhere]);
    expect(lost.code).toBe(1);
    expect(lost.stderr.trim()).toBe(
      `smartmoney: ${join(dir, "no-such-dir")}: no such directory to write the backup into`,
    );
  }, 60_000);

  it("refuses a copy without its key: serve, webhooks test and mcp exit 1, no key is minted", async () => {
    const bare = join(dir, "bare", "bare.db");
    mkdirSync(join(dir, "bare"));
    const res = await cli(["backup", bare, "--without-key"]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`without the installation key: it lives in ${live}.key`);
    expect(res.stdout).toContain("without it the copy's webhook secrets cannot be decrypted");
    expect(existsSync(`${bare}.key`)).toBe(false);
    const id = keyId(parseKeyFile(`${live}.key`));
    const before = receiver.received.length;

    const refusals = await Promise.all([
      serve({ SMARTMONEY_DB: bare }),
      cli(["webhooks", "test", endpoints[0]!.id], { SMARTMONEY_DB: bare }),
      cli(["mcp", "--key", "svc_mcp_x"], { SMARTMONEY_DB: bare }),
      cli(["status"], { SMARTMONEY_DB: bare }),
    ]);
    for (const refused of refusals) {
      expect("code" in refused && refused.code).toBe(1);
      const { stderr } = refused as Run;
      expect(stderr.trim().split("\n")).toEqual([
        `smartmoney: ${bare} needs installation key id ${id} (it stores encrypted webhook secrets), but SMARTMONEY_SECRET_KEY is unset and ${bare}.key does not exist; put the key file from your backup at ${bare}.key (mode 0600) or set SMARTMONEY_SECRET_KEY to that key`,
      ]);
    }
    expect(existsSync(`${bare}.key`)).toBe(false);
    expect(receiver.received).toHaveLength(before);
  }, 60_000);

  it("refuses a different SMARTMONEY_SECRET_KEY the same way", async () => {
    const other = randomBytes(32);
    const env = { SMARTMONEY_DB: copy, SMARTMONEY_SECRET_KEY: other.toString("hex") };
    const before = receiver.received.length;
    const [served, tested] = await Promise.all([
      serve(env),
      cli(["webhooks", "test", endpoints[0]!.id], env),
    ]);
    for (const refused of [served, tested] as Run[]) {
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`but SMARTMONEY_SECRET_KEY holds key id ${keyId(other)}`);
      expect(refused.stderr).toContain(
        `needs installation key id ${keyId(parseKeyFile(`${copy}.key`))}`,
      );
      expect(refused.stderr).not.toContain(other.toString("hex"));
    }
    expect(receiver.received).toHaveLength(before);
  }, 60_000);

  it("rotates the key: every endpoint still delivers with its original secret", async () => {
    const oldKey = readFileSync(`${copy}.key`, "utf8");
    const oldId = keyId(parseKeyFile(`${copy}.key`));
    const rotated = await json(["keys", "rotate-installation-key"], { SMARTMONEY_DB: copy });
    expect(rotated).toMatchObject({
      old_key_id: oldId,
      reencrypted: 2,
      key_path: `${copy}.key`,
      retired_key_path: `${copy}.key.retired-${oldId}`,
    });
    expect(rotated.new_key_id).not.toBe(oldId);
    expect(keyId(parseKeyFile(`${copy}.key`))).toBe(rotated.new_key_id);
    expect(statSync(`${copy}.key`).mode & 0o777).toBe(0o600);
    expect(readFileSync(rotated.retired_key_path, "utf8")).toBe(oldKey);
    expect(existsSync(`${copy}.key.next`)).toBe(false);
    for (const endpoint of endpoints) await testDelivery(copy, endpoint);
    const status = await json(["status"], { SMARTMONEY_DB: copy });
    expect(status.installation_key).toMatchObject({
      id: rotated.new_key_id,
      secrets_decrypting: 2,
    });
    // The old key is now the wrong one.
    const refused = await cli(["status"], {
      SMARTMONEY_DB: copy,
      SMARTMONEY_SECRET_KEY: oldKey.trim(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`needs installation key id ${rotated.new_key_id}`);
  }, 60_000);

  it("rotates a key given in SMARTMONEY_SECRET_KEY to SMARTMONEY_NEW_SECRET_KEY", async () => {
    const envCopy = join(dir, "env", "env.db");
    mkdirSync(join(dir, "env"));
    await json(["backup", envCopy]);
    const current = readFileSync(`${envCopy}.key`, "utf8").trim();
    rmSync(`${envCopy}.key`);
    const env = { SMARTMONEY_DB: envCopy, SMARTMONEY_SECRET_KEY: current };
    const missing = await cli(["keys", "rotate-installation-key"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("put the new key in SMARTMONEY_NEW_SECRET_KEY");
    const next = randomBytes(32).toString("hex");
    const rotated = await json(["keys", "rotate-installation-key"], {
      ...env,
      SMARTMONEY_NEW_SECRET_KEY: next,
    });
    expect(rotated).toMatchObject({ new_key_id: keyId(Buffer.from(next, "hex")), key_path: null });
    expect(existsSync(`${envCopy}.key`)).toBe(false);
    const stale = await cli(["webhooks", "test", endpoints[1]!.id], env);
    expect(stale.stderr).toContain(`needs installation key id ${rotated.new_key_id}`);
    const swapped = { SMARTMONEY_DB: envCopy, SMARTMONEY_SECRET_KEY: next };
    const before = receiver.received.length;
    const res = await cli(["webhooks", "test", endpoints[1]!.id], swapped);
    expect(res.code, res.stderr).toBe(0);
    expect(verifies(before, endpoints[1]!.secret)).toBe(true);
  }, 60_000);
});

function parseKeyFile(path: string): Buffer {
  const parsed = parseSecretKey(readFileSync(path, "utf8"));
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}
