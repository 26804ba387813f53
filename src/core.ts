import { createHmac } from "node:crypto";
import { type Accounts, createAccounts } from "./auth/accounts";
import { createRateLimiter, type RateLimiter } from "./auth/rate-limit";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { Db } from "./db/open";
import { sqliteTempDir } from "./db/storage";
import { fundingRefreshExtension } from "./funding/refresh";
import { createFunding, type Funding } from "./funding/service";
import { createHistoryReader } from "./history/reader";
import { historyDir, walletIds } from "./history/store";
import type { IngestHooks } from "./ingest/ingest";
import type { Log } from "./log";
import { type Cursors, createCursors } from "./paging/cursor";
import { createFreshness, type Freshness } from "./read/freshness";
import { createLeaderboardQueries, type LeaderboardQueries } from "./read/leaderboards";
import { createMarketQueries, type MarketQueries } from "./read/markets";
import { createTradeQueries, type TradeQueries } from "./read/trades";
import { createWalletQueries, type WalletQueries } from "./read/wallets";
import type { RefreshExtension } from "./refresh/refresh";
import { walletSearchRefresh } from "./refresh/wallet-search";
import { coordinatedPairsInWorker } from "./refresh/workers/one-shot";
import { createSignalDetector } from "./signals/detector";
import { createWebhooks, type Webhooks } from "./webhooks/service";

/** Everything the app needs from outside. Only the entry points (cli/) create these. */
export interface AppDeps {
  db: Db;
  config: Config;
  clock: Clock;
  log: Log;
  fetch: typeof fetch;
  /** The installation's 32-byte secret: encrypts webhook secrets at rest, keys cursor tags. */
  secretKey: Buffer;
}

/**
 * The core: every service and read model, free of HTTP and MCP. src/app.ts adds the REST and MCP
 * adapters on top; the CLI commands and the scheduled jobs use the same object.
 */
export interface Core {
  deps: AppDeps;
  accounts: Accounts;
  limiter: RateLimiter;
  cursors: Cursors;
  /** Read-model queries shared by REST and MCP. */
  read: {
    trades: TradeQueries;
    markets: MarketQueries;
    wallets: WalletQueries;
    leaderboards: LeaderboardQueries;
  };
  /** Endpoints, follows, the outbox and its drainer. */
  webhooks: Webhooks;
  /** Funding graph (connections, sybil clusters, cluster graph) and investigations. */
  funding: Funding;
  /** What every ingest (import, seed, live) calls on new trades: whale and insider detection. */
  ingestHooks: IngestHooks;
  /** Read models refreshed after the wallet and market models, in their own transactions. */
  refreshExtensions: RefreshExtension[];
  /** Bumped after each refresh; caches of read-model answers key on it. */
  generation: number;
  /** The as-of of the latest refresh, whichever process ran it. */
  freshness: Freshness;
  /** After a refresh in this process: new as-of, new generation. */
  readModelsChanged(): void;
  /** Notices a refresh another process made (the server's background jobs, the CLI). */
  syncReadModels(): void;
  /** Flushes pending state; the caller closes the database. */
  close(): void;
}

export function createCore(deps: AppDeps): Core {
  const accounts = createAccounts(deps.db, deps.clock);
  const limiter = createRateLimiter({ db: deps.db, clock: deps.clock, log: deps.log });
  const cursors = createCursors(createHmac("sha256", deps.secretKey).update("cursors").digest());
  const history = createHistoryReader({
    dir: historyDir(deps.db.path),
    memoryMb: Math.max(64, Math.floor(deps.config.memoryMb / 4)),
    wallets: walletIds(deps.db.reader),
    log: deps.log,
  });
  const trades = createTradeQueries(deps.db, history);
  const read = {
    trades,
    markets: createMarketQueries(deps.db),
    // The dossier's funding_cluster comes from the funding graph, created with the core below.
    wallets: createWalletQueries(deps.db, {
      trades,
      clusterOf: (address) => app.funding.clusterOf(address),
    }),
    leaderboards: createLeaderboardQueries(deps.db),
  };
  const webhooks = createWebhooks(deps);
  const app = { deps, accounts, limiter, cursors, read, webhooks, generation: 0 } as Core;
  app.funding = createFunding(deps);
  // After the wallet and market models: cluster stats read wallet_stats. Wallet types read the
  // investigations as of the previous refresh, so an investigation types its wallets one
  // refresh after it opens.
  app.refreshExtensions = [walletSearchRefresh, fundingRefreshExtension(coordinatedPairsInWorker)];
  app.ingestHooks = createSignalDetector(deps.db, {
    whaleMinUsd: deps.config.whaleSignalUsd,
    enqueue: (signal) => webhooks.outbox.enqueueSignal(signal),
  });
  app.freshness = createFreshness(deps.db);
  app.readModelsChanged = () => {
    app.freshness.poll();
    app.generation += 1;
  };
  app.syncReadModels = () => {
    if (app.freshness.poll()) app.generation += 1;
  };
  const stopWatching = watchStorage(deps.db, deps.log);
  app.close = () => {
    stopWatching();
    limiter.close();
    webhooks.close();
    history.close();
  };
  return app;
}

/**
 * The two log lines of a full disk: when writes start being refused, and when they go through
 * again. Every writer in between is quiet about it (or logs its own retry at warn).
 */
function watchStorage(db: Db, log: Log): () => void {
  return db.storage.onChange((event) => {
    if (event.kind === "full") {
      log.error(
        {
          storage: "full",
          since: new Date(event.since).toISOString(),
          writer: event.writer,
          db: db.path,
          sqlite_tmp: sqliteTempDir(),
          err: event.error,
        },
        "storage full: the disk holding the database (or SQLite's temporary files, sqlite_tmp) has no room; writes are refused and retried, reads go on",
      );
    } else {
      log.info(
        { storage: "ok", writer: event.writer, full_for_ms: event.fullForMs, db: db.path },
        "storage writable again: writes resumed",
      );
    }
  });
}
