import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { Db } from "../../src/db/open";
import { historyDir } from "../../src/history/store";
import { createIngest, type NewTrade } from "../../src/ingest/ingest";
import { refreshReadModels } from "../../src/refresh/refresh";
import type { SealStep } from "../../src/refresh/retention";
import type { TestApp } from "../helpers/app";
import { addMarket } from "../helpers/markets";
import { newTrade } from "../helpers/trades";

export const DAY = 86_400_000;
export const NOW = Date.parse("2026-11-01T12:00:00.000Z");
/** Markets resolved and last traded before NOW − RETENTION are sealed by a compaction. */
export const RETENTION = 90 * DAY;

/**
 * The database's history as a binary of before its copies of `kinds` left it (before sql/0034:
 * both; before sql/0037: those in time order): the copies unlisted and removed from its folder.
 * Returns their names.
 */
export function withoutCopies(db: Db, kinds: readonly ("wallet" | "time")[]): string[] {
  const names = (
    db.writer
      .prepare(`SELECT ${kinds.map((k) => `${k}_file`).join(", ")} FROM history_partitions`)
      .raw()
      .all() as string[][]
  ).flat();
  db.writer.exec(
    `UPDATE history_partitions SET ${kinds.map((k) => `${k}_file = NULL, ${k}_bytes = NULL`).join(", ")}`,
  );
  for (const name of names) rmSync(join(historyDir(db.path), name));
  return names;
}

/**
 * A world for sealing: `old` markets (old0, old1, …: traded 200 days ago, resolved 150 days ago,
 * so due for RETENTION) then `recent` ones (new0, …: traded 20 days ago, open), market i with
 * condition id 0x…(i + 1), and `trades` fills dealt round the markets and 37 wallets, every
 * wallet in every market. Refreshed at NOW: a compaction may run at once.
 */
export function sealableWorld(
  t: TestApp,
  options: { old: number; recent: number; trades: number },
): number[] {
  const ingest = createIngest(t.db, t.clock);
  const slugs = [
    ...Array.from({ length: options.old }, (_, i) => `old${i}`),
    ...Array.from({ length: options.recent }, (_, i) => `new${i}`),
  ];
  const ids = t.db.writer.transaction(() =>
    slugs.map((slug, i) => {
      return addMarket(ingest, {
        slug,
        category: "politics",
        condition_id: `0x${(i + 1).toString(16).padStart(64, "0")}`,
      });
    }),
  )();
  const trades: NewTrade[] = [];
  for (let i = 0; i < options.trades; i++) {
    const at = i % ids.length;
    const old = at < options.old;
    trades.push(
      newTrade(
        `0x${((i % 37) + 1).toString(16).padStart(40, "0")}`,
        ids[at]!,
        i % 3 === 0 ? "NO" : "YES",
        i % 4 === 0 ? "SELL" : "BUY",
        0.1 + (i % 80) / 100,
        10 + (i % 13),
        (old ? NOW - 200 * DAY : NOW - 20 * DAY) + i * 60_000,
      ),
    );
  }
  t.db.writer.transaction(() => {
    ingest.insertTrades(trades);
    for (const id of ids.slice(0, options.old)) ingest.resolveMarket(id, "YES", NOW - 150 * DAY);
  })();
  refreshReadModels(t.db, NOW);
  return ids;
}

/**
 * Runs a compaction of the database at `path` at NOW in a child process (seal-child.ts) killed
 * the first time it reaches `step`. With `merge: "next-run"`, after a first run that seals a
 * file a market, so the killed run starts by merging them; with `merge: "same-run"`, one run
 * seals a file a market and is killed merging them. With `replicaDir`, putting files on that
 * folder.
 */
export function compactionKilledAt(
  path: string,
  step: SealStep,
  options: { merge?: "next-run" | "same-run"; replicaDir?: string } = {},
): void {
  const child = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      fileURLToPath(new URL("./seal-child.ts", import.meta.url)),
      path,
      String(NOW),
      step,
      { "next-run": "merge", "same-run": "seal-merge", none: "seal" }[options.merge ?? "none"],
      ...(options.replicaDir ? [options.replicaDir] : []),
    ],
    { encoding: "utf8", env: { ...process.env, SMARTMONEY_LOG_LEVEL: "error" } },
  );
  expect(child.stderr).toBe("");
  expect(child.signal).toBe("SIGKILL");
}
