import { rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import type { App } from "../../src/app";
import { TIERS } from "../../src/auth/tiers";
import { systemClock } from "../../src/clock";
import { seedWorld } from "../../src/fixtures/seed-world";
import { answerClientErrors } from "../../src/http/client-error";
import { CONSOLE_PATH, consoleFiles } from "../../src/http/console-page";
import { gracefulShutdown } from "../../src/http/graceful";
import { createRequestListener } from "../../src/http/listener";
import { describeSource } from "../../src/installation/key";
import { startReplication } from "../../src/replication/supervisor";
import { SERVER_LEDGER_AUTOCHECKPOINT, startBackgroundJobs } from "../background";
import {
  type CommonOptions,
  clockFrom,
  configFrom,
  type Session,
  settingFlag,
  withApp,
  withDbOption,
} from "../context";
import { CliError, must } from "../errors";

interface ServeOptions extends CommonOptions {
  demo?: boolean;
  fresh?: boolean;
  host?: string;
  port?: string;
  publicUrl?: string;
  now?: string;
  jobs: boolean;
  shutdownGrace?: string;
  replicate?: string;
}

export function registerServe(program: Command): void {
  withDbOption(program.command("serve"))
    .description("migrate, then serve the API, the MCP endpoint and the scheduled jobs")
    .option(...settingFlag("SMARTMONEY_HOST", "address", "listen address"))
    .option(...settingFlag("SMARTMONEY_PORT", "port", "listen port, 0 picks a free one"))
    .option(...settingFlag("SMARTMONEY_PUBLIC_URL", "url", "base for profile links in webhooks"))
    .option(
      ...settingFlag(
        "SMARTMONEY_SHUTDOWN_GRACE",
        "duration",
        "on SIGTERM, how long requests in flight may finish before they are cut off",
      ),
    )
    .option(
      "--demo",
      "seed the small fixture world into an empty database and print a key per tier",
    )
    .option("--fresh", "with --demo: delete the database file first, so the world is seeded anew")
    .option(
      "--no-jobs",
      "serve the API only, without the scheduled jobs (run `smartmoney jobs schedule` elsewhere)",
    )
    .option(
      "--now <time>",
      "serve as if the clock read TIME at start, running on from there: for benchmarks and demos of a recorded world, never production",
    )
    .option(
      ...settingFlag(
        "SMARTMONEY_REPLICA_URL",
        "url",
        "stream the database with Litestream to s3://BUCKET/PATH or file:///PATH",
      ),
    )
    .action((options: ServeOptions) => {
      if (options.fresh) {
        if (!options.demo)
          throw new CliError("--fresh only goes with --demo: it deletes the database");
        removeDatabase(configFrom(options).dbPath);
      }
      const clock = options.now === undefined ? systemClock : clockFrom(options.now);
      return withApp(options, (session) => runServer(session, options), clock);
    });
}

/** How often the server looks for a refresh another process finished. */
const READ_MODEL_POLL_MS = 1_000;

/**
 * Serves until SIGTERM or SIGINT, then shuts down in order: the listener and idle connections at
 * once, requests in flight within the grace period (then cut off), then the jobs process, which
 * gets the same grace to finish a run in progress (a refresh cut off rolls back), then
 * replication.
 */
async function runServer(session: Session, options: ServeOptions): Promise<void> {
  const { app, key } = session;
  const { config, log } = app.deps;
  if (config.webhookAllowPrivate) {
    log.warn(
      "SMARTMONEY_WEBHOOK_ALLOW_PRIVATE=1: webhooks may target http:// and private addresses. Development only.",
    );
    process.stderr.write(
      "WARNING: SMARTMONEY_WEBHOOK_ALLOW_PRIVATE=1 lets webhooks reach private and loopback addresses. Never use it in production.\n",
    );
  }
  if (options.demo) await demoWorld(app);
  const demoKeys = options.demo ? demoSetup(app) : [];
  // Before the first request, so every write is replicated; Litestream starts with a snapshot
  // of the whole database.
  const replication = config.replica
    ? await startReplication({ dbPath: config.dbPath, replica: config.replica, log }).catch(
        (error: Error) => {
          throw new CliError(`cannot start replication: ${error.message}`);
        },
      )
    : null;
  if (replication) {
    // The replica never carries the installation key (docs/operations.md).
    process.stdout.write(
      `replicating ${config.dbPath} to ${replication.state().replica}; the installation key (id ${key.id}, ${describeSource(key.source)}) is not replicated: keep a copy of it apart\n`,
    );
  }

  const shutdown = gracefulShutdown(log);
  const server = createServer(createRequestListener(app, shutdown));
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
    server.listen(config.port, config.host);
  }).catch(async (error: NodeJS.ErrnoException) => {
    await replication?.stop();
    throw new Error(
      `cannot listen on ${config.host}:${config.port}: ${error.code ?? error.message}`,
    );
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  // With --port 0 the port is known only now: the OpenAPI servers entry and webhook profile links
  // use the public URL, so a derived one takes the real port.
  if (config.publicUrlDerived) config.publicUrl = base;
  log.info({ url: base, db: config.dbPath }, "listening");
  process.stdout.write(`smartmoney listening on ${base}\n`);
  if (demoKeys.length > 0) {
    // From a checkout the console is bundled on its first request: bundle it now, so the page
    // the demo points at opens at once (a failure shows on that request, with its cause).
    await consoleFiles().catch(() => undefined);
    printDemo(base, demoKeys);
  }

  // Refresh, ingest and deliveries run in a process of their own, never on this thread.
  const jobs =
    options.jobs && config.dbPath !== ":memory:"
      ? startBackgroundJobs({
          dbPath: config.dbPath,
          publicUrl: config.publicUrl,
          logLevel: config.logLevel,
          memoryMb: config.memoryMb,
          now: options.now === undefined ? null : app.deps.clock.now(),
          replicaUrl: options.replicate ?? process.env.SMARTMONEY_REPLICA_URL ?? null,
          log,
          onStorage: (status) => app.deps.db.storage.setRemote("jobs", status),
        })
      : null;
  // The jobs checkpoint the rate-limit ledger (checkpointLedgerForServer): this thread does only
  // if they stop for a while. And they alone checkpoint the main database: after a full
  // rebuild its WAL holds gigabytes until a worker thread of theirs has copied them back
  // (src/refresh/refresh.ts), and a webhook write of this thread's, committing meanwhile, would
  // otherwise copy them on the request thread. This thread's own writes to it are a few rows.
  if (jobs) {
    app.deps.db.limits.pragma(`wal_autocheckpoint = ${SERVER_LEDGER_AUTOCHECKPOINT}`);
    app.deps.db.writer.pragma("wal_autocheckpoint = 0");
  }
  // Refreshes happen in that process (or the CLI's): notice them, for as-of headers and caches.
  const watch = setInterval(() => app.syncReadModels(), READ_MODEL_POLL_MS);
  watch.unref();

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal, grace_ms: config.shutdownGraceMs }, "shutting down");
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      void shutdown.close(server, config.shutdownGraceMs).then(() => resolve());
    };
    const onTerm = () => stop("SIGTERM");
    const onInt = () => stop("SIGINT");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
  clearInterval(watch);
  await jobs?.stop(config.shutdownGraceMs);
  await replication?.stop();
  log.info("stopped");
}

