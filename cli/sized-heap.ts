import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { loadConfig } from "../src/config";
import { heapIsSized, oldSpaceMb, sizedHeapEnv } from "../src/heap";
import { selfCommand } from "./background";

/**
 * The commands whose memory grows with the data they read or write: each runs in a V8 heap
 * sized from the memory cap (src/heap.ts), as serve's jobs process does. V8's heap limits are
 * fixed when a process starts, so the CLI starts itself again with them, once; the first
 * process only waits for the second and ends as it ends.
 */
const BULK_COMMANDS = new Set([
  "import",
  "seed",
  "ingest",
  "jobs",
  "migrate",
  "export",
  "backtest",
]);

/** How the CLI starts itself again: the command, and the memory cap its heap is sized from. */
export interface SizedLaunch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  memoryMb: number;
}

/** How to start the CLI again for `argv` in a sized heap, or null when it runs as it is. */
export function sizedHeapLaunch(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): SizedLaunch | null {
  const name = argv[0];
  if (name === undefined || !BULK_COMMANDS.has(name)) return null;
  if (argv.includes("--help") || argv.includes("-h")) return null;
  if (heapIsSized(execArgv, env)) return null;
  // A configuration the command would refuse is refused by the command itself, in its words.
  const config = loadConfig(env);
  if (!config.ok) return null;
  const self = selfCommand();
  const { memoryMb } = config.config;
  return {
    command: self.command,
    args: [...self.args, ...argv],
    env: sizedHeapEnv(memoryMb, env),
    memoryMb,
  };
}

/**
 * Runs `argv` in a child started with a sized heap and answers its exit status, or null when
 * the command runs in this process.
 */
export function runInSizedHeap(argv: readonly string[]): Promise<number> | null {
  const launch = sizedHeapLaunch(argv, process.env, process.execArgv);
  return launch === null ? null : runSized(launch);
}

/**
 * Runs the launch and ends as it ends. The child shares the terminal: a Ctrl-C reaches it as it
 * reaches this process, which waits for the child to end; a signal sent to this process alone
 * (a service manager's SIGTERM) is passed on to it. V8 aborts a process whose heap is full
 * (SIGABRT, after its own report): the last line then says which setting to raise.
 */
export function runSized(launch: SizedLaunch): Promise<number> {
  return new Promise((resolve) => {
    // The handlers come first: the child exists (and can be seen) while spawn still runs, and a
    // signal then must not end this process with the child left running. A handler runs on the
    // event loop, so after spawn has returned, with the child known.
    let child: ChildProcess | undefined;
    const forward = (signal: NodeJS.Signals) => () => {
      // A terminal's Ctrl-C went to the whole group: the child has it already.
      if (signal !== "SIGINT") child?.kill(signal);
    };
    const handlers = (["SIGINT", "SIGTERM", "SIGHUP"] as const).map(
      (signal) => [signal, forward(signal)] as const,
    );
    for (const [signal, handler] of handlers) process.on(signal, handler);
    child = spawn(launch.command, launch.args, { env: launch.env, stdio: "inherit" });
    const done = (code: number) => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
      resolve(code);
    };
    child.once("error", (error) => {
      process.stderr.write(`smartmoney: cannot start itself again: ${error.message}\n`);
      done(1);
    });
    child.once("exit", (code, signal) => {
      if (signal === "SIGABRT") {
        process.stderr.write(
          `smartmoney: stopped by SIGABRT, most likely out of memory: its V8 heap is capped at ${oldSpaceMb(launch.memoryMb)} MB, half of SMARTMONEY_MEMORY_MB (${launch.memoryMb}); raise SMARTMONEY_MEMORY_MB and run it again\n`,
        );
      }
      // Ended by a signal: the status a shell gives for it (128 + its number).
      done(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}
