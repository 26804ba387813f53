import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { JOBS_NICENESS } from "../../cli/background";
import { openConnection } from "../../src/db/open";
import { runCli } from "../helpers/cli";
import { until } from "../helpers/until";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-jobs-"));
const db = join(dir, "jobs.db");
const env = {
  ...process.env,
  SMARTMONEY_DB: db,
  // Every second, so the test sees a refresh made by the jobs process soon.
  SMARTMONEY_REFRESH_CRON: "* * * * * *",
  SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1",
};
let server: ChildProcess | null = null;
afterAll(() => {
  server?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** A CLI command in this process (test/helpers/cli.ts); `serve` and its jobs are processes. */
const cli = (args: string[]) => runCli(args, { SMARTMONEY_DB: db, SMARTMONEY_LOG_LEVEL: "warn" });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("serve with its jobs in a process of their own", () => {
  it("refreshes beside the API, keeps answering while another writer holds the lock, and leaves nothing behind when killed", async () => {
    const { key } = JSON.parse(
      (await cli(["keys", "mint", "--tier", "terminal", "--json"])).stdout,
    );
    // The webhook is created on an account of its own: its call is counted whenever the server
    // takes it, which must not land between the reads whose counts are checked below.
    const { key: ownerKey } = JSON.parse(
      (await cli(["keys", "mint", "--tier", "terminal", "--account", "webhook-owner", "--json"]))
        .stdout,
    );
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "cli/main.ts", "serve", "--port", "0"],
      {
        cwd: root,
        env,
      },
    );
    server = child;
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const base = await until(
      "the server",
      () => /listening on (http:\/\/\S+)/.exec(stdout)?.[1] ?? null,
    );
    const jobsPid = await until("the jobs process", () => {
      const match = /"pid":(\d+),"msg":"background jobs started"/.exec(stderr);
      return match ? Number(match[1]) : null;
    });
    expect(jobsPid).not.toBe(child.pid);
    // The jobs yield the CPU to the API: lower priority, every thread of theirs.
    const serverNiceness = getPriority(child.pid!);
    const jobsNiceness = Math.min(19, serverNiceness + JOBS_NICENESS);
    await until("the jobs to lower their priority", () =>
      /jobs yield the CPU to the server/.test(stderr) ? true : null,
    );
    expect(getPriority(jobsPid)).toBe(jobsNiceness);
    if (process.platform === "linux") {
      for (const thread of readdirSync(`/proc/${jobsPid}/task`)) {
        expect(getPriority(Number(thread)), `thread ${thread}`).toBe(jobsNiceness);
      }
    }
    expect(getPriority(child.pid!)).toBe(serverNiceness);
    const auth = { authorization: `Bearer ${key}` };

    // The refresh ran in the jobs process; the server noticed it and says how old its models are.
    const asOf = await until("a refresh", async () => {
      const res = await fetch(`${base}/v1/leaderboards/whales`, { headers: auth });
      expect(res.status).toBe(200);
      return res.headers.get("x-read-model-as-of");
    });
    expect(Date.parse(asOf)).toBeGreaterThan(0);

    // Another writer (an import, a refresh) holds the write lock for as long as it likes.
    const importer = openConnection(db);
    importer.exec("BEGIN IMMEDIATE");
    let created: Response | null = null;
    const create = fetch(`${base}/v1/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${ownerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ callback_url: "http://127.0.0.1:9/hook" }),
    }).then((res) => {
      created = res;
      return res;
    });
    const remaining: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      const res = await fetch(`${base}/v1/leaderboards/whales`, { headers: auth });
      expect(res.status).toBe(200);
      remaining.push(Number(res.headers.get("x-ratelimit-remaining")));
    }
    // The webhook's write waits for the lock without holding any other request back.
    expect(created).toBeNull();
    importer.exec("COMMIT");
    importer.close();
    expect((await create).status).toBe(201);
    // Every call counted once, in order, the lock notwithstanding.
    for (let i = 1; i < remaining.length; i += 1) expect(remaining[i]).toBe(remaining[i - 1]! - 1);

    // The jobs, not the request thread, fold the rate-limit ledger's WAL back into its file: the
    // server's own threshold (10,000 pages) is far from these few calls, so a WAL whose every
    // frame is copied back was checkpointed by the jobs. Read from the WAL-index header
    // (SQLite's file format: mxFrame at byte 16, the checkpoint's nBackfill at byte 96).
    await until("the jobs to checkpoint the rate-limit ledger", () => {
      const shm = readFileSync(`${db}.limits-shm`);
      const frames = shm.readUInt32LE(16);
      return frames > 0 && shm.readUInt32LE(96) === frames ? true : null;
    });

    // A server killed outright takes its jobs with it.
    child.kill("SIGKILL");
    await until("the jobs process to exit", () => (alive(jobsPid) ? null : true));
  }, 120_000); // two processes, a refresh and a ledger checkpoint (every 10 s) to wait for
});
