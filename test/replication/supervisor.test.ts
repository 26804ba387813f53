import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/open";
import { createLog } from "../../src/log";
import { startReplication, stateFilePath } from "../../src/replication/supervisor";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-supervisor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const until = async (what: string, test: () => boolean, ms = 30_000) => {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe("the Litestream supervisor", () => {
  it("restarts a child that dies, logs each state, reports the lag and stops it", async () => {
    const dbPath = join(dir, "smartmoney.db");
    const db = openDb(dbPath);
    db.writer.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
    let text = "";
    const log = createLog(
      "info",
      new Writable({
        write(chunk, _encoding, done) {
          text += chunk.toString();
          done();
        },
      }),
    );
    const replication = await startReplication({
      dbPath,
      replica: { type: "file", path: join(dir, "replica") },
      log,
    });
    await until("running and caught up", () => replication.state().lag_seconds === 0);
    const first = replication.state().pid!;
    process.kill(first, "SIGKILL");
    await until("a restart", () => replication.state().restarts === 1);
    expect(replication.state()).toMatchObject({ state: "restarting", pid: null });
    await until("running again", () => {
      const state = replication.state();
      return state.state === "running" && state.pid !== null && state.pid !== first;
    });
    db.writer.prepare("INSERT INTO t DEFAULT VALUES").run();
    await until("caught up again", () => replication.state().lag_seconds === 0);
    const child = replication.state().pid!;
    await replication.stop();
    expect(() => process.kill(child, 0)).toThrow();
    const saved = JSON.parse(readFileSync(stateFilePath(dbPath), "utf8"));
    expect(saved).toMatchObject({ state: "stopped", restarts: 1, pid: null });
    const states = text
      .split("\n")
      .filter((line) => line.includes('"msg":"replication"'))
      .map((line) => JSON.parse(line).state);
    expect(states).toEqual(["running", "restarting", "running", "stopped"]);
    expect(text).toContain('"msg":"litestream exited"');
    db.close();
  }, 60_000);
});

describe("an unreachable replica", () => {
  it("shows as a growing lag with the bytes behind and Litestream's error", async () => {
    const dbPath = join(dir, "unreachable.db");
    const db = openDb(dbPath);
    db.writer.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
    const replication = await startReplication({
      dbPath,
      // Nothing listens on port 9 of loopback: every upload fails.
      replica: {
        type: "s3",
        bucket: "b",
        path: "p",
        endpoint: "http://127.0.0.1:9",
        region: "us-east-1",
      },
      log: createLog("silent"),
    });
    try {
      await until("a lag of two seconds", () => (replication.state().lag_seconds ?? 0) >= 2);
      const state = replication.state();
      expect(state.behind_bytes).toBeGreaterThan(0);
      expect(state.caught_up_at).toBeNull();
      expect(state.last_error).toMatch(/level=(ERROR|WARN)/);
    } finally {
      await replication.stop();
      db.close();
    }
  }, 60_000);
});
