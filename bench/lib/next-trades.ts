import type { Connection } from "../../src/db/open";
import type { NewTrade } from "../../src/ingest/ingest";
import { randomHex, uniform } from "./random";

const DAY_MS = 86_400_000;
/** A share of new trades comes from wallets the world has never seen. */
const NEW_WALLET_SHARE = 0.1;
const NEW_WALLETS = 200;

/**
 * New trades that look like the world's next `spanMs` after `now`: each copies the wallet (or, for a share,
 * a new wallet) and market of a random trade from the world's last day on an unresolved market,
 * at a price near that trade's.
 */
export function nextTrades(
  reader: Connection,
  now: number,
  count: number,
  spanMs: number,
): NewTrade[] {
  const recent = reader
    .prepare(
      `SELECT t.wallet, t.market_id, t.price FROM trades t JOIN markets m ON m.id = t.market_id
        WHERE t.ts > ? AND m.resolved_outcome IS NULL`,
    )
    .raw()
    .all(now - DAY_MS) as [string, number, number][];
  if (recent.length === 0) throw new Error("the world has no trades in its last day");
  const rand = uniform(now % 2 ** 31);
  const newWallets = Array.from({ length: NEW_WALLETS }, () => randomHex(rand, 40));
  return Array.from({ length: count }, (_, i) => {
    const [wallet, marketId, price] = recent[Math.floor(rand() * recent.length)]!;
    const p = Math.min(
      0.99,
      Math.max(0.01, Math.round((price + (rand() - 0.5) * 0.04) * 1000) / 1000),
    );
    const size = Math.round(10 ** (1 + rand() * 3) * 100) / 100;
    return {
      tx_hash: randomHex(rand, 64),
      log_index: 0,
      wallet: rand() < NEW_WALLET_SHARE ? newWallets[Math.floor(rand() * NEW_WALLETS)]! : wallet,
      market_id: marketId,
      outcome: rand() < 0.5 ? "YES" : "NO",
      side: rand() < 0.7 ? "BUY" : "SELL",
      price: p,
      size,
      usd_value: Math.round(p * size * 100) / 100,
      ts: now + 1 + Math.floor((i / count) * (spanMs - 1)),
    };
  });
}