interface DemoKey {
  tier: string;
  key: string;
}

/** One fresh key per tier on fixed demo accounts (keys are shown once, so each start mints new ones). */
function demoSetup(app: App): DemoKey[] {
  return TIERS.map((tier) => {
    const account = `demo-${tier.replace("_", "-")}`;
    const existing = app.accounts.get(account);
    if (existing && existing.tier !== tier) app.accounts.setTier(account, tier);
    const minted = app.accounts.mintKey({ tier, account, kind: "api" });
    if (!minted.ok) throw new Error(minted.reason);
    return { tier, key: minted.value.key };
  });
}

function printDemo(base: string, keys: DemoKey[]): void {
  const lines = ["", "Demo keys (one per tier; shown once):"];
  for (const { tier, key } of keys) lines.push(`  ${tier.padEnd(13)} ${key}`);
  const pro = keys.find((k) => k.tier === "terminal_pro")?.key ?? keys[0]?.key;
  lines.push(
    "",
    `Console: ${base}${CONSOLE_PATH}  (sign in with the terminal_pro key above: ${pro})`,
    "",
    "Try:",
    `  curl -s -H "Authorization: Bearer ${pro}" ${base}/v1/_ping`,
    "",
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** Seeds the small world when the database has no market data yet. */
async function demoWorld(app: App): Promise<void> {
  const { db, config, clock } = app.deps;
  const { n } = db.writer.prepare("SELECT count(*) AS n FROM markets").get() as { n: number };
  if (n > 0) {
    process.stdout.write(`demo: using the data already in ${config.dbPath} (--fresh seeds anew)\n`);
    return;
  }
  process.stdout.write("demo: seeding the small fixture world (a few seconds)...\n");
  const started = performance.now();
  const seeded = must(
    await seedWorld(app, {
      scale: "small",
      seed: 42,
      now: clock.now(),
      manifestPath: `${config.dbPath}.manifest.json`,
    }),
  );
  process.stdout.write(
    `demo: ${seeded.import.rows.toLocaleString("en-US")} rows, ${seeded.refresh.wallets} wallets, ${seeded.refresh.markets} markets in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

/** The database and the files that belong to it. */
function removeDatabase(path: string): void {
  for (const suffix of [
    "",
    "-wal",
    "-shm",
    ".limits",
    ".limits-wal",
    ".limits-shm",
    ".key",
    ".manifest.json",
    ".replication.json",
    ".litestream.yml",
  ]) {
    rmSync(`${path}${suffix}`, { force: true });
  }
}
