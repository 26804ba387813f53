/// <reference lib="dom" />
// Code handed to page.evaluate runs in the browser: it is typed against the DOM.
import { mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chromiumPath,
  type Demo,
  hasChromium,
  launchChromium,
  openView,
  signIn,
  startDemo,
} from "../../bench/lib/browser";
import { format } from "../../console/format";

/**
 * The web console end to end, in Debian's Chromium driven by playwright-core, on the demo world
 * `smartmoney serve --demo` serves (the built binary when SMARTMONEY_BINARY names it). Every
 * figure checked is compared with what the API answers the same key. Under CI (which installs
 * Chromium) a missing Chromium fails them with a message saying how to install it; elsewhere they
 * are skipped without it, so `npm test` passes on a fresh machine (as the binary's smoke test is).
 *
 * SMARTMONEY_SCREENSHOTS=1 writes the wallet and cluster screenshots README shows into
 * docs/images/ (otherwise they are taken and checked, and land in a temp folder).
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const SHOTS = process.env.SMARTMONEY_SCREENSHOTS === "1" ? join(ROOT, "docs", "images") : null;

interface Problem {
  kind: string;
  text: string;
}

let demo: Demo;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: Server;
const hooks: string[] = [];
const problems: Problem[] = [];

/** A page whose console errors, script errors, failed requests and 4xx/5xx answers are kept. */
async function watchedPage(into: Problem[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning")
      into.push({ kind: `console.${m.type()}`, text: m.text() });
  });
  page.on("pageerror", (e) => into.push({ kind: "pageerror", text: e.message }));
  // Nothing from another origin: no CDN, no font, no network beyond the server.
  page.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(`${demo.base}/`) && !url.startsWith("data:") && url !== "about:blank") {
      into.push({ kind: "foreign request", text: url });
    }
  });
  page.on("requestfailed", (r) => {
    into.push({ kind: "requestfailed", text: `${r.url()} ${r.failure()?.errorText}` });
  });
  page.on("response", (r) => {
    if (r.status() >= 400) into.push({ kind: `http ${r.status()}`, text: r.url() });
  });
  return { context, page };
}

async function api<T>(key: string, path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${demo.base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  });
  expect(res.status, path).toBeLessThan(300);
  return (await res.json()) as T;
}

const pro = () => demo.keys.terminal_pro;
const texts = (p: Page, selector: string) =>
  p.$$eval(selector, (els) => els.map((e) => (e.textContent ?? "").trim()));
const fact = (p: Page, label: string) =>
  p.$eval(`[data-fact="${label}"]`, (e) => (e.textContent ?? "").trim());
/** The column of the first table in `scope`, by its header text. */
const column = (p: Page, scope: string, header: string) =>
  p.$$eval(
    `${scope} table`,
    (tables, name) => {
      const table = tables[0];
      if (!table) return [];
      const headers = [...table.querySelectorAll("thead th")].map((th) =>
        (th.textContent ?? "").trim(),
      );
      const i = headers.indexOf(name);
      return [...table.querySelectorAll("tbody tr")].map((tr) =>
        (tr.children[i]?.textContent ?? "").trim(),
      );
    },
    header,
  );

async function shot(p: Page, name: string): Promise<void> {
  const dir = SHOTS ?? join(demo.dbPath, "..");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  await p.screenshot({ path: file, fullPage: false });
  expect(readFileSync(file).length).toBeGreaterThan(10_000);
}

/** Skipped only outside CI, and only when there is no Chromium to drive. */
const skip = !process.env.CI && !hasChromium();

