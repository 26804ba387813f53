import { expect, vi } from "vitest";
import { main } from "../../cli/program";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The command failed (exit 1), saying why in one line of stderr that holds each of `says`. */
export function expectRefused(result: CliResult, ...says: string[]): void {
  expect(result.code).toBe(1);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  for (const text of says) expect(result.stderr).toContain(text);
}

/** The run in progress: stdout, stderr and process.env belong to one run at a time. */
let running: Promise<unknown> = Promise.resolve();

/**
 * Runs `smartmoney ARGS` in this process, as main() does for the real binary, with `env` laid
 * over the environment and stdout and stderr captured. Structured logs go to file descriptor 2
 * and are not captured: pass `--log-level error` (or silent) to keep a test's output clean.
 * Tests that need a real process (signals, stdin, crashes, the binary) spawn one instead.
 *
 * Runs started together (Promise.all) take turns: each owns the captured streams and the
 * environment until its command returns, so their outputs cannot mix.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const run = running.then(() => runAlone(args, env));
  running = run.catch(() => undefined);
  return run;
}

async function runAlone(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const saved = new Map(Object.keys(env).map((name) => [name, process.env[name]]));
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  try {
    const code = await main(args);
    return { code, stdout, stderr };
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    out.mockRestore();
    err.mockRestore();
  }
}
