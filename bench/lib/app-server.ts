/**
 * The app server for `npm run bench`: the real app, built exactly as `smartmoney serve` builds it
 * (cli/context.ts withApp: config, migration, createApp), served as `serve` serves it
 * (src/http/listener.ts: the answer lane, then the router through @hono/node-server) on a free
 * loopback port, logging at warn. Started by bench/http.ts pinned to one core.
 *
 *   app-server.ts [--db PATH] [--now MS] [--tiers terminal_pro,free]
 *
 * Without --db it serves a fresh database in a temp folder (removed on exit); with --db, an
 * existing one (e.g. a seeded fixture world). With --now the app's clock starts at that instant
 * (epoch ms) and runs on from there, so a cached world is served at its own time instead of
 * today's (bench/lib/world.ts withWorldApp); without it, the system clock. For each tier it mints a key on an account
 * `bench-<tier>` whose rate limits are raised (what `accounts set-limits` does) so the load is
 * never throttled, then prints `{"port":N,"keys":{tier:key}}` on stdout. Stops on SIGTERM.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { withApp } from "../../cli/context";
import type { App } from "../../src/app";
import { isTier, type Tier } from "../../src/auth/tiers";
import { createRequestListener } from "../../src/http/listener";
import { withWorldApp, worldClock } from "./world";

/** Far above anything a benchmark sends in an hour or a month. */
const RAISED_LIMIT = 1_000_000_000;

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    now: { type: "string" },
    tiers: { type: "string", default: "terminal_pro" },
  },
});
const tiers = (values.tiers ?? "").split(",").filter((tier) => tier !== "");
const badTier = tiers.find((tier) => !isTier(tier));
if (badTier !== undefined) throw new Error(`unknown tier "${badTier}"`);

const scratch = values.db ? undefined : mkdtempSync(join(tmpdir(), "smartmoney-bench-"));
const dbPath = values.db ?? join(scratch!, "bench.db");

const start = values.now === undefined ? undefined : Number(values.now);
if (start !== undefined && !Number.isSafeInteger(start)) throw new Error("--now must be epoch ms");

async function serveApp(app: App): Promise<void> {
  const keys: Partial<Record<Tier, string>> = {};
  for (const tier of tiers as Tier[]) {
    const account = `bench-${tier.replace("_", "-")}`;
    const existing = app.accounts.get(account);
    if (existing && existing.tier !== tier) app.accounts.setTier(account, tier);
    const minted = app.accounts.mintKey({ tier, account, kind: "api" });
    if (!minted.ok) throw new Error(minted.reason);
    const raised = app.accounts.setLimits(account, {
      hourly: RAISED_LIMIT,
      monthly: RAISED_LIMIT,
    });
    if (!raised.ok) throw new Error(raised.reason);
    keys[tier] = minted.value.key;
  }

  const server = createServer(createRequestListener(app));
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
    server.listen(0, "127.0.0.1");
  });
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ port, keys })}\n`);

  await new Promise<void>((resolve) => {
    process.once("SIGTERM", () => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  });
}

try {
  if (start === undefined)
    await withApp({ db: dbPath, logLevel: "warn" }, ({ app }) => serveApp(app));
  else await withWorldApp({ db: dbPath, clock: worldClock(start) }, serveApp);
} finally {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}
