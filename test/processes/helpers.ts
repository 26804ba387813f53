import { type ChildProcess, spawn } from "node:child_process";
import { runCli } from "../helpers/cli";

const root = new URL("../..", import.meta.url).pathname;
const ENV = { SMARTMONEY_LOG_LEVEL: "warn" };

/**
 * Node from source under the usual umask (022), whatever the test runner's: a file created
 * owner-only then proves the code asked for it.
 */
function node(args: string[]): [string, string[]] {
  return ["/bin/sh", ["-c", 'umask 022; exec "$0" "$@"', process.execPath, ...args]];
}

/**
 * Runs a CLI command to its end in this process (test/helpers/cli.ts), under a umask of 022 like
 * the servers; throws with its stderr when it fails.
 */
export async function cli(db: string, args: string[]): Promise<string> {
  const umask = process.umask(0o022);
  try {
    const result = await runCli(args, { ...ENV, SMARTMONEY_DB: db });
    if (result.code !== 0) throw new Error(`${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  } finally {
    process.umask(umask);
  }
}

/** A CLI command running in a process of its own (from source). */
export interface CliProcess {
  child: ChildProcess;
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process is gone. */
  exited: Promise<number | string | null>;
}

/**
 * Starts a CLI command in a process of its own, for work that must run beside this one: a server,
 * or a refresh holding the write lock while requests are served. Its stdout is piped only when
 * the caller reads it (`stdout: "pipe"`).
 */
export function cliProcess(
  db: string,
  args: string[],
  options: { stdout: "pipe" | "ignore" } = { stdout: "ignore" },
): CliProcess {
  const [command, argv] = node(["--import", "tsx", "cli/main.ts", ...args]);
  const child = spawn(command, argv, {
    cwd: root,
    env: { ...process.env, ...ENV, SMARTMONEY_DB: db },
    stdio: ["ignore", options.stdout, "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  return { child, exited, stderr: () => err };
}

export async function mintKey(
  db: string,
  account: string,
  kind: "api" | "mcp" = "api",
): Promise<string> {
  const out = await cli(db, [
    "keys",
    "mint",
    "--tier",
    "terminal",
    "--account",
    account,
    "--kind",
    kind,
  ]);
  return /svc_(api|mcp)_[0-9a-f]{48}/.exec(out)![0];
}

export interface Server extends CliProcess {
  base: string;
}

/** `smartmoney serve --port 0` on the database, once it prints where it listens. */
export function startServer(db: string, args: string[] = []): Promise<Server> {
  const server = cliProcess(db, ["serve", "--port", "0", ...args], { stdout: "pipe" });
  let out = "";
  return new Promise((resolve, reject) => {
    server.child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) resolve({ ...server, base: url });
    });
    void server.exited.then((code) =>
      reject(new Error(`serve exited (${code}): ${server.stderr()}`)),
    );
  });
}

export async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill("SIGTERM");
  }
  await server.exited;
}
