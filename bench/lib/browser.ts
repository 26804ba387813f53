/// <reference lib="dom" />
// Code handed to page.evaluate runs in the browser: it is typed against the DOM.
/**
 * The web console in a real browser, for its tests (test/console) and its benchmark
 * (bench/console.ts): the demo world served by `smartmoney serve --demo` exactly as a user starts
 * it, and Debian's Chromium driven by playwright-core (which never downloads a browser of its own).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where Debian's package puts the browser; SMARTMONEY_CHROMIUM names another. */
const CHROMIUM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** Whether there is a Chromium to drive (the console tests skip without one, outside CI). */
export function hasChromium(): boolean {
  try {
    chromiumPath();
    return true;
  } catch {
    return false;
  }
}

/** The Chromium to drive, or a clear error saying how to get one. */
export function chromiumPath(): string {
  const named = process.env.SMARTMONEY_CHROMIUM;
  if (named) {
    if (!existsSync(named)) throw new Error(`SMARTMONEY_CHROMIUM=${named}: no such file`);
    return named;
  }
  const found = CHROMIUM_CANDIDATES.find((path) => existsSync(path));
  if (found) return found;
  const which = spawnSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  throw new Error(
    "Chromium is not installed: the console's browser tests need it. On Debian: apt-get install -y chromium (.ci/run installs it), or set SMARTMONEY_CHROMIUM to a Chromium binary.",
  );
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    // Root in a container has no user namespace for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

export interface Demo {
  base: string;
  /** The console URL `serve --demo` printed. */
  consoleUrl: string;
  keys: Record<"free" | "terminal" | "terminal_pro", string>;
  dbPath: string;
  /** Everything the server printed on stdout so far. */
  output(): string;
  /** What it wrote on stderr so far. */
  errors(): string;
  stop(): Promise<void>;
}

/**
 * Starts `smartmoney serve --demo` on a free loopback port over a fresh database, without the
 * jobs process (the demo's refresh runs before it listens), and reads the URL and the keys it
 * prints. The built binary when SMARTMONEY_BINARY names one (CI), else the CLI from source.
 */
export async function startDemo(env: NodeJS.ProcessEnv = {}): Promise<Demo> {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-console-"));
  const dbPath = join(dir, "demo.db");
  const args = ["serve", "--demo", "--fresh", "--no-jobs", "--db", dbPath, "--port", "0"];
  const binary = process.env.SMARTMONEY_BINARY;
  const [command, argv] = binary
    ? [binary, args]
    : [process.execPath, ["--import", "tsx", join(ROOT, "cli", "main.ts"), ...args]];
  const child: ChildProcess = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, SMARTMONEY_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 120_000;
  while (!/^Try:/m.test(stdout)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`serve --demo did not start:\n${stdout}${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const base = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
  const consoleUrl = /^Console: (\S+)/m.exec(stdout)?.[1];
  const key = (tier: string) =>
    new RegExp(`^\\s+${tier}\\s+(svc_api_[0-9a-f]{48})$`, "m").exec(stdout)?.[1];
  const keys = { free: key("free"), terminal: key("terminal"), terminal_pro: key("terminal_pro") };
  if (!base || !consoleUrl || !keys.free || !keys.terminal || !keys.terminal_pro) {
    await stop();
    throw new Error(`serve --demo printed no URL, console URL or keys:\n${stdout}`);
  }
  return {
    base,
    consoleUrl,
    keys: keys as Demo["keys"],
    dbPath,
    output: () => stdout,
    errors: () => stderr,
    stop,
  };
}

/** Signs in on the console's page and waits for the first view. */
export async function signIn(page: Page, consoleUrl: string, key: string): Promise<void> {
  await page.goto(consoleUrl);
  await page.fill("#key", key);
  await page.click("form.sign-in button[type=submit]");
  await page.waitForSelector("main[data-ready=true]");
}

/**
 * Opens a view by its route as a fresh page load (the key stays in the tab's session storage)
 * and waits until it is interactive: its data drawn (the router marks main[data-ready]) and,
 * where it has them, its charts and graph drawn. Returns the milliseconds from the start of the
 * navigation to that point: the view's time to interactive.
 */
export async function openView(page: Page, consoleUrl: string, route: string): Promise<number> {
  await page.goto("about:blank");
  const started = performance.now();
  await page.goto(`${consoleUrl}#/${route}`);
  await page.waitForFunction((view) => {
    const main = document.querySelector("main");
    if (main?.dataset.ready !== "true" || main.dataset.view !== view) return false;
    const charts = [...document.querySelectorAll<HTMLElement>("figure.chart")];
    const graphs = [...document.querySelectorAll<HTMLElement>(".graph")];
    return (
      charts.every((c) => c.dataset.drawn !== undefined) &&
      graphs.every((g) => g.dataset.nodes !== undefined)
    );
  }, route.split("/")[0]);
  return performance.now() - started;
}
