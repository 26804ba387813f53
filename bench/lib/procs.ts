import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface Pinned {
  child: ChildProcess;
  /** Everything the process wrote to stderr so far (for error messages). */
  stderr(): string;
}

/** Runs a TypeScript file with this Node and tsx, pinned to one CPU with taskset. */
export function spawnPinned(
  cpu: number,
  file: string,
  args: string[],
  options: { cwd: string; nodeArgs?: string[] },
): Pinned {
  const child = spawn(
    "taskset",
    [
      "-c",
      String(cpu),
      process.execPath,
      ...(options.nodeArgs ?? []),
      "--import",
      "tsx",
      file,
      ...args,
    ],
    { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { child, stderr: () => stderr };
}

/** Resolves with the first line the process prints on stdout, parsed as JSON. */
export function firstJsonLine<T>(pinned: Pinned, what: string): Promise<T> {
  const { child } = pinned;
  return new Promise((resolve, reject) => {
    let stdout = "";
    const onExit = (code: number | null, signal: string | null) =>
      reject(
        new Error(`${what} exited (code ${code}, signal ${signal}):\n${stdout}${pinned.stderr()}`),
      );
    child.once("exit", onExit);
    child.once("error", reject);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf("\n");
      if (newline < 0) return;
      child.off("exit", onExit);
      try {
        resolve(JSON.parse(stdout.slice(0, newline)) as T);
      } catch {
        reject(
          new Error(`${what} printed something other than JSON:\n${stdout}${pinned.stderr()}`),
        );
      }
    });
  });
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** SIGTERM, then SIGKILL if the process has not gone within `graceMs`. */
export async function stop(child: ChildProcess, graceMs = 10_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const done = exited(child);
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}

/** Clock ticks per second of /proc/PID/stat times; 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** CPU seconds (user + system, all threads) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The pids a process started (Linux: /proc/PID/task/TID/children). */
export function childPids(pid: number): number[] {
  const pids: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
    if (text !== "") pids.push(...text.split(" ").map(Number));
  }
  return pids;
}
