import { createHash } from "node:crypto";
import { V2_EXCHANGE } from "../../src/ingest/polymarket/contracts";
import { v2Fill } from "../fixtures-polymarket/chain";
import type { RpcLogRecord } from "../fixtures-polymarket/servers";

/**
 * The simulated Polymarket: events with tags that embed their markets, and fills generated on
 * demand. One fill is served identically by the data API (`/trades`), the Real-Time Data
 * Socket and the chain (a V2 OrderFilled summary whose maker is the trader), as on the real
 * service, so a fill read from any two sources is the same fill.
 */

export interface SimMarket {
  id: number;
  conditionId: string;
  slug: string;
  question: string;
  outcomes: [string, string];
  tokens: [string, string];
  endDate: number;
  closed: boolean;
  /** Set when closed: "1"/"0" for a winner, "0.5"/"0.5" for a split, "0"/"0" cancelled. */
  outcomePrices: [string, string];
  eventId: number;
  /** When Gamma first listed it (ms). */
  createdAt: number;
}

export interface SimEvent {
  id: number;
  slug: string;
  title: string;
  tags: { label: string; slug: string }[];
  endDate: number;
  markets: SimMarket[];
  createdAt: number;
}

export interface SimFill {
  seq: number;
  /** Epoch ms (whole seconds: the data API serves Unix seconds). */
  ts: number;
  wallet: string;
  market: SimMarket;
  outcomeIndex: 0 | 1;
  side: "BUY" | "SELL";
  price: number;
  size: number;
  tx: string;
}

/** Tag sets events get in turn; the last one maps to none of our six categories. */
const TAG_SETS: { label: string; slug: string }[][] = [
  [{ label: "Politics", slug: "politics" }],
  [
    { label: "Crypto Prices", slug: "crypto-prices" },
    { label: "Bitcoin", slug: "bitcoin" },
  ],
  [
    { label: "Sports", slug: "sports" },
    { label: "NBA", slug: "nba" },
  ],
  [{ label: "Pop Culture", slug: "pop-culture" }],
  [{ label: "Economy", slug: "economy" }],
  [{ label: "Breaking News", slug: "breaking-news" }],
  [
    { label: "Geopolitics", slug: "geopolitics" },
    { label: "Middle East", slug: "middle-east" },
  ],
  [{ label: "Weather", slug: "weather" }],
];

const OUTCOME_NAMES: [string, string][] = [
  ["Yes", "No"],
  ["Up", "Down"],
  ["Lakers", "Celtics"],
];

/** A seeded generator (mulberry32): the same seed builds the same world and fills. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const hex64 = (label: string) =>
  `0x${createHash("sha256").update(label).digest("hex")}` as const;
const hex40 = (label: string) => hex64(label).slice(0, 42);
const tokenOf = (label: string) =>
  BigInt(`0x${createHash("sha256").update(label).digest("hex")}`).toString();

export interface WorldOptions {
  events: number;
  marketsPerEvent: number;
  /** Distinct trading wallets. */
  wallets: number;
  /** Markets end this long after `now` (spread over it). */
  now: number;
  seed?: number;
}

export class SimWorld {
  readonly events: SimEvent[] = [];
  readonly markets: SimMarket[] = [];
  /** Oldest first; the data API serves them newest first. */
  readonly fills: SimFill[] = [];
  readonly wallets: string[] = [];
  /** Fill seqs served with a malformed price (a record that does not validate). */
  readonly corrupt = new Set<number>();
  private readonly random: () => number;
  private readonly byCondition = new Map<string, SimMarket>();
  private readonly byToken = new Map<string, SimMarket>();

  private readonly marketsPerEvent: number;

  constructor(options: WorldOptions) {
    this.random = seeded(options.seed ?? 7);
    this.marketsPerEvent = options.marketsPerEvent;
    // The initial events were created over the day before `now`, oldest (lowest id) first.
    for (let e = 1; e <= options.events; e++) {
      const createdAt =
        options.now - 86_400_000 + Math.floor((e * 86_400_000) / (options.events + 1));
      this.addEvent(createdAt, options.now + (e % 97) * 3_600_000 + 86_400_000);
    }
    for (let w = 0; w < options.wallets; w++) this.wallets.push(hex40(`wallet:${w}`));
  }

  /**
   * A new event with its markets, created at `createdAt` (ms): as on Gamma, event and market
   * ids only grow, so the newest event has the highest id. Ends a day after it is created
   * unless `endDate` says otherwise.
   */
  addEvent(createdAt: number, endDate = createdAt + 86_400_000): SimEvent {
    const e = this.events.length + 1;
    const event: SimEvent = {
      id: e,
      slug: `sim-event-${e}`,
      title: `Simulated event ${e}`,
      tags: TAG_SETS[(e - 1) % TAG_SETS.length]!,
      endDate,
      markets: [],
      createdAt,
    };
    for (let k = 0; k < this.marketsPerEvent; k++) {
      const id = this.markets.length + 1;
      const market: SimMarket = {
        id,
        conditionId: hex64(`condition:${id}`),
        slug: `sim-market-${id}`,
        question: `Simulated market ${id}?`,
        outcomes: OUTCOME_NAMES[id % OUTCOME_NAMES.length]!,
        tokens: [tokenOf(`token:${id}:0`), tokenOf(`token:${id}:1`)],
        endDate,
        closed: false,
        outcomePrices: ["0.5", "0.5"],
        eventId: e,
        createdAt,
      };
      event.markets.push(market);
      this.markets.push(market);
      this.byCondition.set(market.conditionId, market);
      for (const t of market.tokens) this.byToken.set(t, market);
    }
    this.events.push(event);
    return event;
  }

