import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateWorld } from "../../src/fixtures/world";
import { importJsonl } from "../../src/ingest/import";
import type { IngestHooks } from "../../src/ingest/ingest";
import type { ImportSource } from "../../src/ingest/sources";
import { createTestApp, type TestApp } from "../helpers/app";
import { catchAllEndpoint } from "../helpers/endpoints";
import { address, label, market, trade, transfer } from "../ingest/builders";

/**
 * An import file runs signal detection with hooks scoped to the file (src/signals/detector.ts):
 * funding facts and market sizes are read once per file and kept up to date by the ingest
 * path's reports, instead of read afresh for every batch. The signals, their scores and
 * explanations, and the deliveries they make must be exactly those of reading afresh.
 */
const NOW = Date.parse("2026-11-20T12:00:00.000Z");
const world = generateWorld({ scale: "small", seed: 7, now: NOW });
const worldFile: ImportSource = { name: "small-world", open: () => world.lines };

/**
 * A file whose later lines change facts that earlier batches read: wallets trade before their
 * funding arrives (first funding, cluster membership), a funder is labelled an exchange after
 * its wallets traded, and a market's sizes grow between two whale trades. Fillers in another
 * market push each change into a later batch (2,048 trades).
 */
function changingFacts(): string[] {
  const T = 1_780_000_000_000;
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;
  const lines: object[] = [market(1, { category: "crypto" }), market(2), market(3)];
  let n = 0;
  const filler = (count: number) => {
    for (let i = 0; i < count; i++, n++) {
      lines.push(trade(n, { condition_id: market(2).condition_id, timestamp: T + n * 1000 }));
    }
  };
  const [funder, exchange] = [address(900), address(901)];
  const ring = [address(101), address(102), address(103)];
  const labelled = [address(201), address(202), address(203)];
  const bet = (n: number, wallet: string, over: object) =>
    trade(n, { wallet, price: 0.06, size: 50_000, timestamp: T + 3 * HOUR, ...over });
  // Batch 1: the ring and the soon-labelled wallets trade, unfunded; a first whale trade.
  for (const [i, w] of [...ring, ...labelled].entries()) {
    lines.push(trade(500_000 + i, { wallet: w, price: 0.5, size: 10, timestamp: T + i }));
  }
  lines.push(trade(600_000, { wallet: address(300), price: 0.5, size: 40_000, timestamp: T }));
  // Market 3 (a niche market, about $16k over these days): its volume ten days back in batch 1,
  // a long shot 25 days on in batch 2, which the scope caches with the 30 days before it only,
  // and in batch 3 a ring member's long shot before that: its 30-day volume counts the fills
  // ten days back, which the scope then reads in front of what it holds.
  const inMarket3 = { condition_id: market(3).condition_id };
  for (let i = 0; i < 5; i++) {
    lines.push(
      trade(700_000 + i, {
        ...inMarket3,
        wallet: address(400),
        price: 0.9,
        size: 3_500 + i * 10,
        timestamp: T - 10 * DAY + i,
      }),
    );
  }
  filler(2_100);
  lines.push(bet(710_000, address(410), { ...inMarket3, timestamp: T + 25 * DAY }));
  // Their funding, then (batch 2) their long shots; more trades in the whale's market.
  for (const [i, to] of ring.entries())
    lines.push(transfer(i, { from: funder, to, amount: 5_000, timestamp: T + HOUR + i }));
  for (const [i, to] of labelled.entries())
    lines.push(transfer(10 + i, { from: exchange, to, amount: 5_000, timestamp: T + HOUR + i }));
  for (const [i, w] of ring.entries())
    lines.push(bet(510_000 + i, w, { timestamp: T + 2 * HOUR + i }));
  for (const [i, w] of labelled.entries()) {
    lines.push(trade(540_000 + i, { wallet: w, price: 0.5, size: 10, timestamp: T + 2 * HOUR }));
  }
  for (let i = 0; i < 40; i++) {
    lines.push(
      trade(620_000 + i, {
        wallet: address(301),
        price: 0.5,
        size: 50_000 + i * 1_000,
        timestamp: T + HOUR,
      }),
    );
  }
  filler(2_100);
  // The exchange is labelled now (batch 3): its wallets are no cluster any more.
  lines.push(label(1, { address: exchange }));
  for (const [i, w] of labelled.entries()) lines.push(bet(520_000 + i, w, {}));
  for (const [i, w] of ring.entries()) lines.push(bet(530_000 + i, w, {}));
  lines.push(bet(515_000, ring[0]!, { ...inMarket3, timestamp: T + 3 * HOUR + 10 }));
  lines.push(
    trade(600_001, { wallet: address(300), price: 0.5, size: 60_000, timestamp: T + 4 * HOUR }),
  );
  return lines.map((l) => JSON.stringify(l));
}

