import type { Core } from "../core";
import { historyReplica } from "../history/replica";
import { type RefreshSummary, refreshReadModels } from "../refresh/refresh";
import { type CompactionSummary, compactResolvedMarkets } from "../refresh/retention";
import type { ScheduledJob } from "./scheduler";

/**
 * `jobs run refresh [--full]` and the server's scheduled refresh. The first run on a database
 * is always a full rebuild; later runs recompute only what changed, unless that is so much (a
 * catch-up after a large import, CATCH_UP in src/refresh/refresh.ts) that a full rebuild is
 * faster.
 */
export function refreshNow(app: Core, options: { full?: boolean } = {}): RefreshSummary {
  const { db, clock } = app.deps;
  const summary = refreshReadModels(db, clock.now(), {
    full: options.full,
    extensions: app.refreshExtensions,
  });
  app.readModelsChanged();
  return summary;
}

/**
 * `jobs run compact` and the scheduled refresh's second step when SMARTMONEY_FILL_RETENTION is
 * set: compacts the markets resolved before the window (src/refresh/retention.ts). Logs a line
 * when it compacted any.
 */
export async function compactNow(
  app: Core,
  retentionMs: number,
  onProgress?: (done: number, total: number) => void,
): Promise<CompactionSummary> {
  const { db, clock, log, config } = app.deps;
  const summary = await compactResolvedMarkets(db, clock.now(), retentionMs, {
    memoryMb: Math.floor(config.memoryMb / 4),
    replica: config.replica ? historyReplica(config.replica) : undefined,
    onProgress,
  });
  if (summary.replica_error) {
    log.warn(
      { compaction: summary },
      `fill retention could not put a history file on the replica (${summary.replica_error}): its markets keep their fills until the next run`,
    );
  }
  if (summary.history_error) {
    log.error({ compaction: summary }, `fill retention could not seal: ${summary.history_error}`);
  }
  if (summary.markets > 0) {
    // Trade pages and timing buckets changed.
    app.readModelsChanged();
    log.info(
      { compaction: summary },
      `fill retention (SMARTMONEY_FILL_RETENTION=${summary.retention}) compacted ${summary.markets} markets resolved before ${summary.cutoff}: ${summary.fills_deleted} fills moved to the history, ${summary.fills_kept} kept for their signals`,
    );
  }
  return summary;
}

export function refreshJob(app: Core): ScheduledJob {
  const retention = app.deps.config.fillRetentionMs;
  return {
    name: "refresh",
    pattern: app.deps.config.refreshCron,
    run: async () => {
      const summary = refreshNow(app);
      // After the refresh: a market is compacted only once the read models count all its fills.
      if (retention === null) return summary;
      return { ...summary, compaction: await compactNow(app, retention) };
    },
    idle: (summary) => {
      const s = summary as RefreshSummary & { compaction?: CompactionSummary };
      return (
        s.kind === "incremental" &&
        s.wallets === 0 &&
        s.markets === 0 &&
        (s.compaction?.markets ?? 0) === 0
      );
    },
  };
}
