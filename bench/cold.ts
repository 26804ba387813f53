/**
 * `npm run bench:cold`: what each endpoint costs when its answer is not kept, and how long it
 * holds the event loop, on a seeded world.
 *
 * `npm run bench` measures answers the server keeps (every request after the first is served
 * from a cache until the next refresh), so a read that takes a second once per refresh and
 * wallet never shows in its table, yet holds every other request for that second. This bench
 * asks each GET endpoint of bench/lib/endpoints.ts for answers nothing has kept:
 *
 *  - endpoints of a wallet or a market: one request each for --ids other wallets (the busiest
 *    by trades) or markets (the busiest unresolved), after every route was asked once for the
 *    bench's own picks (so the figures hold no first-call preparation);
 *  - every other endpoint: --ids requests, each after a new read-model generation (what a
 *    refresh does to every kept answer).
 *
 * It runs the app in process at the world's time (bench/lib/world.ts), as the server runs it,
 * and reports per endpoint the median and largest time to answer and the longest the event loop
 * was held meanwhile (a `setImmediate` chain beside the request: a stepped read yields between
 * its steps, src/read/stepped.ts). Any hold over 50 ms (issue 14's event-loop goal) is flagged.
 *
 *   npm run bench:cold -- [--world small|medium|large] [--ids 8] [--seed 42]
 *
 * Writes bench/results/cold.json and a line of bench/results/history.jsonl (bench/lib/results.ts).
 */
import { parseArgs } from "node:util";
import { openConnection } from "../src/db/open";
import { benchEndpoints, pickFromWorld } from "./lib/endpoints";
import { alignColumns, median } from "./lib/report";
import { recordResults } from "./lib/results";
import { isScale, WORLD_NOW, withWorldApp, worldClock, worldFor } from "./lib/world";

/** Issue 14: the request thread's event-loop delay stays within 50 ms. */
const HOLD_GOAL_MS = 50;

const { values } = parseArgs({
  options: {
    world: { type: "string", default: "large" },
    ids: { type: "string", default: "8" },
    seed: { type: "string", default: "42" },
  },
});
if (!isScale(values.world)) throw new Error(`--world must be small, medium or large`);
const ids = Number(values.ids);
if (!Number.isInteger(ids) || ids < 1) throw new Error("--ids must be a positive integer");

const world = await worldFor({
  scale: values.world,
  seed: Number(values.seed),
  say: (line) => process.stderr.write(`bench:cold: ${line}\n`),
});
const picks = pickFromWorld(world.dbPath, ids);

/** Other wallets and markets than the picks: the busiest, whose reads cost the most. */
function others(): { wallets: string[]; markets: string[] } {
  const db = openConnection(world.dbPath, { readonly: true });
  try {
    const wallets = db
      .prepare(
        "SELECT address FROM wallet_stats WHERE address <> ? ORDER BY trade_count DESC, address LIMIT ?",
      )
      .pluck()
      .all(picks.wallet, ids) as string[];
    return { wallets, markets: picks.coldSlugs };
  } finally {
    db.close();
  }
}

interface Sample {
  ms: number;
  holdMs: number;
}

const rows: { endpoint: string; kind: string; samples: Sample[] }[] = [];
await withWorldApp(
  { db: world.dbPath, clock: worldClock(WORLD_NOW, { frozen: true }) },
  async (app) => {
    const minted = app.accounts.mintKey({
      account: `bench-cold-${Date.now()}`,
      tier: "terminal_pro",
      kind: "api",
    });
    if (!minted.ok) throw new Error(minted.reason);
    const headers = { authorization: `Bearer ${minted.value.key}` };

    /** One request, timed, with the longest turn of the event loop beside it. */
    async function sample(path: string): Promise<Sample> {
      let done = false;
      let last = performance.now();
      let holdMs = 0;
      const turn = () => {
        const now = performance.now();
        holdMs = Math.max(holdMs, now - last);
        last = now;
        if (!done) setImmediate(turn);
      };
      setImmediate(turn);
      const started = performance.now();
      const response = await app.http.request(path, { headers });
      await response.text();
      const ms = performance.now() - started;
      done = true;
      // The hold that ended with the answer counts too.
      holdMs = Math.max(holdMs, performance.now() - last);
      if (response.status !== 200) throw new Error(`${path}: status ${response.status}`);
      return { ms, holdMs };
    }

    const endpoints = benchEndpoints(picks).filter((e) => e.method === "GET" && e.tier !== null);
    for (const e of endpoints) await sample(e.path);
    const { wallets, markets } = others();
    for (const e of endpoints) {
      const samples: Sample[] = [];
      let kind: string;
      if (e.path.includes(picks.wallet)) {
        kind = "per wallet";
        for (const wallet of wallets)
          samples.push(await sample(e.path.replace(picks.wallet, wallet)));
      } else if (e.path.includes(picks.market.slug)) {
        kind = "per market";
        for (const slug of markets)
          samples.push(await sample(e.path.replace(picks.market.slug, slug)));
      } else {
        kind = "per refresh";
        for (let i = 0; i < ids; i++) {
          app.readModelsChanged();
          samples.push(await sample(e.path));
        }
      }
      rows.push({ endpoint: e.name, kind, samples });
    }
  },
);

rows.sort(
  (a, b) =>
    Math.max(...b.samples.map((s) => s.holdMs)) - Math.max(...a.samples.map((s) => s.holdMs)),
);
const table = rows.map((r) => {
  const ms = r.samples.map((s) => s.ms);
  const hold = Math.max(...r.samples.map((s) => s.holdMs));
  return [
    r.endpoint,
    r.kind,
    String(r.samples.length),
    median(ms).toFixed(1),
    Math.max(...ms).toFixed(1),
    hold.toFixed(1),
    hold > HOLD_GOAL_MS ? `> ${HOLD_GOAL_MS} ms` : "",
  ];
});
console.log(
  alignColumns([
    ["endpoint", "cold answer", "samples", "median ms", "max ms", "longest hold ms", "flag"],
    ...table,
  ]),
);
recordResults("cold", {
  bench: "cold",
  at: new Date().toISOString(),
  world: world.scale,
  ids,
  rows,
});
