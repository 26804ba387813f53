import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { NewSignal } from "../../src/webhooks/outbox";
import type { TestApp } from "../helpers/app";

/** One request as a receiver saw it. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

/** What a receiver does with its nth request (0-based): answer it, or leave it hanging. */
export type Behaviour = (n: number, res: ServerResponse) => void;

export interface Receiver {
  url(path?: string): string;
  received: Received[];
  /** Most requests it held open at the same moment. */
  maxConcurrent: number;
  close(): Promise<void>;
}

export const answer =
  (status: number, headers: Record<string, string> = {}): Behaviour =>
  (_n, res) =>
    res.writeHead(status, headers).end(`status ${status}`);

/** Answers `first` statuses in turn, then `then` for ever. */
export const sequence =
  (first: number[], then: number): Behaviour =>
  (n, res) => {
    const status = first[n] ?? then;
    res.writeHead(status).end(`status ${status}`);
  };

/** Answers after `ms` (real time); longer than the test timeout means "never in time". */
export const slow =
  (ms: number, status = 200): Behaviour =>
  (_n, res) => {
    const timer = setTimeout(() => {
      if (!res.destroyed) res.writeHead(status).end("late");
    }, ms);
    res.on("close", () => clearTimeout(timer));
  };

/** A real HTTP server on 127.0.0.1 recording every request. */
export async function startReceiver(behaviour: Behaviour = answer(200)): Promise<Receiver> {
  const received: Received[] = [];
  let open = 0;
  let maxConcurrent = 0;
  const server = createServer((req, res) => {
    open += 1;
    maxConcurrent = Math.max(maxConcurrent, open);
    res.on("close", () => {
      open -= 1;
    });
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const n = received.length;
      received.push({
        path: req.url ?? "",
        headers: req.headers,
        raw: Buffer.concat(chunks).toString("utf8"),
      });
      behaviour(n, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    get maxConcurrent() {
      return maxConcurrent;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const WALLET_A = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
export const WALLET_B = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
export const WALLET_C = "0xcccccccccccccccccccccccccccccccccccccccc";

/** Two markets (politics, crypto) to hang trades and signals on. */
export function seedMarkets(t: TestApp): void {
  const insert = t.db.writer.prepare(
    "INSERT INTO markets (id, slug, title, category, condition_id) VALUES (?, ?, ?, ?, ?)",
  );
  insert.run(1, "election-2028", "Who wins in 2028?", "politics", `0x${"1".repeat(64)}`);
  insert.run(2, "btc-200k", "BTC above 200k?", "crypto", `0x${"2".repeat(64)}`);
}

let tradeSeq = 0;

/** A trade row and a signal on it, as detection would fire it. */
export function signalOn(
  t: TestApp,
  overrides: Partial<NewSignal> & { wallet?: string } = {},
): NewSignal {
  const wallet = overrides.wallet ?? WALLET_A;
  const marketId = overrides.marketId ?? 1;
  tradeSeq += 1;
  // Through the trades view, whose insert rowid SQLite does not report: the fill is the newest.
  t.db.writer
    .prepare(
      `INSERT INTO trades (tx_hash, log_index, wallet, market_id, outcome, side, price, size,
                           usd_value, ts) VALUES (?, 0, ?, ?, 'YES', 'BUY', 0.3, 50000, 15000, ?)`,
    )
    .run(`0x${tradeSeq.toString(16).padStart(64, "0")}`, wallet, marketId, t.clock.now());
  return {
    type: "whale",
    wallet,
    walletType: "whale",
    marketId,
    tradeId: t.db.writer.prepare("SELECT max(id) FROM fills").pluck().get() as number,
    score: 72,
    betValue: 15000,
    side: "BUY",
    outcome: "YES",
    price: 0.3,
    explanation: "A 15,000 USD buy of YES at 0.30 by a wallet scoring 72.",
    createdAt: t.clock.now(),
    ...overrides,
  };
}

/** Mints a key on a named account and returns the account's id with the key. */
export function accountWithKey(
  t: TestApp,
  name: string,
  tier: "free" | "terminal" | "terminal_pro" = "terminal",
): { id: number; key: string } {
  const key = t.key(tier, { account: name });
  return { id: t.app.accounts.get(name)!.id, key };
}
