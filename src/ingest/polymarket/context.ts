import type { Clock } from "../../clock";
import type { Db } from "../../db/open";
import type { Log } from "../../log";
import type { Ingest, IngestHooks } from "../ingest";
import type { PolymarketApi } from "./api";
import type { HttpClient } from "./http";
import type { Ledger, StageName } from "./ledger";
import type { Sleep } from "./limiter";
import type { RpcClient } from "./rpc";

/** What the ingester needs from outside; the CLI and the scheduler build it from the App. */
export interface PolymarketDeps {
  db: Db;
  clock: Clock;
  log: Log;
  fetch: typeof fetch;
  /** The ingest path's hooks (signal detection, webhook outbox): new trades reach them. */
  hooks?: IngestHooks;
  /** Defaults to a real timer; tests pass one that moves a fake clock. */
  sleep?: Sleep;
  /** Jitter source in [0, 1); defaults to Math.random. */
  random?: () => number;
}

export interface PolymarketOptions {
  dataUrl: string;
  gammaUrl: string;
  /** A Polygon JSON-RPC endpoint; when set, fills come from the chain instead of the data API. */
  rpcUrl: string | null;
  /** The data API trades feed path: "/trades" (v1) or "/v2/trades". */
  tradesPath?: string;
  /** Where a source without a cursor starts (epoch ms); default 24 hours before now. */
  since?: number | null;
  tradesPageSize?: number;
  marketsPageSize?: number;
  /** Condition or token ids per Gamma lookup. */
  lookupBatch?: number;
  /** Unresolved markets re-checked on Gamma per round (round robin over all of them). */
  resolutionBatch?: number;
  /** Leaderboard rows read per refresh (pages of 50). */
  leaderboardDepth?: number;
  leaderboardEveryMs?: number;
  /** Fills and transfers are stored only this many blocks below the head. */
  confirmations?: number;
  /** Blocks below the cursor read again each round (idempotently), in case a node lagged. */
  rereadBlocks?: number;
  blockChunk?: number;
  transferChunk?: number;
  /** Transfers trail the fills by this many blocks, so a wallet is known before its funding is read. */
  transferLagBlocks?: number;
  /** Wallet addresses per Transfer log query (topic filter). */
  transferAddressBatch?: number;
  /** How far before a new wallet's first fill its inbound funding is read (chain only). */
  fundingHorizonMs?: number;
  /** Page through all Gamma markets (from `since`); lookups alone fill in traded markets. */
  listMarkets?: boolean;
  /** Gamma keyset pages (of 100 events with their markets) read per round at most. */
  marketsPagesPerRound?: number;
  /** A completed market listing starts over (open markets only) after this long. */
  marketsEveryMs?: number;
  /** A failed stage is skipped for this long, doubling per consecutive failure (capped at 16×). */
  stageBackoffMs?: number;
  /**
   * Poll the data API's trades feed (the tail) every round: the fallback when the socket is
   * down and the quick filler of its gaps. On by default, with or without an RPC URL (the chain,
   * 64 blocks behind, is the source of truth for what the tail cannot reach).
   */
  tail?: boolean;
  signal?: AbortSignal;
  /** After each committed page; throwing stops the run (the page stays committed). */
  onPage?(progress: PageProgress): void;
}

export type ResolvedOptions = Required<Omit<PolymarketOptions, "signal" | "onPage" | "since">> & {
  since: number;
  signal?: AbortSignal;
  onPage?(progress: PageProgress): void;
};

export const HOUR_MS = 3_600_000;

export function resolveOptions(options: PolymarketOptions, now: number): ResolvedOptions {
  const confirmations = options.confirmations ?? 64;
  return {
    dataUrl: options.dataUrl,
    gammaUrl: options.gammaUrl,
    rpcUrl: options.rpcUrl,
    tradesPath: options.tradesPath ?? "/trades",
    since: options.since ?? now - 24 * HOUR_MS,
    tradesPageSize: options.tradesPageSize ?? 500,
    marketsPageSize: options.marketsPageSize ?? 500,
    lookupBatch: options.lookupBatch ?? 20,
    resolutionBatch: options.resolutionBatch ?? 200,
    leaderboardDepth: options.leaderboardDepth ?? 1000,
    leaderboardEveryMs: options.leaderboardEveryMs ?? HOUR_MS,
    confirmations,
    rereadBlocks: options.rereadBlocks ?? confirmations,
    blockChunk: options.blockChunk ?? 1000,
    transferChunk: options.transferChunk ?? 5000,
    transferLagBlocks: options.transferLagBlocks ?? 1800,
    transferAddressBatch: options.transferAddressBatch ?? 100,
    fundingHorizonMs: options.fundingHorizonMs ?? 30 * 24 * HOUR_MS,
    listMarkets: options.listMarkets ?? true,
    marketsPagesPerRound: options.marketsPagesPerRound ?? 20,
    marketsEveryMs: options.marketsEveryMs ?? 10 * 60_000,
    stageBackoffMs: options.stageBackoffMs ?? 30_000,
    tail: options.tail ?? true,
    signal: options.signal,
    onPage: options.onPage,
  };
}

