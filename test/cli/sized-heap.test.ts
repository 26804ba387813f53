import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { runSized, sizedHeapLaunch } from "../../cli/sized-heap";
import { until } from "../helpers/until";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "smartmoney-heap-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `smartmoney ARGS` as a process, from the checkout, with the environment given and no other. */
function start(args: string[], env: NodeJS.ProcessEnv) {
  const { NODE_OPTIONS: _, ...inherited } = process.env;
  return spawn(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], {
    cwd: root,
    env: { ...inherited, SMARTMONEY_LOG_LEVEL: "warn", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** The pid of the process `child` started for the command, once it has (Linux's /proc). */
async function commandPid(child: ReturnType<typeof start>): Promise<number> {
  const children = () =>
    readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim();
  await until("the command's process", () => (children() === "" ? null : true));
  return Number(children().split(" ")[0]);
}

function ended(child: ReturnType<typeof start>) {
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stderr })),
  );
}

describe("the CLI's bulk commands in a heap sized from the memory cap", () => {
  it("starts itself again for a bulk command only, and only when nothing sized the heap yet", () => {
    const env = { SMARTMONEY_MEMORY_MB: "2048", NODE_OPTIONS: "--require probe.cjs" };
    const launch = sizedHeapLaunch(["import", "fills.jsonl", "--db", "x.db"], env, []);
    expect(launch?.args.slice(-4)).toEqual(["import", "fills.jsonl", "--db", "x.db"]);
    expect(launch?.env.NODE_OPTIONS).toBe(
      "--max-old-space-size=1024 --max-semi-space-size=16 --require probe.cjs",
    );
    expect(launch?.env.SMARTMONEY_MEMORY_MB).toBe("2048");
    expect(launch?.memoryMb).toBe(2048);
    for (const argv of [["keys", "list"], ["serve"], ["mcp"], [], ["import", "--help"]]) {
      expect(sizedHeapLaunch(argv, env, []), argv.join(" ")).toBeNull();
    }
    expect(sizedHeapLaunch(["seed"], env, ["--max-old-space-size=300"])).toBeNull();
    expect(sizedHeapLaunch(["seed"], { NODE_OPTIONS: "--max-old-space-size=300" }, [])).toBeNull();
    // A memory cap the command refuses: it runs here, and refuses it in its own words.
    expect(sizedHeapLaunch(["seed"], { SMARTMONEY_MEMORY_MB: "12" }, [])).toBeNull();
  });

  it("runs the command in a process whose V8 heap is half the memory cap, and ends as it ends", async () => {
    const probe = join(dir, "probe.cjs");
    const heaps = join(dir, "heaps.jsonl");
    writeFileSync(
      probe,
      // The main thread only: tsx's module hooks run on a thread of their own, which loads it too.
      `if (require("node:worker_threads").isMainThread) require("node:fs").appendFileSync(${JSON.stringify(heaps)}, JSON.stringify({ pid: process.pid, mb: require("node:v8").getHeapStatistics().heap_size_limit / 2 ** 20 }) + "\\n");`,
    );
    const db = join(dir, "sized.db");
    const run = ended(
      start(["migrate", "--db", db], {
        SMARTMONEY_MEMORY_MB: "1024",
        NODE_OPTIONS: `--require ${probe}`,
      }),
    );
    expect((await run).code).toBe(0);
    const seen = readFileSync(heaps, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { pid: number; mb: number });
    // This process, then the one it started: only the second is sized (512 MB of old space).
    expect(seen, JSON.stringify(seen)).toHaveLength(2);
    expect(seen[1]!.mb).toBeGreaterThanOrEqual(512);
    expect(seen[1]!.mb).toBeLessThan(640);

    const refused = await ended(start(["import", join(dir, "missing.jsonl"), "--db", db], {}));
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toEqual([
      `smartmoney: ${join(dir, "missing.jsonl")}: no such file`,
    ]);
  });

  it("passes a SIGTERM sent to it alone on to the command, and ends with the command's status", async () => {
    // `import -` waits for standard input, which the test never closes.
    const child = start(["import", "-", "--db", join(dir, "term.db")], {});
    const run = ended(child);
    const command = await commandPid(child);
    child.kill("SIGTERM");
    const { code } = await run;
    expect(code).toBe(128 + 15);
    expect(() => process.kill(command, 0)).toThrow();
  });

  it("stops the jobs in order when a service manager signals both processes", async () => {
    const child = start(["jobs", "schedule", "--db", join(dir, "jobs.db")], {
      SMARTMONEY_LOG_LEVEL: "info",
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await until("the jobs scheduled", () => (stderr.includes("jobs scheduled") ? true : null));
    const jobs = await commandPid(child);
    // As systemd stops a service: SIGTERM to every process of it, and this one passes it on.
    process.kill(jobs, "SIGTERM");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toContain("jobs stopped");
  });

  it("says which setting to raise when the command ends out of memory (V8 aborts it)", async () => {
    const lines: string[] = [];
    const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const code = await runSized({
        command: process.execPath,
        args: ["-e", "process.abort()"],
        env: {},
        memoryMb: 1024,
      });
      expect(code).toBe(128 + 6);
      expect(lines).toEqual([
        "smartmoney: stopped by SIGABRT, most likely out of memory: its V8 heap is capped at 512 MB, half of SMARTMONEY_MEMORY_MB (1024); raise SMARTMONEY_MEMORY_MB and run it again\n",
      ]);
      lines.length = 0;
      const ok = await runSized({
        command: process.execPath,
        args: ["-e", "process.exitCode = 3"],
        env: {},
        memoryMb: 1024,
      });
      expect(ok).toBe(3);
      expect(lines).toEqual([]);
    } finally {
      err.mockRestore();
    }
  });
});
