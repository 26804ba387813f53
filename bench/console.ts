/**
 * `npm run bench:console`: each web console view's time to interactive on the demo world, in
 * Debian's headless Chromium (bench/lib/browser.ts): `serve --demo` as a user starts it (the
 * built binary when SMARTMONEY_BINARY names one), signed in with its terminal_pro key.
 *
 * Time to interactive, per view: from the start of a fresh page load of the view's URL to the
 * moment its data is drawn, charts and graph included (the router's main[data-ready], and each
 * chart's and graph's own drawn mark). Each view is opened --runs times (default 7) after one
 * warm-up load; the median and the worst are reported. The goal is ≤ 1 s per view.
 *
 *   npm run bench:console [-- --runs 7]
 */
import { parseArgs } from "node:util";
import { launchChromium, openView, signIn, startDemo } from "./lib/browser";

const GOAL_MS = 1_000;

const { values } = parseArgs({ options: { runs: { type: "string", default: "7" } } });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1 || runs > 100) {
  process.stderr.write("bench:console: --runs must be an integer from 1 to 100\n");
  process.exit(1);
}

interface Key {
  address: string;
}

async function main(): Promise<void> {
  const demo = await startDemo();
  const browser = await launchChromium();
  try {
    const key = demo.keys.terminal_pro;
    const get = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${demo.base}${path}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
      return (await res.json()) as T;
    };
    // The views' subjects, picked as a user would: the top whale, the top trending market, the
    // largest cluster of at most 100 wallets and the largest of all.
    const whale = (await get<{ data: Key[] }>("/v1/leaderboards/whales?limit=1")).data[0];
    const market = (
      await get<{ data: { slug: string }[] }>("/v1/markets/trending?period_hours=168&limit=1")
    ).data[0];
    const clusters = (
      await get<{ clusters: { id: string; member_count: number }[] }>("/v1/clusters/sybil")
    ).clusters.sort((a, b) => b.member_count - a.member_count);
    const cluster = clusters.find((c) => c.member_count <= 100);
    const largest = clusters[0];
    if (!whale || !market || !cluster || !largest) {
      throw new Error("the demo world has no whale, market or cluster");
    }
    const routes = [
      "signals",
      "leaderboards/whales",
      "leaderboards/screen",
      "markets",
      `market/${market.slug}`,
      `wallet/${whale.address}`,
      "clusters",
      `clusters/by-id/${cluster.id}`,
      `clusters/by-id/${largest.id}`,
      "investigations",
      "webhooks",
      "status",
    ];
    const page = await (
      await browser.newContext({ viewport: { width: 1280, height: 900 } })
    ).newPage();
    await signIn(page, demo.consoleUrl, key);
    process.stdout.write(
      `bench:console: ${routes.length} views, ${runs} loads each after a warm-up, Chromium headless, ${demo.base}\n`,
    );
    process.stdout.write(
      `${"view".padEnd(24)} ${"median ms".padStart(10)} ${"worst ms".padStart(9)}\n`,
    );
    let slowest = 0;
    for (const route of routes) {
      await openView(page, demo.consoleUrl, route);
      const times: number[] = [];
      for (let i = 0; i < runs; i += 1) times.push(await openView(page, demo.consoleUrl, route));
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)] ?? 0;
      const worst = times[times.length - 1] ?? 0;
      slowest = Math.max(slowest, median);
      const name =
        route === `clusters/by-id/${largest.id}`
          ? `clusters/(${largest.member_count} wallets)`
          : route === `clusters/by-id/${cluster.id}`
            ? `clusters/(${cluster.member_count} wallets)`
            : route.slice(0, 24);
      process.stdout.write(
        `${name.padEnd(24)} ${median.toFixed(0).padStart(10)} ${worst.toFixed(0).padStart(9)}\n`,
      );
    }
    process.stdout.write(
      `bench:console: slowest median ${slowest.toFixed(0)} ms: ${slowest <= GOAL_MS ? "within" : "OVER"} the ${GOAL_MS} ms goal\n`,
    );
  } finally {
    await browser.close();
    await demo.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench:console: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
