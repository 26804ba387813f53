/**
 * Generated worlds where the truth is known, for the backtest's tests: each market has a price p
 * and a true probability q = p + noise (so the price is calibrated: E[outcome | p] = p), and its
 * outcome is drawn from q. Retail wallets trade small amounts at the price on random sides.
 * Whales either trade at random (no skill) or, planted, hold YES and NO at cost in the ratio
 * q : 1 − q, so the whale-implied probability is q and the Brier gain it should show over the
 * price is the mean of (p − q)² over the markets scored. Insider rings, when asked for, are fresh
 * wallets funded a day before they buy the winner of a long shot at 0.08, a day before the news.
 *
 * The world is written as interchange JSONL (docs/import.md) and imported through the real import
 * path into the test app's database.
 */

import { join } from "node:path";
import { Random } from "../../src/fixtures/random";
import { importJsonl } from "../../src/ingest/import";
import { fileSource } from "../../src/ingest/sources";
import type { TestApp } from "../helpers/app";
import { writeJsonl } from "../ingest/builders";

const DAY = 86_400_000;
const HOUR = 3_600_000;
export const WORLD_START = Date.parse("2026-01-01T00:00:00Z");

export interface WorldSpec {
  seed: number;
  markets: number;
  /** Standard deviation of q − p. */
  noise: number;
  skill: "none" | "planted";
  /** Markets (the first of them in time) with an insider ring and a news time. */
  insiderMarkets?: number;
}

export interface TruthMarket {
  slug: string;
  conditionId: string;
  price: number;
  truth: number;
  outcome: "YES" | "NO";
  createdAt: number;
  resolvedAt: number;
  newsAt: number | null;
  insiders: string[];
}

export interface GeneratedWorld {
  lines: Record<string, unknown>[];
  markets: TruthMarket[];
  end: number;
}

const hex = (prefix: number, n: number, digits: number) =>
  `0x${prefix.toString(16)}${n.toString(16).padStart(digits - prefix.toString(16).length, "0")}`;
const addressOf = (kind: number, n: number) => hex(kind, n, 40);
const CATEGORIES = ["politics", "crypto", "sports"];

export function generateWorld(spec: WorldSpec): GeneratedWorld {
  const rng = new Random(spec.seed);
  const lines: Record<string, unknown>[] = [];
  const markets: TruthMarket[] = [];
  const trades: Record<string, unknown>[] = [];
  let tx = 0;
  const trade = (
    wallet: string,
    m: TruthMarket,
    outcome: "YES" | "NO",
    usd: number,
    price: number,
    ts: number,
  ) => {
    tx += 1;
    trades.push({
      type: "trade",
      tx_hash: hex(0x7, tx, 64),
      log_index: 0,
      wallet,
      condition_id: m.conditionId,
      outcome,
      side: "BUY",
      price: Math.round(price * 1e6) / 1e6,
      size: Math.round((usd / price) * 1e6) / 1e6,
      usd_value: Math.round(usd * 1e6) / 1e6,
      timestamp: Math.round(ts),
    });
  };
  const retail = Array.from({ length: 200 }, (_, i) => addressOf(0xa, i));
  const whales = Array.from({ length: 8 }, (_, i) => addressOf(0xb, i));
  const span = 240 * DAY;
  for (let i = 0; i < spec.markets; i += 1) {
    const createdAt = WORLD_START + (i * span) / spec.markets + rng.int(DAY);
    const resolvedAt = createdAt + (15 + rng.int(15)) * DAY;
    const insiderMarket = i < (spec.insiderMarkets ?? 0);
    const price = insiderMarket ? 0.08 : rng.range(0.1, 0.9);
    const truth = insiderMarket
      ? 0.9
      : Math.min(0.99, Math.max(0.01, price + spec.noise * rng.normal()));
    const m: TruthMarket = {
      slug: `world-${i}`,
      conditionId: hex(0xc, i, 64),
      price,
      truth,
      outcome: rng.chance(truth) ? "YES" : "NO",
      createdAt,
      resolvedAt,
      newsAt: insiderMarket ? resolvedAt - 2 * DAY : null,
      insiders: [],
    };
    markets.push(m);
    lines.push({
      type: "market",
      slug: m.slug,
      title: `Will world event ${i} happen?`,
      category: CATEGORIES[i % CATEGORIES.length],
      condition_id: m.conditionId,
      end_date: resolvedAt,
      created_at: createdAt,
      resolved_outcome: m.outcome,
      resolved_at: resolvedAt,
    });
    const lastTrade = resolvedAt - HOUR;
    for (let k = 0; k < 20; k += 1) {
      const ts = createdAt + rng.next() * (lastTrade - createdAt);
      const yesPrice = Math.min(0.99, Math.max(0.01, price + rng.range(-0.01, 0.01)));
      const outcome = rng.chance(0.5) ? "YES" : "NO";
      trade(
        retail[rng.int(retail.length)] as string,
        m,
        outcome,
        rng.range(10, 200),
        outcome === "YES" ? yesPrice : 1 - yesPrice,
        ts,
      );
    }
    // Whales trade in the market's first weeks, inside the 30-day window of both horizons.
    const whaleEnd = resolvedAt - 8 * DAY;
    for (const whale of whales) {
      if (!rng.chance(0.5)) continue;
      const usd = rng.range(3000, 6000);
      const ts = createdAt + rng.next() * (whaleEnd - createdAt);
      if (spec.skill === "planted") {
        trade(whale, m, "YES", usd * truth, price, ts);
        trade(whale, m, "NO", usd * (1 - truth), 1 - price, ts + 1000);
      } else {
        const outcome = rng.chance(0.5) ? "YES" : "NO";
        trade(whale, m, outcome, usd, outcome === "YES" ? price : 1 - price, ts);
      }
    }
    if (insiderMarket && m.newsAt !== null) {
      for (let k = 0; k < 3; k += 1) {
        const insider = addressOf(0xe, i * 10 + k);
        m.insiders.push(insider);
        const buyAt = m.newsAt - DAY - k * HOUR;
        lines.push({
          type: "transfer",
          tx_hash: hex(0x8, i * 10 + k, 64),
          log_index: 1,
          from: addressOf(0xf, 1),
          to: insider,
          token: "USDC",
          amount: 20_000,
          timestamp: buyAt - DAY,
        });
        trade(insider, m, m.outcome, 12_000, 0.08, buyAt);
      }
    }
  }
  trades.sort((a, b) => (a.timestamp as number) - (b.timestamp as number));
  lines.push(...trades);
  const end = Math.max(...markets.map((m) => m.resolvedAt)) + DAY;
  return { lines, markets, end };
}

/** Writes the world as JSONL and imports it through the import path. */
export async function importWorld(
  t: TestApp,
  lines: Record<string, unknown>[],
  name = "world.jsonl",
) {
  const path = writeJsonl(t.dir, name, lines);
  // With the app's hooks, as `smartmoney import` runs it: signal detection sees every new trade.
  const result = await importJsonl(
    { db: t.db, clock: t.clock, hooks: t.app.ingestHooks },
    fileSource(path),
  );
  if (!result.ok) throw new Error(`${result.reason}: ${JSON.stringify(result.errors.slice(0, 3))}`);
  return join(t.dir, name);
}
