import { existsSync, readFileSync } from "node:fs";
import type { Command } from "commander";
import { keyId } from "../../src/installation/key";
import { restoreDatabase } from "../../src/replication/restore";
import { parseSecretKey, SECRET_KEY_ENV } from "../../src/webhooks/secrets";
import { type CommonOptions, configFrom, print, withDbOption } from "../context";
import { must } from "../errors";

interface RestoreOptions extends CommonOptions {
  from: string;
  timestamp?: string;
  force?: boolean;
}

/** `restore --from URL`: a database back from its Litestream replica, and the key it needs. */
export function registerRestore(program: Command): void {
  withDbOption(program.command("restore"))
    .description("restore the database (--db) from a Litestream replica (s3:// or file://)")
    .requiredOption("--from <url>", "the replica URL, as given to serve --replicate")
    .option("--timestamp <time>", "restore the database as it was at this time (point in time)")
    .option("--force", "replace an existing database (stop the server first)")
    .option("--json", "print JSON")
    .action(async (options: RestoreOptions) => {
      const config = configFrom(options);
      const restored = must(
        await restoreDatabase({
          from: options.from,
          dbPath: config.dbPath,
          timestamp: options.timestamp,
          force: options.force ?? false,
        }),
      );
      const present = presentKeyId(restored.keyPath);
      const keyReady =
        restored.keyId === null || restored.secretsStored === 0 || present === restored.keyId;
      print(
        options,
        {
          path: restored.path,
          seconds: restored.seconds,
          key_id: restored.keyId,
          secrets_stored: restored.secretsStored,
          key_path: restored.keyPath,
          key_present: keyReady,
        },
        () =>
          [
            `restored ${restored.path} from ${options.from} in ${restored.seconds.toFixed(2)} s`,
            restored.secretsStored === 0
              ? "it stores no webhook secret: any installation key will do"
              : keyReady
                ? `installation key id ${restored.keyId} found; smartmoney serve can start now`
                : `it needs installation key id ${restored.keyId ?? "(unrecorded)"}, which the replica does not carry: put that key at ${restored.keyPath} (mode 0600) or set ${SECRET_KEY_ENV}`,
          ].join("\n"),
      );
    });
}

/** The id of the key a start would use, without creating one. */
function presentKeyId(path: string): string | null {
  const text = process.env[SECRET_KEY_ENV] || (existsSync(path) ? readFileSync(path, "utf8") : "");
  const parsed = parseSecretKey(text);
  return parsed.ok ? keyId(parsed.value) : null;
}
