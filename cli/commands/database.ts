import { existsSync, rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { createPrivateFile, openConnection } from "../../src/db/open";
import { isStorageFull } from "../../src/db/storage";
import { copyHistory, historyDir } from "../../src/history/store";
import { describeSource, keyFilePath } from "../../src/installation/key";
import { migrate } from "../../src/migrations/migrate";
import {
  type CommonOptions,
  checkInstallationKey,
  configFrom,
  openDatabase,
  print,
  withApp,
  withDbOption,
} from "../context";
import { CliError } from "../errors";
import { withMigrationProgress } from "../progress";

interface BackupOptions extends CommonOptions {
  withoutKey?: boolean;
}

export function registerDatabase(program: Command): void {
  withDbOption(program.command("migrate"))
    .description("apply pending migrations and exit")
    .option("--json", "print JSON")
    .action((options: CommonOptions) => {
      const config = configFrom(options);
      const db = openDatabase(config.dbPath);
      try {
        const result = withMigrationProgress((onProgress) => migrate(db.writer, { onProgress }));
        checkInstallationKey(db);
        print(options, { applied: result.applied, version: result.current }, () =>
          result.applied.length === 0
            ? `schema is up to date (version ${result.current})`
            : `applied ${result.applied.join(", ")}; schema version ${result.current}`,
        );
      } finally {
        db.close();
      }
    });

  withDbOption(program.command("backup"))
    .description(
      "write a consistent copy of the live database to PATH, its fill history to PATH-history/ and its installation key to PATH.key (safe while serving)",
    )
    .argument("<path>")
    .option("--without-key", "leave the installation key out (the copy then cannot sign webhooks)")
    .option("--json", "print JSON")
    .action((path: string, options: BackupOptions) =>
      withApp(options, async ({ db, key }) => {
        const keyPath = options.withoutKey ? null : keyFilePath(path);
        for (const target of [path, keyPath, historyDir(path)]) {
          if (target && existsSync(target)) {
            throw new CliError(`${target} already exists; choose a new file`);
          }
        }
        if (!existsSync(dirname(resolve(path)))) {
          throw new CliError(
            `${dirname(resolve(path))}: no such directory to write the backup into`,
          );
        }
        const started = performance.now();
        let historyBytes = 0;
        createPrivateFile(path); // the copy holds what the database holds: owner-only
        try {
          await db.writer.backup(path);
          // The fill history's files the copy lists go beside it, as the live ones do.
          const copy = openConnection(path, { readonly: true });
          try {
            historyBytes = copyHistory(db.path, copy, path);
          } finally {
            copy.close();
          }
          // The key goes beside the copy: a restore needs both, and the copy records the key's id.
          if (keyPath) {
            writeFileSync(keyPath, `${key.key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
          }
        } catch (error) {
          // Neither file existed before: a partial copy or key must not pass for a backup.
          rmSync(path, { force: true });
          rmSync(historyDir(path), { recursive: true, force: true });
          if (keyPath) rmSync(keyPath, { force: true });
          if (!isStorageFull(error)) throw error;
          const code = (error as { code?: string }).code;
          throw new CliError(
            `backup to ${path} failed: the disk holding it is full (${code}); the partial copy was removed and the database is unchanged`,
          );
        }
        const seconds = (performance.now() - started) / 1000;
        const from = describeSource(key.source);
        print(
          options,
          {
            path,
            key_path: keyPath,
            key_id: key.id,
            key_source: from,
            history_path: historyBytes > 0 ? historyDir(path) : null,
            history_bytes: historyBytes,
            seconds,
          },
          () =>
            (historyBytes > 0
              ? `fill history (${(historyBytes / 1e6).toFixed(1)} MB) copied to ${historyDir(path)}\n`
              : "") +
            (keyPath
              ? `backed up to ${path} in ${seconds.toFixed(2)} s; installation key (id ${key.id}) written to ${keyPath} (mode 0600): keep the two together, and as private as the key itself`
              : `backed up to ${path} in ${seconds.toFixed(2)} s without the installation key: it lives in ${from} (id ${key.id}), and without it the copy's webhook secrets cannot be decrypted`),
        );
      }),
    );
}
