import type { Core } from "../core";
import { type RefreshSummary, refreshReadModels } from "../refresh/refresh";
import type { ScheduledJob } from "./scheduler";

/**
 * `jobs run refresh [--full]` and the server's scheduled refresh. The first run on a database
 * is always a full rebuild; later runs recompute only what changed.
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

export function refreshJob(app: Core): ScheduledJob {
  return {
    name: "refresh",
    pattern: app.deps.config.refreshCron,
    run: () => refreshNow(app),
    idle: (summary) => {
      const s = summary as RefreshSummary;
      return s.kind === "incremental" && s.wallets === 0 && s.markets === 0;
    },
  };
}