type Signal = Record<string, unknown>;
type Fired = { signals: Signal[]; deliveries: number };
let scoped: Fired;
let afresh: Fired;
let changingScoped: Fired;
let changingAfresh: Fired;
let shuffledScoped: Fired;
let shuffledAfresh: Fired;
const apps: TestApp[] = [];

async function importWith(source: ImportSource, pick: (hooks: IngestHooks) => IngestHooks) {
  // Every signal of the file queues its deliveries, however old its trade: the deliveries are
  // compared too (webhooks/old-news.test.ts holds the age past which they are not queued).
  const t = createTestApp({
    env: { SMARTMONEY_WEBHOOK_ALLOW_PRIVATE: "1", SMARTMONEY_ALERT_MAX_AGE: "100000h" },
  });
  apps.push(t);
  t.clock.set(NOW);
  catchAllEndpoint(t);
  const imported = await importJsonl(
    { db: t.db, clock: t.clock, hooks: pick(t.app.ingestHooks) },
    source,
  );
  if (!imported.ok) throw new Error(imported.reason);
  // The import leaves foreign keys unchecked for the file: every reference must hold anyway,
  // and the check is back on afterwards.
  expect(t.db.writer.pragma("foreign_key_check")).toEqual([]);
  expect(t.db.writer.pragma("foreign_keys", { simple: true })).toBe(1);
  return {
    signals: t.db.writer
      .prepare(
        `SELECT type, wallet, wallet_type, market_id, trade_id, score, bet_value, side, outcome,
                price, explanation, created_at FROM signals ORDER BY id`,
      )
      .all() as Signal[],
    deliveries: t.db.writer.prepare("SELECT count(*) FROM deliveries").pluck().get() as number,
  };
}

/** `lines` in a seeded random order (Fisher–Yates over a small LCG). */
function shuffledLines(lines: string[], seed: number): string[] {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  for (let i = lines.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
  }
  return lines;
}

/** The same detector without its scope: every batch reads its facts afresh. */
const withoutScope = (hooks: IngestHooks): IngestHooks => ({ onNewTrades: hooks.onNewTrades });

beforeAll(async () => {
  scoped = await importWith(worldFile, (hooks) => hooks);
  afresh = await importWith(worldFile, withoutScope);
  const lines = changingFacts();
  const changing: ImportSource = { name: "changing-facts", open: () => lines };
  changingScoped = await importWith(changing, (hooks) => hooks);
  changingAfresh = await importWith(changing, withoutScope);
  // The world's lines out of time order: each batch's markets reach back past what the scope
  // has cached, again and again.
  const shuffled = shuffledLines([...world.lines], 11);
  const outOfOrder: ImportSource = { name: "shuffled-world", open: () => shuffled };
  shuffledScoped = await importWith(outOfOrder, (hooks) => hooks);
  shuffledAfresh = await importWith(outOfOrder, withoutScope);
}, 180_000);
afterAll(() => {
  for (const t of apps) t.close();
});

describe("signal detection scoped to an import file", () => {
  it("fires both kinds on the small world, so the comparison means something", () => {
    expect(afresh.signals.filter((s) => s.type === "whale").length).toBeGreaterThan(10);
    expect(afresh.signals.filter((s) => s.type === "insider").length).toBeGreaterThan(5);
  });

  it("fires exactly the signals, scores, explanations and deliveries of reading afresh", () => {
    expect(scoped.signals).toEqual(afresh.signals);
    expect(scoped.deliveries).toBe(afresh.deliveries);
    expect(scoped.deliveries).toBe(afresh.signals.length);
  });

  it("fires the same signals when the file's lines are out of time order", () => {
    expect(shuffledAfresh.signals.filter((s) => s.type === "insider").length).toBeGreaterThan(5);
    expect(shuffledScoped.signals).toEqual(shuffledAfresh.signals);
    expect(shuffledScoped.deliveries).toBe(shuffledAfresh.deliveries);
  });

  it("keeps up with funding, labels and sizes that change later in the file", () => {
    const insiders = changingAfresh.signals.filter((s) => s.type === "insider");
    // The ring is funded between its two trades; the exchange's wallets are a cluster only
    // until the label arrives.
    expect(insiders.map((s) => s.wallet)).toEqual(expect.arrayContaining([address(101)]));
    // The ring's long shot in market 3, whose volume the scope read in front of its cache.
    expect(insiders.some((s) => s.wallet === address(101) && s.market_id === 3)).toBe(true);
    expect(changingAfresh.signals.filter((s) => s.type === "whale").length).toBeGreaterThan(40);
    expect(changingScoped.signals).toEqual(changingAfresh.signals);
    expect(changingScoped.deliveries).toBe(changingAfresh.deliveries);
  });
});
