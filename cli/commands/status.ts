import { statSync } from "node:fs";
import type { Command } from "commander";
import { formatDuration } from "../../src/duration";
import { checkHistory, historyDir, historyTotals } from "../../src/history/store";
import { checkSecrets, describeSource } from "../../src/installation/key";
import { retentionStatus } from "../../src/refresh/retention";
import { type ReplicationReport, replicationStatus } from "../../src/replication/supervisor";
import { type CommonOptions, print, withApp, withDbOption } from "../context";
import { CliError } from "../errors";

/**
 * `smartmoney status`: what an operator checks after a restore or a key change. Exit 1 when a
 * stored webhook secret does not decrypt under the key in use.
 */
export function registerStatus(program: Command): void {
  withDbOption(program.command("status"))
    .description(
      "the database, the installation key (id, and whether every webhook secret decrypts), replication and its lag",
    )
    .option("--json", "print JSON")
    .action((options: CommonOptions) =>
      withApp(options, ({ db, key, config }) => {
        const version = db.writer.pragma("user_version", { simple: true }) as number;
        const bytes = fileBytes(db.path);
        const walBytes = fileBytes(`${db.path}-wal`);
        const recent = db.reader
          .prepare("SELECT count(*) AS total, max(ts) AS newest FROM fills")
          .get() as { total: number; newest: number | null };
        const history = historyTotals(db.reader);
        const historyCheck = checkHistory(db.reader, db.path);
        const newestSealed = db.reader
          .prepare("SELECT max(max_ts) FROM history_partitions")
          .pluck()
          .get() as number | null;
        const fills = {
          total: recent.total + history.fills,
          newest: Math.max(recent.newest ?? -1, newestSealed ?? -1),
        };
        const secrets = checkSecrets(db.writer, key.key);
        const replication = replicationStatus(db.path);
        const retention = {
          setting: config.fillRetentionMs === null ? null : formatDuration(config.fillRetentionMs),
          ...retentionStatus(db),
        };
        const report = {
          database: { path: db.path, schema_version: version, bytes, wal_bytes: walBytes },
          fills: {
            total: fills.total,
            recent: recent.total,
            history: history.fills,
            newest_at: fills.newest < 0 ? null : new Date(fills.newest).toISOString(),
          },
          history: {
            path: historyDir(db.path),
            files: history.partitions,
            bytes: history.bytes,
            missing: historyCheck.missing,
            damaged: historyCheck.damaged,
          },
          installation_key: {
            id: key.id,
            source: describeSource(key.source),
            secrets_stored: secrets.stored,
            secrets_decrypting: secrets.decrypting,
            secrets_failing: secrets.failing,
          },
          replication,
          fill_retention: retention,
        };
        print(options, report, () =>
          [
            `database          ${db.path} (schema version ${version}, ${(bytes / 1e6).toFixed(1)} MB, WAL ${(walBytes / 1e6).toFixed(1)} MB)`,
            `fills             ${fills.total.toLocaleString("en-US")} (${recent.total.toLocaleString("en-US")} in the database, ${history.fills.toLocaleString("en-US")} in the history)${fills.newest < 0 ? "" : `, the newest at ${new Date(fills.newest).toISOString()}`}`,
            `fill history      ${history.partitions} files with their copies, ${(history.bytes / 1e6).toFixed(1)} MB in ${historyDir(db.path)}${describeHistoryCheck(historyCheck)}`,
            `installation key  id ${key.id} from ${describeSource(key.source)}`,
            `webhook secrets   ${secrets.decrypting} of ${secrets.stored} decrypt${secrets.failing.length > 0 ? `; failing: ${secrets.failing.join(", ")}` : ""}`,
            `replication       ${describeReplication(replication)}`,
            `fill retention    ${describeRetention(retention)}`,
          ].join("\n"),
        );
        const unreadable = [...historyCheck.missing, ...historyCheck.damaged];
        if (unreadable.length > 0) {
          throw new CliError(
            `${unreadable.length} file(s) of the fill history are missing or damaged (${unreadable.join(", ")}): restore them from a backup's PATH-history/ folder`,
          );
        }
        if (secrets.failing.length > 0) {
          throw new CliError(
            `${secrets.failing.length} webhook secret(s) do not decrypt under installation key id ${key.id}`,
          );
        }
      }),
    );
}

/** A file's size, 0 when it does not exist (no WAL yet) or the database is in memory. */
function fileBytes(path: string): number {
  if (path.startsWith(":memory:")) return 0;
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function describeHistoryCheck(check: { missing: string[]; damaged: string[] }): string {
  const parts = [
    ...(check.missing.length > 0 ? [`MISSING: ${check.missing.join(", ")}`] : []),
    ...(check.damaged.length > 0 ? [`DAMAGED (size differs): ${check.damaged.join(", ")}`] : []),
  ];
  return parts.length > 0 ? `; ${parts.join("; ")}` : "";
}

function describeRetention(r: {
  setting: string | null;
  compacted_markets: number;
  last_run: ReturnType<typeof retentionStatus>["last_run"];
}): string {
  const setting = r.setting === null ? "off (SMARTMONEY_FILL_RETENTION)" : r.setting;
  const last = r.last_run;
  // Why the last run left markets waiting, in capitals: an operator must free space or fix it.
  const failed = last?.history_error ?? last?.replica_error;
  const failure = failed ? `; LAST COMPACTION ${last?.at} FAILED: ${failed}` : "";
  if (r.compacted_markets === 0) return `${setting}, no market compacted${failure}`;
  const run = last
    ? `; last compaction ${last.at}: ${last.markets} markets, ${last.fills_deleted} fills moved to the history`
    : "";
  return `${setting}, ${r.compacted_markets} markets compacted${run}${failure}`;
}

function describeReplication(r: ReplicationReport): string {
  if (!r) return "off (serve --replicate URL or SMARTMONEY_REPLICA_URL)";
  if (r.stale || r.state === "stopped") {
    return `${r.replica}: not running (last report ${r.updated_at}, ${r.state})`;
  }
  const lag = r.lag_seconds === null ? "lag unknown yet" : `lag ${r.lag_seconds.toFixed(1)} s`;
  const behind = r.behind_bytes === null ? "" : `, ${r.behind_bytes} bytes behind`;
  const restarts = r.restarts > 0 ? `, ${r.restarts} restarts, last error: ${r.last_error}` : "";
  return `${r.replica}: ${r.state}, ${lag}${behind}${restarts}`;
}