export type Stage = StageName | "trades" | "backfill";

export interface PageProgress {
  stage: Stage;
  /** Pages committed by this stage in this round. */
  page: number;
  /** Records on the page and rows it stored as new. */
  records: number;
  stored: number;
  summary: Readonly<RoundSummary>;
}

/** One round's counts, flat so `jobs run ingest` can print it line by line. */
export interface RoundSummary {
  /** Where fills came from: the data API's trades feed or the chain's OrderFilled logs. */
  source: "data-api" | "chain";
  requests: number;
  retries: number;
  markets_pages: number;
  markets_new: number;
  markets_updated: number;
  resolutions_checked: number;
  markets_resolved: number;
  trades_pages: number;
  trades_new: number;
  /** Fills read again that were already stored (re-read windows, overlapping pages). */
  trades_present: number;
  /** Fills of markets compacted by SMARTMONEY_FILL_RETENTION: not stored (docs/operations.md). */
  trades_refused: number;
  /** On-chain fills of resting orders: their match is stored once, from the taker's summary. */
  maker_fills_skipped: number;
  /** Fills whose outcome token no Gamma market lists: not stored. */
  unknown_tokens: number;
  transfers_new: number;
  wallets_new: number;
  wallets_updated: number;
  /** Every fill up to this time is stored (data API source). */
  covered_to: string | null;
  /** The chain source's next block to read, and the head it saw. */
  next_block: number | null;
  head_block: number | null;
  /** How far the stored fills trail now: the freshness figure to alert on. */
  lag_seconds: number | null;
  /** Set when the feed could not reach back as far as asked. */
  gap: string | null;
  /** --since was given but the source already had a cursor, so it was not used. */
  since_ignored: boolean;
  /** The round was stopped (signal or time budget) after its last committed page. */
  stopped: boolean;
  /** Records set aside (stored with their reason in ingest_quarantine) and skipped. */
  quarantined: number;
  /** Markets closed without a winner (50/50 or cancelled), taken out of the pending set. */
  markets_voided: number;
  /** Stages that failed this round, with their reasons; other stages ran regardless. */
  failed_stages: string | null;
  /** Stages skipped this round because they are backing off after failures. */
  backing_off: string | null;
  /** Endpoints that announced their removal (Deprecation / Sunset headers), with the headers. */
  deprecated: string | null;
}

export function emptySummary(source: RoundSummary["source"]): RoundSummary {
  return {
    source,
    requests: 0,
    retries: 0,
    markets_pages: 0,
    markets_new: 0,
    markets_updated: 0,
    resolutions_checked: 0,
    markets_resolved: 0,
    trades_pages: 0,
    trades_new: 0,
    trades_present: 0,
    trades_refused: 0,
    maker_fills_skipped: 0,
    unknown_tokens: 0,
    transfers_new: 0,
    wallets_new: 0,
    wallets_updated: 0,
    covered_to: null,
    next_block: null,
    head_block: null,
    lag_seconds: null,
    gap: null,
    since_ignored: false,
    stopped: false,
    quarantined: 0,
    markets_voided: 0,
    failed_stages: null,
    backing_off: null,
    deprecated: null,
  };
}

/** Everything a stage works with during one round. */
export interface RoundContext {
  db: Db;
  clock: Clock;
  log: Log;
  ingest: Ingest;
  http: HttpClient;
  api: PolymarketApi;
  rpc: RpcClient | null;
  options: ResolvedOptions;
  /** Whether --since was passed explicitly (so ignoring it is worth reporting). */
  sinceGiven: boolean;
  summary: RoundSummary;
  ledger: Ledger;
  /** Inside the page's transaction: sets a bad record aside with its reason and counts it. */
  quarantine(stage: Stage, location: string, reason: string, raw: unknown): void;
  /** Runs `work` in one write transaction: the page's rows and its cursor commit together. */
  transaction<T>(work: () => T): T;
  pageDone(stage: Stage, page: number, records: number, stored: number): void;
}

/**
 * A failure the round reports as a value (an upstream record that does not validate, an API
 * that keeps failing): thrown inside the stages to unwind, caught where the round ends.
 */
export class IngestFailure extends Error {
  override name = "IngestFailure";
}

export function fail(reason: string): never {
  throw new IngestFailure(reason);
}
