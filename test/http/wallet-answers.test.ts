import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openConnection } from "../../src/db/open";
import {
  WalletDossierSchema,
  WalletProfileLiteSchema,
  WalletSignalSchema,
} from "../../src/schemas/wallets";
import {
  A,
  buildWorld,
  expectError,
  F,
  fill,
  HOUR,
  NOW,
  ok,
  tradeAfterRefresh,
  type World,
} from "./wallet-world";

// The wallet signal, profile and dossier are kept serialized between requests
// (src/http/answer-cache.ts): every change to what they read must still show at once.

const iso = (ms: number) => new Date(ms).toISOString();

let world: World;
let terminal: string;
let free: string;

beforeEach(() => {
  world = buildWorld();
  tradeAfterRefresh(world);
  terminal = world.t.key("terminal");
  free = world.t.key("free");
});
afterEach(() => world.t.close());

function alert(id: number, wallet: string, createdAt: number): void {
  const w = world.t.db.writer;
  const tradeId = (
    w.prepare("SELECT max(id) AS id FROM trades WHERE wallet = ?").get(wallet) as {
      id: number;
    }
  ).id;
  w.prepare(
    `INSERT INTO signals (id, type, wallet, wallet_type, market_id, trade_id, score, bet_value, side,
       outcome, price, explanation, created_at)
     VALUES (?, 'whale', ?, 'retail', ?, ?, 80, 50, 'BUY', 'YES', 0.5, 'Big buy.', ?)`,
  ).run(id, wallet, world.ids.m1, tradeId, createdAt);
}

describe("kept wallet answers", () => {
  it("the dossier shows a new fill and a new alert of the wallet on the next request", async () => {
    const path = `/v1/wallets/${A}`;
    const before = await ok(world.t, path, terminal, WalletDossierSchema);
    expect(before.recent_trades).toHaveLength(4);
    expect(before.alerts).toEqual([]);
    // The same answer again, from the cache.
    expect(await ok(world.t, path, terminal, WalletDossierSchema)).toEqual(before);

    world.trade([fill(A, world.ids.m2, "NO", "BUY", 0.25, 40, NOW + 2 * HOUR)]);
    const traded = await ok(world.t, path, terminal, WalletDossierSchema);
    expect(traded.recent_trades).toHaveLength(5);
    expect(traded.recent_trades[0]).toMatchObject({
      wallet: A,
      outcome: "NO",
      price: 0.25,
      size: 40,
      trade_timestamp: iso(NOW + 2 * HOUR),
    });

    alert(41, A, NOW + 2 * HOUR);
    const alerted = await ok(world.t, path, terminal, WalletDossierSchema);
    expect(alerted.alerts.map((a) => a.id)).toEqual([41]);
    expect(alerted.recent_trades).toEqual(traded.recent_trades);
  });

  it("a fill another process commits shows from the next turn of the event loop", async () => {
    const path = `/v1/wallets/${A}`;
    const before = await ok(world.t, path, terminal, WalletDossierSchema);
    // Another connection on the file, as the jobs process or the CLI would write.
    const other = openConnection(world.t.config.dbPath);
    try {
      other
        .prepare(
          `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
             usd_value, ts) VALUES (?, 0, ?, ?, 'YES', 'SELL', 0.6, 30, 18, ?)`,
        )
        .run(`0x${"e".repeat(64)}`, A, world.ids.m3, NOW + 3 * HOUR);
    } finally {
      other.close();
    }
    await new Promise((resolve) => setImmediate(resolve));
    const after = await ok(world.t, path, terminal, WalletDossierSchema);
    expect(after.recent_trades).toHaveLength(before.recent_trades.length + 1);
    expect(after.recent_trades[0]).toMatchObject({ side: "SELL", size: 30 });
  });

  it("a wallet scored from its own fills is rescored by its next fill, then by the refresh", async () => {
    const path = `/v1/signals/wallet/${F}`;
    const before = await ok(world.t, path, free, WalletSignalSchema);
    expect(before.breakdown.method).toBe("bayesian_fallback");
    expect(before.stats?.total_bets).toBe(2);
    const lite = await ok(world.t, `/v1/wallets/${F}`, free, WalletProfileLiteSchema);
    expect(lite.stats?.total_bets).toBe(2);

    world.trade([fill(F, world.ids.m3, "YES", "BUY", 0.5, 10, NOW + 2 * HOUR)]);
    const after = await ok(world.t, path, free, WalletSignalSchema);
    expect(after.stats?.total_bets).toBe(3);
    expect(after.stats?.total_volume).toBeCloseTo((before.stats?.total_volume ?? 0) + 5, 9);
    const liteAfter = await ok(world.t, `/v1/wallets/${F}`, free, WalletProfileLiteSchema);
    expect(liteAfter.stats?.total_bets).toBe(3);

    world.refresh();
    const refreshed = await ok(world.t, path, free, WalletSignalSchema);
    expect(refreshed.breakdown.method).toBe("signals");
  });

  it("a free key's profile and a terminal key's dossier of one wallet are kept apart", async () => {
    const path = `/v1/wallets/${A}`;
    const dossier = await ok(world.t, path, terminal, WalletDossierSchema);
    const lite = await ok(world.t, path, free, WalletProfileLiteSchema);
    expect(dossier.recent_trades).toHaveLength(4);
    expect(lite).not.toHaveProperty("recent_trades");
    expect(await ok(world.t, path, terminal, WalletDossierSchema)).toEqual(dossier);
  });

  it("a 404 is not kept: the wallet's first fill makes it known", async () => {
    const stranger = `0x${"5".repeat(40)}`;
    await expectError(world.t, `/v1/signals/wallet/${stranger}`, free, 404, "never traded");
    await expectError(world.t, `/v1/wallets/${stranger}`, terminal, 404, "never traded");
    world.trade([fill(stranger, world.ids.m1, "YES", "BUY", 0.5, 10, NOW + 2 * HOUR)]);
    const signal = await ok(world.t, `/v1/signals/wallet/${stranger}`, free, WalletSignalSchema);
    expect(signal.stats?.total_bets).toBe(1);
    const dossier = await ok(world.t, `/v1/wallets/${stranger}`, terminal, WalletDossierSchema);
    expect(dossier.recent_trades).toHaveLength(1);
  });
});
