import { rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Command } from "commander";
import type { App } from "../../src/app";
import { TIERS } from "../../src/auth/tiers";
import { seedWorld } from "../../src/fixtures/seed-world";
import { ingestJob, serveStream } from "../../src/ingest/polymarket/job";
import { drainJob } from "../../src/jobs/drain";
import { refreshJob } from "../../src/jobs/refresh";
import { startScheduler } from "../../src/jobs/scheduler";
import { type CommonOptions, configFrom, withApp, withDbOption } from "../context";
import { CliError, must } from "../errors";

interface ServeOptions extends CommonOptions {
  demo?: boolean;
  fresh?: boolean;
  host?: string;
  port?: string;
  publicUrl?: string;
}

export function registerServe(program: Command): void {
  withDbOption(program.command("serve"))
    .description("migrate, then serve the API, the MCP endpoint and the scheduled jobs")
    .option("--host <address>", "listen address (SMARTMONEY_HOST)")
    .option("--port <port>", "listen port, 0 picks a free one (SMARTMONEY_PORT)")
    .option("--public-url <url>", "base for profile links in webhooks (SMARTMONEY_PUBLIC_URL)")
    .option(
      "--demo",
      "seed the small fixture world into an empty database and print a key per tier",
    )
    .option("--fresh", "with --demo: delete the database file first, so the world is seeded anew")
    .action((options: ServeOptions) => {
      if (options.fresh) {
        if (!options.demo)
          throw new CliError("--fresh only goes with --demo: it deletes the database");
        removeDatabase(configFrom(options).dbPath);
      }
      return withApp(options, (session) => runServer(session.app, options));
    });
}

/** Serves until SIGTERM or SIGINT, then shuts down in order: listener, in-flight requests, jobs. */
async function runServer(app: App, options: ServeOptions): Promise<void> {
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

  const server = serve({ fetch: app.http.fetch, hostname: config.host, port: config.port });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  }).catch((error: NodeJS.ErrnoException) => {
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
  if (demoKeys.length > 0) printDemo(base, demoKeys);

  const ingest = config.ingestCron ? ingestJob(app, config.ingestCron) : null;
  const scheduler = startScheduler(
    [drainJob(app), refreshJob(app), ...(ingest ? [ingest] : [])],
    log,
  );
  // With ingest on, the live socket runs beside the scheduled rounds (which are its fallback).
  const stream = ingest ? serveStream(app, () => ingest.runNow()) : null;

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, "shutting down");
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      server.close(() => resolve());
      // Idle keep-alive sockets would hold close() open; requests in flight still finish.
      if ("closeIdleConnections" in server) server.closeIdleConnections();
    };
    const onTerm = () => stop("SIGTERM");
    const onInt = () => stop("SIGINT");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
  await stream?.stop();
  await scheduler.stop();
  await app.webhooks.drainer.stop();
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
  lines.push("", "Try:", `  curl -s -H "Authorization: Bearer ${pro}" ${base}/v1/_ping`, "");
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
  for (const suffix of ["", "-wal", "-shm", ".key", ".manifest.json"]) {
    rmSync(`${path}${suffix}`, { force: true });
  }
}