beforeAll(async () => {
  if (skip) return;
  chromiumPath(); // fails here, with the way to install it, when there is no Chromium
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      hooks.push(body);
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((done) => receiver.listen(0, "127.0.0.1", done));
  // The test action posts to this loopback receiver: private targets allowed for the test only.
  // Request logs on (info), so the test can see that no log line holds the key.
  demo = await startDemo({ SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", SMARTMONEY_LOG_LEVEL: "info" });
  browser = await launchChromium();
  ({ context, page } = await watchedPage(problems));
  const { port } = receiver.address() as AddressInfo;
  await api(pro(), "/v1/webhooks", {
    method: "POST",
    body: JSON.stringify({ callback_url: `http://127.0.0.1:${port}/hook`, min_score: 50 }),
  });
}, 180_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await demo?.stop();
  receiver?.close();
});

describe.skipIf(skip)("the console", () => {
  it("is what `serve --demo` points at, with a key to sign in with", () => {
    expect(demo.consoleUrl).toBe(`${demo.base}/console`);
    expect(demo.output()).toContain(`sign in with the terminal_pro key above: ${pro()}`);
  });

  it("is served with a strict Content-Security-Policy, no inline script, and small", async () => {
    const res = await fetch(demo.consoleUrl);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|\son\w+=/);
    let compressed = 0;
    for (const file of ["app.js", "app.css"]) {
      const asset = await fetch(`${demo.consoleUrl}/${file}`, {
        headers: { "accept-encoding": "gzip" },
      });
      expect(asset.status).toBe(200);
      expect(asset.headers.get("content-security-policy")).toBe(csp);
      // fetch undoes the gzip: the size on the wire is the header's.
      compressed += Number(asset.headers.get("content-length"));
    }
    expect(compressed).toBeGreaterThan(10_000);
    expect(compressed).toBeLessThan(400_000);
  });

  it("signs in with a key kept in session storage only, and shows the rate limit", async () => {
    await signIn(page, demo.consoleUrl, pro());
    expect(await page.evaluate(() => sessionStorage.getItem("smartmoney.console.key"))).toBe(pro());
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(page.url()).not.toContain(pro());
    expect((await page.textContent(".tier"))?.trim()).toBe("terminal_pro");
    expect(await page.textContent("#rate-limit")).toMatch(
      /^[\d,]+ of 5,000 calls left, resets \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
    );
  });

  it("signals: the large fills the API answers, updated without a reload", async () => {
    await openView(page, demo.consoleUrl, "signals");
    const shown = await column(page, "main section:nth-of-type(1)", "USD");
    const end = Date.now();
    const fills = await api<{ data: { usd_value: number }[] }>(
      pro(),
      `/v1/trades?start=${new Date(end - 86_400_000).toISOString()}&end=${new Date(end).toISOString()}&min_bet=10000&limit=50`,
    );
    expect(fills.data.length).toBeGreaterThan(0);
    expect(shown).toEqual(fills.data.map((t) => format.usd(t.usd_value)));
    const investigations = await api<{ data: { title: string }[] }>(
      pro(),
      "/v1/investigations?limit=10",
    );
    expect(await column(page, "main section:nth-of-type(2)", "Investigation")).toEqual(
      investigations.data.map((i) => i.title),
    );
    // The feed asks again on its own (every 15 s).
    await page.waitForFunction(
      () => document.querySelector<HTMLElement>(".updated")?.dataset.polls === "2",
      null,
      {
        timeout: 30_000,
      },
    );
  });

  it("leaderboards and the screener: the API's pages, sortable, wallets linking to dossiers", async () => {
    await openView(page, demo.consoleUrl, "leaderboards/whales");
    const whales = await api<{ data: { address: string }[] }>(
      pro(),
      "/v1/leaderboards/whales?limit=25",
    );
    const wallets = () =>
      page.$$eval("main table tbody a[data-wallet]", (as) =>
        as.map((a) => (a as HTMLElement).dataset.wallet),
      );
    expect(await wallets()).toEqual(whales.data.map((e) => e.address));
    // The API's own orders, over the whole board.
    const byWinRate = await api<{ data: { address: string }[] }>(
      pro(),
      "/v1/leaderboards/whales?limit=25&sort=winRate",
    );
    await page.selectOption("#board-order", "winRate");
    await expect.poll(wallets).toEqual(byWinRate.data.map((e) => e.address));

    await openView(page, demo.consoleUrl, "leaderboards/pnl");
    const first = await api<{ data: { address: string }[]; next_cursor: string }>(
      pro(),
      "/v1/leaderboards/pnl?limit=25",
    );
    expect(await wallets()).toEqual(first.data.map((e) => e.address));
    expect(first.next_cursor).toBeTruthy();
    await page.click("text=Next page");
    await page.waitForSelector("main [data-page='2']");
    const second = await api<{ data: { address: string; total_pnl: number | null }[] }>(
      pro(),
      `/v1/leaderboards/pnl?limit=25&cursor=${encodeURIComponent(first.next_cursor)}`,
    );
    expect(await wallets()).toEqual(second.data.map((e) => e.address));
    // Sorting by volume reorders the page, largest first; again, smallest first.
    const volumes = await api<{ data: { address: string; total_volume: number | null }[] }>(
      pro(),
      `/v1/leaderboards/pnl?limit=25&cursor=${encodeURIComponent(first.next_cursor)}`,
    );
    await page.click("main th button:text-is('Volume')");
    const byVolume = [...volumes.data].sort(
      (a, b) => (b.total_volume ?? -Infinity) - (a.total_volume ?? -Infinity),
    );
    expect(await wallets()).toEqual(byVolume.map((e) => e.address));
    expect(await page.getAttribute("main th:has(button:text-is('Volume'))", "aria-sort")).toBe(
      "descending",
    );
    await page.click("main th button:text-is('Volume')");
    expect(await wallets()).toEqual([...byVolume].reverse().map((e) => e.address));
    await page.click("text=Previous page");
    await page.waitForSelector("main [data-page='1']");
    expect(await wallets()).toEqual(first.data.map((e) => e.address));

    await openView(page, demo.consoleUrl, "leaderboards/screen");
    const screen = await api<{ data: { address: string; edge: number | null }[] }>(
      pro(),
      "/v1/signals/screen?limit=25",
    );
    expect(await wallets()).toEqual(screen.data.map((e) => e.address));
    expect(await column(page, "main", "Edge")).toEqual(
      screen.data.map((e) => format.percent(e.edge)),
    );
    await page.click("main table tbody a[data-wallet]");
    await page.waitForFunction(() => {
      const main = document.querySelector("main");
      return main?.dataset.view === "wallet" && main.dataset.ready === "true";
    });
  });

  it("wallet: its figures, charts drawn with every point, categories, trades, correlations, funding", async () => {
    const whales = await api<{ data: { address: string }[] }>(
      pro(),
      "/v1/leaderboards/whales?limit=1",
    );
    const address = whales.data[0]!.address;
    await openView(page, demo.consoleUrl, `wallet/${address}`);
    const profile = await api<{
      stats: { total_pnl: number; total_volume: number; total_bets: number; win_rate: number };
      alerts: { bet_value: number }[];
    }>(pro(), `/v1/wallets/${address}`);
    // The whale's alerts as the dossier lists them.
    expect(profile.alerts.length).toBeGreaterThan(0);
    expect(await column(page, "main section:has(h2:text-is('Signals'))", "USD")).toEqual(
      profile.alerts.map((a) => format.usd(a.bet_value)),
    );
    expect(await fact(page, "Total PnL")).toBe(format.usd(profile.stats.total_pnl));
    expect(await fact(page, "Volume")).toBe(format.usd(profile.stats.total_volume));
    expect(await fact(page, "Bets")).toBe(format.number(profile.stats.total_bets));
    expect(await fact(page, "Win rate")).toBe(format.percent(profile.stats.win_rate));
    const score = await api<{ smart_money_score: number }>(pro(), `/v1/signals/wallet/${address}`);
    expect(await fact(page, "Smart-money score")).toBe(format.number(score.smart_money_score));

    let fills = 0;
    let cursor: string | null = null;
    for (let i = 0; i < 4; i += 1) {
      const pageOf: { data: unknown[]; next_cursor: string | null } = await api(
        pro(),
        `/v1/wallets/${address}/trades?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      fills += pageOf.data.length;
      cursor = pageOf.next_cursor;
      if (!cursor) break;
    }
    const drawn = (title: string) =>
      page.getAttribute(`figure[data-chart="${title}"]`, "data-drawn");
    expect(fills).toBeGreaterThan(1);
    // A point per fill, per resolution of a market it held, and the end.
    const points = Number(await drawn("PnL over time (USD)"));
    expect(points).toBeGreaterThan(fills);
    expect(points).toBeLessThanOrEqual(fills + profile.stats.total_bets + 1);
    const timing = await api<{ buckets: unknown[] }>(pro(), `/v1/wallets/${address}/timing`);
    expect(await drawn("Resolved bets by time before resolution")).toBe(
      String(timing.buckets.length),
    );
    expect(await page.$$("figure.chart canvas")).toHaveLength(2);

    const categories = await api<{ categories: { category: string; pnl: number | null }[] }>(
      pro(),
      `/v1/wallets/${address}/categories`,
    );
    expect(await column(page, "main section:has(h2:text-is('Categories'))", "PnL")).toEqual(
      categories.categories.map((c) => format.usd(c.pnl)),
    );
    const correlated = await api<{ correlated: { address: string }[] }>(
      pro(),
      `/v1/wallets/${address}/correlated`,
    );
    expect(
      await page.$$eval("main section:has(h2:text-is('Correlated wallets')) a[data-wallet]", (as) =>
        as.map((a) => (a as HTMLElement).dataset.wallet),
      ),
    ).toEqual(correlated.correlated.map((c) => c.address));
    const connections = await api<{ connections: unknown[] }>(
      pro(),
      `/v1/wallets/${address}/connections`,
    );
    expect(
      await page.$$("main section:has(h2:text-is('Funding connections')) tbody tr"),
    ).toHaveLength(Math.max(1, connections.connections.length));
    await shot(page, "console-wallet.png");
  });

  it("wallet: the PnL line ends on the ledger's total_pnl the API serves", async () => {
    const board = await api<{
      data: { address: string; pnl_source: string; total_pnl: number; total_bets: number }[];
    }>(pro(), "/v1/leaderboards/pnl?limit=100");
    const ledger = board.data.filter((e) => e.pnl_source === "ledger" && e.total_bets <= 30);
    expect(ledger.length).toBeGreaterThan(2);
    for (const wallet of ledger.slice(0, 3)) {
      await openView(page, demo.consoleUrl, `wallet/${wallet.address}`);
      const last = await page.getAttribute('figure[data-chart="PnL over time (USD)"]', "data-last");
      expect(Number(last), wallet.address).toBeCloseTo(wallet.total_pnl, 1);
    }
  });

  it("market: price with whale entries, implied probability beside it, flow, holders", async () => {
    const trending = await api<{ data: { slug: string }[] }>(
      pro(),
      "/v1/markets/trending?period_hours=168&limit=1",
    );
    const slug = trending.data[0]!.slug;
    await openView(page, demo.consoleUrl, `market/${slug}`);
    const market = await api<{
      condition_id: string;
      stats: { last_price: number };
      top_yes_holders: { address: string }[];
    }>(pro(), `/v1/markets/${slug}`);
    const sentiment = await api<{ implied_probability: { yes_implied_prob: number } }>(
      pro(),
      `/v1/markets/${slug}/sentiment`,
    );
    expect(await fact(page, "Price")).toBe(format.price(market.stats.last_price));
    expect(await fact(page, "Implied probability")).toBe(
      format.price(sentiment.implied_probability.yes_implied_prob),
    );
    let fills = 0;
    let cursor: string | null = null;
    for (let i = 0; i < 5; i += 1) {
      const pageOf: { data: unknown[]; next_cursor: string | null } = await api(
        pro(),
        `/v1/trades?market=${market.condition_id}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      fills += pageOf.data.length;
      cursor = pageOf.next_cursor;
      if (!cursor) break;
    }
    expect(await page.getAttribute('figure[data-chart="YES price"]', "data-points")).toBe(
      String(fills),
    );
    // Price line and implied line: a point per fill each; plus one dot per whale entry.
    const drawn = Number(await page.getAttribute('figure[data-chart="YES price"]', "data-drawn"));
    expect(drawn).toBeGreaterThan(2 * fills);
    const flow = await api<{ buckets: unknown[] }>(pro(), `/v1/markets/${slug}/flow?minutes=1440`);
    expect(
      await page.getAttribute(
        'figure[data-chart="Whale net flow into YES, last 24 h (USD per bucket)"]',
        "data-drawn",
      ),
    ).toBe(String(flow.buckets.length));
    const yesHolders = await page.$$eval(
      "main section:has(h2:text-is('Holders')) .table-wrap:first-of-type a[data-wallet]",
      (as) => as.map((a) => (a as HTMLElement).dataset.wallet),
    );
    expect(yesHolders).toEqual(market.top_yes_holders.map((h) => h.address));
  });

  it("clusters: the list, and a cluster drawn as a graph with every node and edge", async () => {
    await openView(page, demo.consoleUrl, "clusters");
    const list = await api<{ clusters: { id: string; funder: string; member_count: number }[] }>(
      pro(),
      "/v1/clusters/sybil?limit=100",
    );
    expect(await column(page, "main", "Cluster")).toEqual(list.clusters.map((c) => c.id));
    const cluster = list.clusters
      .filter((c) => c.member_count <= 100)
      .sort((a, b) => b.member_count - a.member_count)[0]!;
    await page.click(`main a[href="#/clusters/by-id/${cluster.id}"]`);
    await page.waitForSelector(".graph[data-nodes]");
    const graph = await api<{
      nodes: { address: string }[];
      edges: { from: string; to: string }[];
    }>(pro(), `/v1/clusters/${cluster.funder}/graph`);
    expect(await page.getAttribute(".graph", "data-nodes")).toBe(String(graph.nodes.length));
    const known = new Set(graph.nodes.map((n) => n.address));
    const edges = graph.edges.filter((e) => known.has(e.from) && known.has(e.to));
    expect(await page.getAttribute(".graph", "data-edges")).toBe(String(edges.length));
    // The renderer painted: its canvases hold non-blank pixels.
    const painted = await page.$$eval(".graph canvas", (canvases) =>
      canvases.some((c) => {
        const ctx = (c as HTMLCanvasElement).getContext("2d");
        if (!ctx || c.clientWidth === 0) return false;
        const { data } = ctx.getImageData(
          0,
          0,
          (c as HTMLCanvasElement).width,
          (c as HTMLCanvasElement).height,
        );
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) return true;
        return false;
      }),
    );
    expect(painted).toBe(true);
    await shot(page, "console-cluster.png");
    // Pan and zoom: a wheel over the graph changes the picture.
    const before = await page.screenshot({
      clip: (await (await page.$(".graph"))!.boundingBox())!,
    });
    await page.hover(".graph");
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(200);
    const after = await page.screenshot({ clip: (await (await page.$(".graph"))!.boundingBox())! });
    expect(Buffer.compare(before, after)).not.toBe(0);
    // Its wallets link to their dossiers.
    await page.click(`main table a[data-wallet="${graph.nodes[1]!.address}"]`);
    await page.waitForFunction(() => {
      const main = document.querySelector("main");
      return main?.dataset.view === "wallet" && main.dataset.ready === "true";
    });
  });

  it("investigations: the open ones, and a market analysis run from the page", async () => {
    await openView(page, demo.consoleUrl, "investigations");
    const open = await api<{ data: { title: string }[] }>(pro(), "/v1/investigations?limit=50");
    expect(
      await column(page, "main section:has(h2:text-is('Open investigations'))", "Investigation"),
    ).toEqual(open.data.map((i) => i.title));
    const trending = await api<{ data: { slug: string }[] }>(
      pro(),
      "/v1/markets/trending?period_hours=168&limit=1",
    );
    const slug = trending.data[0]!.slug;
    await page.fill("#analyze-slug", slug);
    await page.click("text=Run analysis");
    await page.waitForSelector(".analysis[data-done]");
    const analysis = await api<{ smart_money_prob: number; market_price: number }>(
      pro(),
      `/v1/analyze/market/${slug}`,
    );
    expect(await fact(page, "Smart-money probability")).toBe(
      format.price(analysis.smart_money_prob),
    );
    expect(await fact(page, "Market price")).toBe(format.price(analysis.market_price));
  });

  it("webhooks: the account's endpoints, their deliveries, and the test action", async () => {
    await openView(page, demo.consoleUrl, "webhooks");
    const endpoints = await api<{ data: { id: string; callback_url: string }[] }>(
      pro(),
      "/v1/webhooks",
    );
    expect(await texts(page, "main section h2")).toEqual(endpoints.data.map((e) => e.callback_url));
    await page.click("text=Send a test");
    await page.waitForSelector(".test-result[data-ok]");
    expect(await page.textContent(".test-result")).toMatch(/^Delivered: HTTP 200 in \d+ ms\.$/);
    expect(hooks.length).toBe(1);
    await openView(page, demo.consoleUrl, "webhooks");
    const deliveries = await api<{ data: { status: string }[] }>(
      pro(),
      `/v1/webhooks/${endpoints.data[0]!.id}/deliveries?limit=10`,
    );
    if (deliveries.data.length === 0) {
      expect(await texts(page, "main section tbody td")).toEqual(["Nothing here."]);
    } else {
      expect(await column(page, "main section", "Status")).toEqual(
        deliveries.data.map((d) => d.status),
      );
    }
  });

  it("status: the read models' age and the newest fill, as the API reports them", async () => {
    await openView(page, demo.consoleUrl, "status");
    const end = Date.now();
    const res = await fetch(
      `${demo.base}/v1/trades?start=${new Date(end - 90 * 86_400_000).toISOString()}&end=${new Date(end).toISOString()}&limit=1`,
      { headers: { authorization: `Bearer ${pro()}` } },
    );
    const newest = ((await res.json()) as { data: { trade_timestamp: string }[] }).data[0]!;
    expect(await fact(page, "Newest fill")).toBe(format.time(newest.trade_timestamp));
    expect(await fact(page, "Computed as of")).toBe(
      format.time(res.headers.get("x-read-model-as-of")),
    );
    expect(await fact(page, "Age (s)")).toMatch(/^\d[\d,]*$/);
    expect(await fact(page, "Storage")).toBe("ok");
  });

  it("planted hostile title and wallet name render as text", async () => {
    const db = new Database(demo.dbPath, { readonly: true });
    const market = db
      .prepare("SELECT slug, title FROM markets WHERE title LIKE '%<script>%'")
      .get() as { slug: string; title: string } | undefined;
    const wallet = db
      .prepare("SELECT address, platform_name FROM wallets WHERE platform_name LIKE '%<script>%'")
      .get() as { address: string; platform_name: string } | undefined;
    db.close();
    expect(market).toBeDefined();
    expect(wallet).toBeDefined();
    await openView(page, demo.consoleUrl, `market/${market!.slug}`);
    expect(await page.textContent("main h1")).toBe(market!.title);
    await openView(page, demo.consoleUrl, `wallet/${wallet!.address}`);
    expect(await page.textContent("main h1")).toBe(wallet!.platform_name);
    await page.hover("main h1");
    expect(await page.$$("main script, main img, main b")).toHaveLength(0);
    expect(
      await page.evaluate(() => (window as unknown as { __planted?: number }).__planted),
    ).toBeUndefined();
  });

  it("showed no console error and made no failed request on any view", () => {
    expect(problems).toEqual([]);
  });

  it("never logged the key: the server's output holds it only where the demo printed it", () => {
    const logged = demo.output() + demo.errors();
    expect(logged).toContain('"msg":"request"');
    // The key line, the console line and the curl line.
    expect(logged.split(pro()).length - 1).toBe(3);
  });

  it("shows a lower tier's key the tier it needs, not a broken page", async () => {
    const seen: Problem[] = [];
    const lower = await watchedPage(seen);
    try {
      await signIn(lower.page, demo.consoleUrl, demo.keys.free);
      await openView(lower.page, demo.consoleUrl, "leaderboards/whales");
      expect(await lower.page.getAttribute("main .upgrade", "data-tier-needed")).toBe("terminal");
      expect(await lower.page.textContent("main .upgrade strong")).toBe("Needs the terminal tier");
      // A free key sees the lite profile, and the tier the rest of the dossier needs.
      const whales = await api<{ data: { address: string }[] }>(
        pro(),
        "/v1/leaderboards/whales?limit=1",
      );
      await openView(lower.page, demo.consoleUrl, `wallet/${whales.data[0]!.address}`);
      expect(await fact(lower.page, "Total PnL")).not.toBe("–");
      expect((await lower.page.$$("main .upgrade")).length).toBeGreaterThan(0);
      await lower.page.click("button.sign-out");
      await signIn(lower.page, demo.consoleUrl, demo.keys.terminal);
      await openView(lower.page, demo.consoleUrl, "clusters");
      expect(await lower.page.getAttribute("main .upgrade", "data-tier-needed")).toBe(
        "terminal_pro",
      );
      await openView(lower.page, demo.consoleUrl, "investigations");
      expect(await lower.page.getAttribute("main .upgrade", "data-tier-needed")).toBe(
        "terminal_pro",
      );
      // A cluster by id is a terminal call; its funding graph is terminal_pro: the members are
      // drawn around their funder instead, with the reason.
      const clusters = await api<{ clusters: { id: string; member_count: number }[] }>(
        pro(),
        "/v1/clusters/sybil",
      );
      const one = clusters.clusters.find((c) => c.member_count <= 100)!;
      const members = await api<{ members: unknown[] }>(
        demo.keys.terminal,
        `/v1/clusters/by-id/${one.id}`,
      );
      await openView(lower.page, demo.consoleUrl, `clusters/by-id/${one.id}`);
      expect(await lower.page.getAttribute(".graph", "data-nodes")).toBe(
        String(members.members.length),
      );
      expect(await lower.page.textContent("main .notice")).toContain("needs the terminal_pro tier");
      // The API's 403s, and the browser's line about each, are all there is.
      const unexpected = seen.filter(
        (p) =>
          !(p.kind === "http 403" || (p.kind === "console.error" && /status of 403/.test(p.text))),
      );
      expect(unexpected).toEqual([]);
      expect(seen.length).toBeGreaterThan(0);
    } finally {
      await lower.context.close();
    }
  });

  it("shows the API's error for a bad route, not a broken page", async () => {
    const seen: Problem[] = [];
    const other = await watchedPage(seen);
    try {
      await signIn(other.page, demo.consoleUrl, pro());
      await openView(other.page, demo.consoleUrl, "wallet/0xnot-an-address");
      expect(await other.page.getAttribute("main .notice.error", "data-code")).toBe("bad_request");
      await openView(other.page, demo.consoleUrl, "market/no-such-market-%E0%A4%A");
      expect(await other.page.getAttribute("main .notice.error", "data-code")).toBe("not_found");
      expect(seen.filter((p) => p.kind === "pageerror")).toEqual([]);
    } finally {
      await other.context.close();
    }
  });

  it("has no serious or critical accessibility violation on any view (axe-core)", async () => {
    const axeSource = readFileSync(
      createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
      "utf8",
    );
    const whales = await api<{ data: { address: string }[] }>(
      pro(),
      "/v1/leaderboards/whales?limit=1",
    );
    const trending = await api<{ data: { slug: string }[] }>(
      pro(),
      "/v1/markets/trending?period_hours=168&limit=1",
    );
    const clusters = await api<{ clusters: { funder: string; member_count: number }[] }>(
      pro(),
      "/v1/clusters/sybil",
    );
    const small = clusters.clusters.find((c) => c.member_count <= 100)!;
    const routes = [
      "signals",
      "leaderboards/whales",
      "leaderboards/screen",
      "markets",
      `market/${trending.data[0]!.slug}`,
      `wallet/${whales.data[0]!.address}`,
      "clusters",
      `clusters/${small.funder}`,
      "investigations",
      "webhooks",
      "status",
    ];
    const violations: string[] = [];
    for (const route of routes) {
      await openView(page, demo.consoleUrl, route);
      // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses inline script.
      await page.evaluate(axeSource);
      const found = await page.evaluate(async () => {
        const axe = (
          window as unknown as {
            axe: {
              run(): Promise<{
                violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
              }>;
            };
          }
        ).axe;
        const result = await axe.run();
        return result.violations
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map(
            (v) =>
              `${v.id} (${v.impact}): ${v.nodes
                .map((n) => n.target.join(" "))
                .slice(0, 3)
                .join(", ")}`,
          );
      });
      violations.push(...found.map((v) => `${route}: ${v}`));
    }
    expect(violations).toEqual([]);
    // The sign-in page too.
    await page.click("button.sign-out");
    await page.evaluate(axeSource);
    const signInViolations = await page.evaluate(async () => {
      const axe = (
        window as unknown as {
          axe: { run(): Promise<{ violations: { id: string; impact: string }[] }> };
        }
      ).axe;
      return (await axe.run()).violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => v.id);
    });
    expect(signInViolations).toEqual([]);
  });
});