  marketByCondition = (id: string) => this.byCondition.get(id);
  marketByToken = (id: string) => this.byToken.get(id);

  /** Closes a market: with a winner, split 50/50, or cancelled. */
  close(market: SimMarket, how: "YES" | "NO" | "split" | "cancelled"): void {
    market.closed = true;
    market.outcomePrices =
      how === "YES"
        ? ["1", "0"]
        : how === "NO"
          ? ["0", "1"]
          : how === "split"
            ? ["0.5", "0.5"]
            : ["0", "0"];
  }

  /** Appends `n` fills at time `ts` (ms, rounded down to the second), of `market` if given. */
  emit(n: number, ts: number, only?: SimMarket): SimFill[] {
    const made: SimFill[] = [];
    const at = Math.floor(ts / 1000) * 1000;
    for (let i = 0; i < n; i++) {
      const seq = this.fills.length;
      const market = only ?? this.markets[Math.floor(this.random() * this.markets.length)]!;
      const fill: SimFill = {
        seq,
        ts: at,
        wallet: this.wallets[Math.floor(this.random() * this.wallets.length)]!,
        market,
        outcomeIndex: this.random() < 0.5 ? 0 : 1,
        side: this.random() < 0.7 ? "BUY" : "SELL",
        // Whole cents and whole shares: price × size is exact in 6 decimals, as on chain.
        price: (1 + Math.floor(this.random() * 98)) / 100,
        size: 1 + Math.floor(this.random() * 500),
        tx: hex64(`tx:${seq}`),
      };
      this.fills.push(fill);
      made.push(fill);
    }
    return made;
  }

  /** A fill as the data API's /trades and the socket's payload carry it. */
  tradeRecord(f: SimFill): Record<string, unknown> {
    return {
      proxyWallet: f.wallet,
      side: f.side,
      asset: f.market.tokens[f.outcomeIndex],
      conditionId: f.market.conditionId,
      size: f.size,
      price: this.corrupt.has(f.seq) ? "not a price" : f.price,
      timestamp: f.ts / 1000,
      title: f.market.question,
      slug: f.market.slug,
      eventSlug: `sim-event-${f.market.eventId}`,
      outcome: f.market.outcomes[f.outcomeIndex],
      outcomeIndex: f.outcomeIndex,
      name: "",
      pseudonym: "",
      transactionHash: f.tx,
    };
  }

  /** A Gamma market object (JSON-encoded lists, the event embedded with its tags). */
  gammaMarket(m: SimMarket, withEvent = true): Record<string, unknown> {
    const event = this.events[m.eventId - 1]!;
    return {
      id: String(m.id),
      conditionId: m.conditionId,
      slug: m.slug,
      question: m.question,
      outcomes: JSON.stringify(m.outcomes),
      outcomePrices: JSON.stringify(m.outcomePrices),
      clobTokenIds: JSON.stringify(m.tokens),
      closed: m.closed,
      endDate: new Date(m.endDate).toISOString(),
      createdAt: new Date(m.createdAt).toISOString(),
      ...(withEvent
        ? {
            events: [
              { id: String(event.id), slug: event.slug, title: event.title, tags: event.tags },
            ],
          }
        : {}),
    };
  }

  gammaEvent(e: SimEvent): Record<string, unknown> {
    return {
      id: String(e.id),
      slug: e.slug,
      title: e.title,
      endDate: new Date(e.endDate).toISOString(),
      createdAt: new Date(e.createdAt).toISOString(),
      closed: e.markets.every((m) => m.closed),
      tags: e.tags,
      markets: e.markets.map((m) => this.gammaMarket(m, false)),
    };
  }

  /** The fill's on-chain summary log (V2, maker = the trader, taker = the exchange). */
  chainLog(f: SimFill, block: number, logIndex: number): RpcLogRecord {
    const usd = BigInt(Math.round(f.price * 100)) * BigInt(f.size) * 10_000n;
    const shares = BigInt(f.size) * 1_000_000n;
    return v2Fill(
      V2_EXCHANGE,
      {
        maker: f.wallet,
        taker: V2_EXCHANGE,
        side: f.side === "BUY" ? 0 : 1,
        tokenId: BigInt(f.market.tokens[f.outcomeIndex]),
        makerAmount: f.side === "BUY" ? usd : shares,
        takerAmount: f.side === "BUY" ? shares : usd,
      },
      { block, tx: f.tx, logIndex },
    );
  }
}
